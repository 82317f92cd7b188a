package restserver

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/planner"
)

// The route table of docs/rest.md is the one namespace.Ops and planner.Ops
// make: every route with its operation, methods and role, nothing more,
// nothing less. And docs/flight.md names every action.
func TestTheDocsRouteTablesAreTheOpsTables(t *testing.T) {
	type row struct{ methods, path, name, role string }
	want := map[string]row{}
	add := func(name, path string, write, admin bool) {
		r := row{"GET, POST", "/v1/" + path, name, "read"}
		if write {
			r.methods, r.role = "POST", "write"
		}
		if admin {
			r.role = "admin"
		}
		want[name] = r
	}
	for _, o := range namespace.Ops {
		add(o.Name, o.Path, o.Write, o.Admin)
	}
	for _, o := range planner.Ops {
		add(o.Name, "namespace/{id}/"+o.Path, o.Write, false)
	}

	raw, err := os.ReadFile("../../docs/rest.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile("^\\| (GET, POST|POST) \\| `([^`]+)` \\| ([A-Za-z]+)[^|]* \\| (read|write|admin) \\|$")
	got := map[string]row{}
	for _, l := range strings.Split(string(raw), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			if _, dup := got[m[3]]; dup {
				t.Errorf("docs/rest.md lists %s twice", m[3])
			}
			got[m[3]] = row{m[1], m[2], m[3], m[4]}
		}
	}
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("docs/rest.md has no route for %s (%s %s, %s)", name, w.methods, w.path, w.role)
		} else if g != w {
			t.Errorf("docs/rest.md: %+v, the ops tables say %+v", g, w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/rest.md has a route for %s, which no ops table has", name)
		}
	}

	fl, err := os.ReadFile("../../docs/flight.md")
	if err != nil {
		t.Fatal(err)
	}
	words := strings.FieldsFunc(string(fl), func(r rune) bool { return !unicode.IsLetter(r) })
	for _, o := range namespace.Ops {
		if o.Action && !slices.Contains(words, o.Name) {
			t.Errorf("docs/flight.md does not name the action %s", o.Name)
		}
	}
	for _, o := range planner.Ops {
		if !slices.Contains(words, o.Name) {
			t.Errorf("docs/flight.md does not name the action %s", o.Name)
		}
	}
}

// The routes are the registries' operations and nothing else: every
// operation of namespace.Ops and planner.Ops has its route, with its role,
// and no route serves an operation they do not list.
func TestTheRoutesAreTheRegistry(t *testing.T) {
	type entry struct {
		path  string
		write bool
	}
	want := map[string]entry{}
	for _, o := range namespace.Ops {
		want[o.Name] = entry{o.Path, o.Write}
	}
	for _, o := range planner.Ops {
		want[o.Name] = entry{"namespace/{id}/" + o.Path, o.Write}
	}
	got := map[string]entry{}
	for prefix, routes := range map[string]map[string]route{"namespace/{id}/": namespaceRoutes, "table/{id}/": tableRoutes, "": plainRoutes} {
		for path, rt := range routes {
			if _, dup := got[rt.name]; dup {
				t.Errorf("%s has two routes", rt.name)
			}
			if rt.run == nil {
				t.Errorf("the route of %s runs nothing", rt.name)
			}
			got[rt.name] = entry{prefix + path, rt.write}
		}
	}
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s (%s) has no route", name, w.path)
		} else if g != w {
			t.Errorf("%s is routed as %+v, the registry says %+v", name, g, w)
		}
		rt, _, err := match("/v1/" + strings.ReplaceAll(w.path, "{id}", "a%24b"))
		if err != nil || rt.name != name {
			t.Errorf("/v1/%s matches %q (%v), want %s", w.path, rt.name, err, name)
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("a route %s serves %s, which no registry lists", g.path, name)
		}
	}
}

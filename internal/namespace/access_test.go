package namespace

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/nserror"
)

// op runs operation name of the registry (as every surface does) with
// body as its JSON.
func op(ctx context.Context, s *Service, name string, body any) (any, error) {
	for _, o := range Ops {
		if o.Name == name {
			b, err := json.Marshal(body)
			if err != nil {
				panic(err)
			}
			return o.Run(ctx, s, b, nil)
		}
	}
	panic("no operation " + name)
}

// A principal limited to its grants (role none) reads, writes and lists
// exactly what they give, on every operation of the registry; what it may
// not read is answered as missing, word for word, and a change of the
// grants reaches another server of the catalog within GrantsRecheck.
func TestGrantsDecideWhatAPrincipalSeesAndChanges(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	for _, ns := range []api.ID{id("a"), id("a", "x"), id("b")} {
		must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: ns}))
	}
	e.withVersions(id("a", "t"), 1)
	e.withVersions(id("b", "t"), 1)
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Read}))
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a", "x"}, Group: "etl", Role: auth.Write}))

	ana := auth.WithPrincipal(bg, auth.Principal{Name: "ana", Role: auth.None})
	bo := auth.WithPrincipal(bg, auth.Principal{Name: "bo", Role: auth.None, Groups: []string{"etl"}})
	admin := auth.WithPrincipal(bg, auth.Principal{Name: "root", Role: auth.Admin})

	// hidden: what ana gets for an object of b is what the admin gets for
	// one that does not exist, the id aside.
	hidden := func(what, name string, body func(api.ID) any, ids ...api.ID) {
		t.Helper()
		_, err := op(ana, e.s, name, body(ids[0]))
		_, want := op(admin, e.s, name, body(ids[1]))
		if err == nil || nserror.CodeOf(err) != nserror.CodeOf(want) ||
			strings.ReplaceAll(err.Error(), ids[0].String(), "X") != strings.ReplaceAll(want.Error(), ids[1].String(), "X") {
			t.Errorf("%s: %v; a missing one: %v", what, err, want)
		}
	}
	ns := func(i api.ID) any { return map[string]any{"id": i} }
	hidden("describe b", "DescribeNamespace", ns, id("b"), id("nope"))
	hidden("b exists", "NamespaceExists", ns, id("b"), id("nope"))
	hidden("list b", "ListNamespaces", ns, id("b"), id("nope"))
	hidden("list b's tables", "ListTables", ns, id("b"), id("nope"))
	hidden("describe b$t", "DescribeTable", ns, id("b", "t"), id("b", "nope"))
	hidden("b$t exists", "TableExists", ns, id("b", "t"), id("b", "nope"))
	hidden("b$t's versions", "ListTableVersions", ns, id("b", "t"), id("b", "nope"))
	hidden("b$t's stats", "GetTableStats", ns, id("b", "t"), id("b", "nope"))

	// What ana may read, it reads; the lists leave b out.
	if _, err := op(ana, e.s, "DescribeTable", ns(id("a", "t"))); err != nil {
		t.Fatal(err)
	}
	lists := []struct {
		name string
		id   api.ID
		want []string
	}{
		{"ListNamespaces", id(), []string{"a"}},
		{"ListNamespaces", id("a"), []string{"x"}},
		{"ListTables", id("a"), []string{"t"}},
		{"ListAllTables", nil, []string{"a$t"}},
	}
	for _, l := range lists {
		got, err := op(ana, e.s, l.name, map[string]any{"id": l.id})
		if err != nil {
			t.Fatalf("%s %v: %v", l.name, l.id, err)
		}
		var names []string
		switch r := got.(type) {
		case *api.ListNamespacesResponse:
			names = r.Namespaces
		case *api.ListTablesResponse:
			names = r.Tables
		}
		if !reflect.DeepEqual(names, l.want) {
			t.Errorf("ana: %s %v = %v, want %v", l.name, l.id, names, l.want)
		}
	}

	// Reading is not writing: a reader's change is refused before its
	// request is read. A writer of a$x writing b writes nothing that
	// exists: b's objects answer as missing ones, to it as to the admin.
	denied := []struct {
		who  context.Context
		name string
		body any
		code nserror.Code
	}{
		{ana, "DeclareTable", map[string]any{"id": id("a", "new")}, nserror.PermissionDenied},
		{ana, "DropTable", map[string]any{"id": id("b", "t")}, nserror.PermissionDenied},
		{ana, "CreateNamespace", map[string]any{"id": id("c")}, nserror.PermissionDenied},
		{bo, "DropTable", map[string]any{"id": id("a", "t")}, nserror.TableNotFound},
		{bo, "CreateNamespace", map[string]any{"id": id("c")}, nserror.PermissionDenied},
		{bo, "DeclareTable", map[string]any{"id": id("b", "new")}, nserror.NamespaceNotFound},
		{bo, "DropNamespace", map[string]any{"id": id("b"), "behavior": "cascade"}, nserror.NamespaceNotFound},
		{bo, "CreateTableVersion", map[string]any{"id": id("b", "t"), "version": 2, "manifest_path": "x"}, nserror.TableNotFound},
		{bo, "RenameTable", map[string]any{"id": id("b", "t"), "new_table_name": "u"}, nserror.TableNotFound},
		{bo, "BatchCreateTableVersions", map[string]any{"entries": []any{map[string]any{"id": id("b", "t"), "version": 2, "manifest_path": "x"}}}, nserror.TableNotFound},
		{bo, "BatchCommitTables", map[string]any{"operations": []any{map[string]any{"deregister_table": map[string]any{"id": id("b", "t")}}}}, nserror.TableNotFound},
		{bo, "BatchCommitTables", map[string]any{"operations": []any{}}, nserror.PermissionDenied},
	}
	for _, d := range denied {
		_, err := op(d.who, e.s, d.name, d.body)
		wantCode(t, d.name, err, d.code)
		if d.code == nserror.PermissionDenied && strings.Contains(err.Error(), "b$t") {
			t.Errorf("%s names b$t: %v", d.name, err)
		}
	}
	// The same question of an object of b that exists and of one that
	// does not gets the same answer, word for word.
	for _, name := range []string{"DropTable", "CreateTableVersion", "DescribeTable", "TableExists", "ListTableVersions"} {
		for _, who := range []context.Context{ana, bo} {
			_, e1 := op(who, e.s, name, map[string]any{"id": id("b", "t"), "version": 2, "manifest_path": "x"})
			_, e2 := op(who, e.s, name, map[string]any{"id": id("b", "nope"), "version": 2, "manifest_path": "x"})
			if e1 == nil || e2 == nil || strings.ReplaceAll(e1.Error(), "b$t", "X") != strings.ReplaceAll(e2.Error(), "b$nope", "X") {
				t.Errorf("%s of b$t: %v; of b$nope: %v", name, e1, e2)
			}
		}
	}

	// bo's group writes a$x and nothing else; a leads it there.
	if _, err := op(bo, e.s, "DeclareTable", map[string]any{"id": id("a", "x", "t2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := op(bo, e.s, "DescribeNamespace", ns(id("a"))); nserror.CodeOf(err) != nserror.PermissionDenied {
		t.Errorf("bo describes a, which leads to its grant: %v", err)
	}
	if _, err := op(bo, e.s, "NamespaceExists", ns(id("a"))); err != nil {
		t.Errorf("bo: a exists: %v", err)
	}
	_, err := op(bo, e.s, "DescribeTable", ns(id("a", "t")))
	wantCode(t, "bo describes a$t", err, nserror.TableNotFound)
	got := must(op(bo, e.s, "ListTables", ns(id("a")))).(*api.ListTablesResponse)
	if len(got.Tables) != 0 {
		t.Errorf("bo lists a's tables: %v", got.Tables)
	}

	// The admin may do everything; so may the Go API (no principal).
	if all, trees, err := e.s.Access().Readable(ana); err != nil || all || !reflect.DeepEqual(trees, []api.ID{id("a")}) {
		t.Errorf("Readable(ana) = %v, %v, %v", all, trees, err)
	}

	// Another server of the catalog reads the grants from storage, and a
	// revocation reaches it.
	other := e.open()
	if _, err := op(ana, other, "DescribeTable", ns(id("a", "t"))); err != nil {
		t.Fatalf("the other server: %v", err)
	}
	must(0, e.s.Access().Revoke(bg, auth.Grant{Namespace: []string{"a"}, Principal: "ana"}))
	deadline := time.Now().Add(GrantsRecheck + 5*time.Second)
	for {
		_, err := op(ana, other, "DescribeTable", ns(id("a", "t")))
		if nserror.CodeOf(err) == nserror.PermissionDenied { // no grant is left to it
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the revocation did not reach the other server: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	gs := must(other.Access().Grants(bg))
	if len(gs) != 1 || gs[0].Group != "etl" {
		t.Errorf("the grants left: %v", gs)
	}

	// Bad grants are refused whole.
	for _, g := range []auth.Grant{
		{Namespace: []string{"a"}, Role: auth.Read},
		{Namespace: []string{"a"}, Principal: "p", Group: "g", Role: auth.Read},
		{Namespace: []string{""}, Principal: "p", Role: auth.Read},
		{Namespace: []string{"a"}, Principal: "p", Role: auth.Role(9)},
	} {
		wantCode(t, "grant "+g.String(), e.s.Access().Grant(bg, g), nserror.InvalidInput)
	}
}

// An admin of a namespace manages the grants inside it, through the
// registry's operations, and nothing outside it; a reader manages none.
func TestANamespaceAdminManagesTheGrantsInside(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	for _, ns := range []api.ID{id("a"), id("a", "x"), id("b")} {
		must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: ns}))
	}
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "adm", Role: auth.Admin}))
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"b"}, Principal: "other", Role: auth.Read}))
	adm := auth.WithPrincipal(bg, auth.Principal{Name: "adm", Role: auth.None})
	cy := auth.WithPrincipal(bg, auth.Principal{Name: "cy", Role: auth.None})

	if _, err := op(adm, e.s, "CreateNamespaceGrant", map[string]any{"id": id("a", "x"), "principal": "cy", "role": "write"}); err != nil {
		t.Fatal(err)
	}
	if _, err := op(cy, e.s, "DeclareTable", map[string]any{"id": id("a", "x", "t")}); err != nil {
		t.Fatalf("cy declares in a$x: %v", err)
	}
	_, err := op(adm, e.s, "CreateNamespaceGrant", map[string]any{"id": id("b"), "principal": "cy", "role": "read"})
	wantCode(t, "adm grants on b", err, nserror.NamespaceNotFound)
	_, err = op(adm, e.s, "CreateNamespaceGrant", map[string]any{"id": id(), "principal": "adm", "role": "admin"})
	wantCode(t, "adm grants itself the catalog", err, nserror.PermissionDenied)
	_, err = op(cy, e.s, "ListNamespaceGrants", map[string]any{"id": id("a", "x")})
	wantCode(t, "a writer lists grants", err, nserror.PermissionDenied)
	_, err = op(adm, e.s, "CreateNamespaceGrant", map[string]any{"id": id("a"), "principal": "cy", "role": "none"})
	wantCode(t, "a grant of none", err, nserror.InvalidInput)

	got := must(op(adm, e.s, "ListNamespaceGrants", map[string]any{"id": id("a")})).(*api.ListNamespaceGrantsResponse)
	want := []api.NamespaceGrant{{Namespace: []string{"a"}, Principal: "adm", Role: "admin"}, {Namespace: []string{"a", "x"}, Principal: "cy", Role: "write"}}
	if !reflect.DeepEqual(got.Grants, want) {
		t.Errorf("the grants in a: %+v", got.Grants)
	}
	if _, err := op(adm, e.s, "DeleteNamespaceGrant", map[string]any{"id": id("a", "x"), "principal": "cy"}); err != nil {
		t.Fatal(err)
	}
	_, err = op(cy, e.s, "DeclareTable", map[string]any{"id": id("a", "x", "t2")})
	wantCode(t, "cy after the revocation", err, nserror.PermissionDenied)
	if gs := must(e.s.Access().Grants(bg)); len(gs) != 2 {
		t.Errorf("the grants left: %v", gs)
	}
}

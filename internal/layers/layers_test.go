package layers

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/flightns/flightns/"

// production are the layers of the server's packages, lowest first: a
// package may import only packages of lower layers (siblings may not
// import each other).
var production = [][]string{
	{"nserror", "internal/child", "internal/commitlog", "internal/redislock", "internal/redisurl", "internal/threads", "internal/gzipshare"},
	{"api", "internal/grpcstatus", "objstore", "internal/auth", "internal/audit", "internal/redisproc", "internal/redisstate", "internal/sqlengine"},
	{"client", "internal/lancemanifest", "internal/privateredis", "internal/idempotency", "internal/obs"},
	{"redisclaim", "internal/cleanup"},
	{"manifesttable"},
	{"internal/namespace"},
	{"planner", "internal/repair"},
	{"flightserver", "internal/restserver", "internal/sqlworker"},
	{"internal/console"},
	{"server"},
	{"cmd/flightns"},
}

// machinery measures and tests: it may import anything, and nothing of
// production may import it.
var machinery = []string{
	"internal/minioproc", "internal/s3proxy", "internal/testutil/nstest", "internal/testutil/redistest", "internal/testutil/s3test", "internal/testutil/oidctest", "internal/testutil/configtest", "internal/testutil/ssetest", "internal/testutil/flighttest",
	"bench", "cmd/flightns-bench", "tests/reliability", "tests/deploy", "internal/tools/rootfs", "internal/layers",
}

var update = flag.Bool("update", false, "rewrite the import graph in docs/architecture.md")

type pkg struct {
	ImportPath string
	Imports    []string
}

// graph is every package of the module with its imports of the module
// (test files excluded), by the build with the duckdb_arrow tag.
func graph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "duckdb_arrow", "-json", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		var own []string
		for _, imp := range p.Imports {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				own = append(own, rest)
			}
		}
		g[name] = own
	}
	return g
}

func layerOf(name string) int {
	for i, l := range production {
		if slices.Contains(l, name) {
			return i
		}
	}
	return -1
}

func TestNothingImportsUpward(t *testing.T) {
	for name, imports := range graph(t) {
		at := layerOf(name)
		if at < 0 {
			if !slices.Contains(machinery, name) {
				t.Errorf("package %s has no layer: add it to production or machinery in internal/layers", name)
			}
			continue
		}
		for _, imp := range imports {
			switch to := layerOf(imp); {
			case slices.Contains(machinery, imp):
				t.Errorf("%s (production) imports %s (test and measuring machinery)", name, imp)
			case to < 0:
				t.Errorf("%s imports %s, which has no layer", name, imp)
			case to >= at:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", name, at, imp, to)
			}
		}
	}
}

// TestTheArchitectureDocDrawsTheRealGraph keeps the graph between the
// markers in docs/architecture.md equal to the real one.
func TestTheArchitectureDocDrawsTheRealGraph(t *testing.T) {
	const path, begin, end = "../../docs/architecture.md", "<!-- import graph: begin -->\n", "<!-- import graph: end -->\n"
	g := graph(t)
	var b strings.Builder
	b.WriteString(begin + "```\n")
	for i := len(production) - 1; i >= 0; i-- {
		for _, name := range production[i] {
			imports := slices.Clone(g[name])
			slices.Sort(imports)
			arrow := "→ " + strings.Join(imports, ", ")
			if len(imports) == 0 {
				arrow = "(imports nothing of flightns)"
			}
			fmt.Fprintf(&b, "%-2d %-22s %s\n", i, name, arrow)
		}
	}
	b.WriteString("```\n" + end)
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", path, strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	want := s[:i] + b.String() + s[j+len(end):]
	if want == s {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the import graph in %s is not the real one; go test ./internal/layers -update rewrites it:\n%s", path, b.String())
}

package namespace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

func TestNamespaceLifecycle(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod"), Properties: api.Properties{"owner": "ana"}}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod", "sales")}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("dev")}))

	_, err := s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod")})
	wantCode(t, "creating an existing namespace", err, nserror.NamespaceAlreadyExists)
	_, err = s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("nope", "x")})
	wantCode(t, "creating inside a missing namespace", err, nserror.NamespaceNotFound)
	_, err = s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod"), Mode: "bogus"})
	wantCode(t, "an unknown mode", err, nserror.InvalidInput)

	got := must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod"), Mode: "exist_ok", Properties: api.Properties{"owner": "other"}}))
	if got.Properties["owner"] != "ana" {
		t.Fatalf("ExistOk returned %v, want the existing properties", got.Properties)
	}
	_, err = s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod"), Mode: "Overwrite"})
	wantCode(t, "overwriting a non-empty namespace", err, nserror.NamespaceNotEmpty)
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("dev"), Mode: "OVERWRITE", Properties: api.Properties{"tier": "2"}}))
	if d := must(s.DescribeNamespace(ctx, api.DescribeNamespaceRequest{ID: id("dev")})); d.Properties["tier"] != "2" {
		t.Fatalf("after overwrite: %v", d.Properties)
	}

	if d := must(s.DescribeNamespace(ctx, api.DescribeNamespaceRequest{ID: id("prod")})); d.Properties["owner"] != "ana" {
		t.Fatalf("describe: %v", d.Properties)
	}
	if d := must(s.DescribeNamespace(ctx, api.DescribeNamespaceRequest{ID: id()})); d.Properties == nil {
		t.Fatal("the root has no properties map")
	}
	_, err = s.DescribeNamespace(ctx, api.DescribeNamespaceRequest{ID: id("gone")})
	wantCode(t, "describing a missing namespace", err, nserror.NamespaceNotFound)
	if err := s.NamespaceExists(ctx, api.NamespaceExistsRequest{ID: id("prod", "sales")}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "exists of a missing namespace", s.NamespaceExists(ctx, api.NamespaceExistsRequest{ID: id("prod", "x")}), nserror.NamespaceNotFound)

	root := must(s.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id()}))
	if !slices.Equal(root.Namespaces, []string{"dev", "prod"}) || root.PageToken != "" {
		t.Fatalf("root children: %+v", root)
	}
	kids := must(s.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id("prod")}))
	if !slices.Equal(kids.Namespaces, []string{"sales"}) {
		t.Fatalf("children of prod: %+v", kids)
	}
	_, err = s.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id("gone")})
	wantCode(t, "listing a missing namespace", err, nserror.NamespaceNotFound)

	_, err = s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("prod")})
	wantCode(t, "dropping a non-empty namespace (Restrict)", err, nserror.NamespaceNotEmpty)
	_, err = s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("gone")})
	wantCode(t, "dropping a missing namespace (Fail)", err, nserror.NamespaceNotFound)
	must(s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("gone"), Mode: "Skip"}))
	_, err = s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id()})
	wantCode(t, "dropping the root", err, nserror.InvalidInput)
	must(s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("dev")}))
	wantCode(t, "exists after drop", s.NamespaceExists(ctx, api.NamespaceExistsRequest{ID: id("dev")}), nserror.NamespaceNotFound)
	// A re-created namespace starts empty.
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("dev")}))
	must(s.DropNamespace(ctx, api.DropNamespaceRequest{ID: id("dev")}))
}

func TestListingPagesEveryEdge(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		must(e.s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id(n)}))
	}
	cases := []struct {
		token string
		limit *int
		want  []string
		next  string
	}{
		{"", nil, []string{"a", "b", "c", "d", "e"}, ""},
		{"", ptr(0), []string{"a", "b", "c", "d", "e"}, ""},
		{"", ptr(2), []string{"a", "b"}, "b"},
		{"b", ptr(2), []string{"c", "d"}, "d"},
		{"d", ptr(2), []string{"e"}, ""},
		{"e", ptr(2), []string{}, ""},
		{"zzz", nil, []string{}, ""},
		{"", ptr(5), []string{"a", "b", "c", "d", "e"}, ""},
		{"", ptr(10), []string{"a", "b", "c", "d", "e"}, ""},
	}
	for _, c := range cases {
		got := must(e.s.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id(), PageToken: c.token, Limit: c.limit}))
		if len(got.Namespaces) != len(c.want) || (len(c.want) > 0 && !slices.Equal(got.Namespaces, c.want)) || got.PageToken != c.next {
			t.Errorf("token %q limit %v: got %v next %q; want %v next %q", c.token, c.limit, got.Namespaces, got.PageToken, c.want, c.next)
		}
	}
	_, err := e.s.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id(), Limit: ptr(-1)})
	wantCode(t, "a negative limit", err, nserror.InvalidInput)
	// Following tokens from the first page reaches everything exactly once.
	var all []string
	token := ""
	for {
		p := must(e.s.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id(), PageToken: token, Limit: ptr(2)}))
		all = append(all, p.Namespaces...)
		if p.PageToken == "" {
			break
		}
		token = p.PageToken
	}
	if !slices.Equal(all, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("following tokens: %v", all)
	}
}

func TestBadIDsAreInvalidInput(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	long := make([]string, api.MaxDepth+1)
	for i := range long {
		long[i] = "n"
	}
	for _, bad := range []api.ID{id(""), id("a", ""), id("a$b"), id("tab\tname"), id(".."), api.ID(long), id(string(make([]byte, api.MaxNameLen+1)))} {
		_, err := e.s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: bad})
		wantCode(t, "create "+bad.String(), err, nserror.InvalidInput)
		_, err = e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: bad})
		wantCode(t, "declare "+bad.String(), err, nserror.InvalidInput)
	}
	_, err := e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: id()})
	wantCode(t, "declaring the root as a table", err, nserror.InvalidInput)
	if n, _ := e.rdb.HLen(ctx, string(e.s.k.Obj())).Result(); n != 0 {
		t.Fatalf("bad ids indexed %d objects", n)
	}
}

// Properties are bounded (count, key, value and total size) and a manifest
// size is a manifest's: 0 or one that disagrees with the staged object is
// refused; nothing refused is written.
func TestPropertiesAndManifestSizesAreBounded(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	many := api.Properties{}
	for i := range MaxProperties + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	wide := api.Properties{}
	for i := range 5 {
		wide[fmt.Sprintf("k%d", i)] = strings.Repeat("x", MaxPropertyValue)
	}
	for name, p := range map[string]api.Properties{
		"too many":        many,
		"a long key":      {strings.Repeat("k", MaxPropertyKey+1): "v"},
		"a long value":    {"k": strings.Repeat("v", MaxPropertyValue+1)},
		"too much in all": wide,
		"an empty key":    {"": "v"},
	} {
		_, err := s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("n"), Properties: p})
		wantCode(t, "a namespace with "+name, err, nserror.InvalidInput)
		_, err = s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("t"), Properties: p})
		wantCode(t, "a table with "+name, err, nserror.InvalidInput)
	}
	if l := must(s.ListNamespaces(ctx, api.ListNamespacesRequest{})); len(l.Namespaces) != 0 {
		t.Fatalf("refused namespaces were written: %v", l.Namespaces)
	}
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("n"), Properties: api.Properties{"owner": strings.Repeat("a", MaxPropertyValue)}}))

	loc := e.withVersions(id("t"), 0)
	for _, size := range []int64{0, -1, 3} {
		_, err := s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("t"), Version: 1, ManifestPath: e.stage(loc, 1, "four"), ManifestSize: &size})
		wantCode(t, fmt.Sprintf("manifest_size %d for 4 bytes", size), err, nserror.InvalidInput)
	}
	if e.final(loc, 1) != "" {
		t.Fatal("a refused version reached its final path")
	}
	four := int64(4)
	must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("t"), Version: 1, ManifestPath: e.stage(loc, 1, "four"), ManifestSize: &four}))
}

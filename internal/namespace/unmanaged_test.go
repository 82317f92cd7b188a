package namespace

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// TestUnmanagedCatalogReadsVersionsFromStorage: an Unmanaged catalog
// answers managed_versioning false, and every version read follows what
// Lance committed to storage by itself.
func TestUnmanagedCatalogReadsVersionsFromStorage(t *testing.T) {
	e := newTenv(t)
	// A catalog of its own needs a root of its own.
	objs, err := objstore.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e.objs = objs
	s, err := Open(context.Background(), Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog + "u", Logger: quiet, Unmanaged: true, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod")}))
	d := must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("prod", "t")}))
	if d.ManagedVersioning {
		t.Fatal("DeclareTable of an unmanaged catalog says managed_versioning")
	}
	loc := strings.TrimPrefix(d.Location, s.root.base+"/")
	desc := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("prod", "t")}))
	if desc.ManagedVersioning || desc.Version != nil || !*desc.IsOnlyDeclared {
		t.Fatalf("a declared table: %+v", desc)
	}
	if l := must(s.ListTables(ctx, api.ListTablesRequest{ID: id("prod"), IncludeDeclared: ptr(false)})); len(l.Tables) != 0 {
		t.Fatalf("tables with data before any commit: %v", l.Tables)
	}
	_, err = s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("prod", "t")})
	wantCode(t, "the latest version of an empty table", err, nserror.TableVersionNotFound)

	// Lance commits versions 1..3 itself, then leaves a staging manifest
	// and its version hint around.
	for v := uint64(1); v <= 3; v++ {
		if err := e.objs.Put(ctx, lancemanifest.Dir(loc).Manifest(lancemanifest.V2, v), []byte{byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{lancemanifest.StagingPath(lancemanifest.Dir(loc).Manifest(lancemanifest.V2, 4)), loc + "/_versions/latest_version_hint.json"} {
		if err := e.objs.Put(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	desc = must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("prod", "t")}))
	if desc.Version == nil || *desc.Version != 3 || *desc.IsOnlyDeclared {
		t.Fatalf("after three commits by Lance: %+v", desc)
	}
	if l := must(s.ListTables(ctx, api.ListTablesRequest{ID: id("prod"), IncludeDeclared: ptr(false)})); len(l.Tables) != 1 {
		t.Fatalf("tables with data: %v", l.Tables)
	}
	if l := must(s.ListAllTables(ctx, api.ListTablesRequest{IncludeDeclared: ptr(false)})); len(l.Tables) != 1 {
		t.Fatalf("all tables with data: %v", l.Tables)
	}
	v2 := must(s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("prod", "t"), Version: ptr(int64(2))}))
	if v2.Version.Version != 2 || v2.Version.ManifestPath != s.root.objectPath(lancemanifest.Dir(loc).Manifest(lancemanifest.V2, 2)) {
		t.Fatalf("version 2: %+v", v2.Version)
	}
	_, err = s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("prod", "t"), Version: ptr(int64(4))})
	wantCode(t, "a staged version", err, nserror.TableVersionNotFound)
	page := must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("prod", "t"), Descending: ptr(true), Limit: ptr(2)}))
	if len(page.Versions) != 2 || page.Versions[0].Version != 3 || page.Versions[1].Version != 2 || page.PageToken != "2" {
		t.Fatalf("the newest two: %+v", page)
	}
	page = must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("prod", "t"), Descending: ptr(true), PageToken: page.PageToken}))
	if len(page.Versions) != 1 || page.Versions[0].Version != 1 || page.PageToken != "" {
		t.Fatalf("the rest: %+v", page)
	}
	// A commit through the claim protocol follows Lance's own commits.
	e.s = s
	staged := e.stage(loc, 4, "four")
	if r := must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "t"), Version: 4, ManifestPath: staged})); r.Version.Version != 4 {
		t.Fatalf("commit: %+v", r.Version)
	}
	if all := must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("prod", "t")})); len(all.Versions) != 4 {
		t.Fatalf("versions: %+v", all.Versions)
	}
}

// TestEmptyListsAreArrays: Lance's client fails on a null list, so an
// empty listing encodes as [].
func TestEmptyListsAreArrays(t *testing.T) {
	e := newTenv(t)
	ctx := context.Background()
	must(e.s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("leaf")}))
	ns := must(e.s.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id("leaf")}))
	tables := must(e.s.ListTables(ctx, api.ListTablesRequest{ID: id("leaf")}))
	all := must(e.s.ListAllTables(ctx, api.ListTablesRequest{}))
	for _, v := range []any{ns, tables, all} {
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), "null") {
			t.Fatalf("an empty listing encodes as %s", b)
		}
	}
}

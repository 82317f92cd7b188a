package restserver

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/namespace"
)

// Table ids in paths as Lance sends them: joined with $ and escaped.
const (
	pRoot   = "/v1/namespace/%24"
	pProd   = "/v1/namespace/prod"
	pSales  = "/v1/namespace/prod%24sales"
	pOrders = "/v1/table/prod%24sales%24orders"
	dq      = "?delimiter=%24"
)

// keyOf is the location key (relative to the root) of a table location URI.
func (s *server) keyOf(location string) string {
	s.t.Helper()
	key, ok := strings.CutPrefix(location, "file://"+s.Root+"/")
	if !ok {
		s.t.Fatalf("location %q is not under the root %s", location, s.Root)
	}
	return key
}

// stage writes a staging manifest for version v of the table at key and
// returns its object-store path: the form Lance sends (no scheme, no
// leading slash).
func (s *server) stage(key string, v uint64, content string) string {
	s.t.Helper()
	k := lancemanifest.StagingPath(lancemanifest.Dir(key).Manifest(lancemanifest.V2, v))
	if err := s.Objects.Put(context.Background(), k, []byte(content)); err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimPrefix(s.Root, "/") + "/" + k
}

// declareOrders makes namespaces prod and prod$sales and declares
// prod$sales$orders; it returns the table's location key.
func (s *server) declareOrders() string {
	s.t.Helper()
	ok(s.t, "create prod", s.post(pProd+"/create"+dq, map[string]any{"id": []string{"prod"}}))
	ok(s.t, "create prod$sales", s.post(pSales+"/create"+dq, nil))
	var d api.DeclareTableResponse
	ok(s.t, "declare", s.post(pOrders+"/declare"+dq, map[string]any{"id": []string{"prod", "sales", "orders"}})).decode(s.t, &d)
	return s.keyOf(d.Location)
}

// commit commits version v of the table at key through version/create.
func (s *server) commit(path, key string, v uint64, content string) api.TableVersion {
	s.t.Helper()
	var r api.CreateTableVersionResponse
	ok(s.t, "version/create", s.post(path+"/version/create"+dq, map[string]any{"version": v,
		"manifest_path": s.stage(key, v, content), "manifest_size": len(content), "naming_scheme": "V2"})).decode(s.t, &r)
	return *r.Version
}

func TestNamespaceRoutes(t *testing.T) {
	s := startServer(t)
	var cr api.CreateNamespaceResponse
	ok(t, "create", s.post(pProd+"/create"+dq, map[string]any{"id": []string{"prod"}, "properties": map[string]string{"owner": "ops"}})).decode(t, &cr)
	if cr.Properties["owner"] != "ops" {
		t.Fatalf("create: %+v", cr)
	}
	ok(t, "create nested, without a body id", s.post(pSales+"/create"+dq, nil))
	ok(t, "create with mode ExistOk", s.post(pProd+"/create", map[string]any{"mode": "exist_ok"}))
	ok(t, "create with another delimiter", s.post("/v1/namespace/prod.eu/create?delimiter=.", nil))

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		var l api.ListNamespacesResponse
		ok(t, "list the root", s.do(method, pRoot+"/list"+dq, nil)).decode(t, &l)
		if !slices.Equal(l.Namespaces, []string{"prod"}) {
			t.Fatalf("%s list: %+v", method, l)
		}
	}
	var l api.ListNamespacesResponse
	ok(t, "list a page", s.do(http.MethodGet, pProd+"/list"+dq+"&limit=1", nil)).decode(t, &l)
	if !slices.Equal(l.Namespaces, []string{"eu"}) || l.PageToken != "eu" {
		t.Fatalf("page 1: %+v", l)
	}
	ok(t, "list the next page", s.do(http.MethodGet, pProd+"/list"+dq+"&limit=1&page_token=eu", nil)).decode(t, &l)
	if !slices.Equal(l.Namespaces, []string{"sales"}) || l.PageToken != "" {
		t.Fatalf("page 2: %+v", l)
	}
	r := ok(t, "list a leaf", s.do(http.MethodGet, pSales+"/list"+dq, nil))
	if !strings.Contains(string(r.body), `"namespaces":[]`) {
		t.Fatalf("a leaf's list must be an empty array, not null: %s", r.body)
	}
	var d api.DescribeNamespaceResponse
	ok(t, "describe", s.post(pProd+"/describe"+dq, map[string]any{"id": []string{"prod"}})).decode(t, &d)
	if d.Properties["owner"] != "ops" {
		t.Fatalf("describe: %+v", d)
	}
	if r := ok(t, "exists", s.post(pSales+"/exists"+dq, nil)); len(r.body) != 0 {
		t.Fatalf("exists answers no body, got %q", r.body)
	}
	ok(t, "drop", s.post("/v1/namespace/prod%24eu/drop"+dq, map[string]any{"mode": "Fail", "behavior": "Restrict"}))
	ok(t, "drop a missing one with mode Skip", s.post("/v1/namespace/prod%24eu/drop"+dq, map[string]any{"mode": "Skip"}))
	wantError(t, "exists after the drop", s.post("/v1/namespace/prod%24eu/exists"+dq, nil), 1, 404)
	ok(t, "create a table to cascade", s.post("/v1/table/prod%24sales%24t/declare"+dq, nil))
	ok(t, "drop with behavior Cascade", s.post(pProd+"/drop"+dq, map[string]any{"behavior": "Cascade"}))
	ok(t, "the root alone remains", s.do(http.MethodGet, pRoot+"/list"+dq, nil)).decode(t, &l)
	if len(l.Namespaces) != 0 {
		t.Fatalf("after the cascade: %+v", l)
	}
}

func TestTableRoutes(t *testing.T) {
	s := startServer(t)
	key := s.declareOrders()
	if !strings.Contains(key, "_prod$sales$orders") {
		t.Fatalf("location key %q", key)
	}
	var ce api.DeclareTableResponse
	ok(t, "create-empty (deprecated)", s.post("/v1/table/prod%24sales%24legacy/create-empty"+dq, nil)).decode(t, &ce)
	if ce.Location == "" {
		t.Fatalf("create-empty: %+v", ce)
	}

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		var lt api.ListTablesResponse
		ok(t, "list tables", s.do(method, pSales+"/table/list"+dq, nil)).decode(t, &lt)
		if !slices.Equal(lt.Tables, []string{"legacy", "orders"}) {
			t.Fatalf("%s table/list: %+v", method, lt)
		}
	}
	var lt api.ListTablesResponse
	ok(t, "list tables with data only", s.do(http.MethodGet, pSales+"/table/list"+dq+"&include_declared=false", nil)).decode(t, &lt)
	if len(lt.Tables) != 0 {
		t.Fatalf("include_declared=false: %+v", lt)
	}
	ok(t, "list tables, a page", s.do(http.MethodGet, pSales+"/table/list"+dq+"&limit=1", nil)).decode(t, &lt)
	if !slices.Equal(lt.Tables, []string{"legacy"}) || lt.PageToken != "legacy" {
		t.Fatalf("limit=1: %+v", lt)
	}
	for _, p := range []string{"/v1/table" + dq, "/v1/table/" + dq} {
		ok(t, "list all tables", s.do(http.MethodGet, p, nil)).decode(t, &lt)
		if !slices.Equal(lt.Tables, []string{"prod$sales$legacy", "prod$sales$orders"}) {
			t.Fatalf("%s: %+v", p, lt)
		}
	}

	var dt api.DescribeTableResponse
	ok(t, "describe a declared table", s.post(pOrders+"/describe"+dq+"&with_table_uri=true", map[string]any{"id": []string{"prod", "sales", "orders"}})).decode(t, &dt)
	if dt.TableURI == "" || dt.TableURI != dt.Location || !dt.ManagedVersioning || dt.Version != nil || dt.IsOnlyDeclared == nil || !*dt.IsOnlyDeclared {
		t.Fatalf("describe: %+v", dt)
	}
	if r := ok(t, "exists", s.post(pOrders+"/exists"+dq, nil)); len(r.body) != 0 {
		t.Fatalf("exists answers no body, got %q", r.body)
	}

	// Versions.
	v1 := s.commit(pOrders, key, 1, "manifest one")
	final := strings.TrimPrefix(s.Root, "/") + "/" + lancemanifest.Dir(key).Manifest(lancemanifest.V2, 1)
	if v1.Version != 1 || v1.ManifestPath != final {
		t.Fatalf("version/create replied %+v; want the final object-store path %s", v1, final)
	}
	if b, err := os.ReadFile("/" + v1.ManifestPath); err != nil || string(b) != "manifest one" {
		t.Fatalf("the final manifest is not in storage at the reply: %q, %v", b, err)
	}
	s.commit(pOrders, key, 2, "manifest two")
	s.commit(pOrders, key, 3, "manifest three")
	var lv api.ListTableVersionsResponse
	ok(t, "version/list as Lance asks for the latest", s.post(pOrders+"/version/list"+dq+"&limit=1&descending=true", "null")).decode(t, &lv)
	if len(lv.Versions) != 1 || lv.Versions[0].Version != 3 || lv.PageToken == "" {
		t.Fatalf("latest: %+v", lv)
	}
	ok(t, "version/list, all, by GET", s.do(http.MethodGet, pOrders+"/version/list"+dq, nil)).decode(t, &lv)
	if len(lv.Versions) != 3 || lv.Versions[0].Version != 1 || lv.PageToken != "" {
		t.Fatalf("all: %+v", lv)
	}
	ok(t, "version/list, the next page", s.post(pOrders+"/version/list"+dq+"&limit=1&descending=true&page_token=3", nil)).decode(t, &lv)
	if len(lv.Versions) != 1 || lv.Versions[0].Version != 2 {
		t.Fatalf("page 2: %+v", lv)
	}
	var dv api.DescribeTableVersionResponse
	ok(t, "version/describe", s.post(pOrders+"/version/describe"+dq, map[string]any{"version": 2})).decode(t, &dv)
	if dv.Version.Version != 2 || !strings.HasSuffix(dv.Version.ManifestPath, lancemanifest.ManifestName(lancemanifest.V2, 2)) {
		t.Fatalf("describe version 2: %+v", dv.Version)
	}
	ok(t, "version/describe, latest", s.post(pOrders+"/version/describe"+dq, nil)).decode(t, &dv)
	if dv.Version.Version != 3 {
		t.Fatalf("describe latest: %+v", dv.Version)
	}
	ok(t, "describe with data", s.post(pOrders+"/describe"+dq, nil)).decode(t, &dt)
	if dt.Version == nil || *dt.Version != 3 || *dt.IsOnlyDeclared {
		t.Fatalf("describe: %+v", dt)
	}
	ok(t, "exists at a version", s.post(pOrders+"/exists"+dq, map[string]any{"version": 2}))
	var del api.BatchDeleteTableVersionsResponse
	ok(t, "version/delete", s.post(pOrders+"/version/delete"+dq, map[string]any{"ranges": []map[string]int{{"start_version": 1, "end_version": 2}}})).decode(t, &del)
	if del.DeletedCount != 1 {
		t.Fatalf("version/delete: %+v", del)
	}

	// Rename, register, deregister, drop.
	ok(t, "rename", s.post(pOrders+"/rename"+dq, map[string]any{"new_table_name": "orders2"}))
	ok(t, "rename across namespaces", s.post("/v1/table/prod%24sales%24orders2/rename"+dq,
		map[string]any{"new_table_name": "orders3", "new_namespace_id": []string{"prod"}}))
	ok(t, "describe after the renames", s.post("/v1/table/prod%24orders3/describe"+dq, nil)).decode(t, &dt)
	if *dt.Version != 3 || s.keyOf(dt.Location) != key {
		t.Fatalf("renamed: %+v", dt)
	}
	var dr api.DropTableResponse
	ok(t, "deregister", s.post("/v1/table/prod%24orders3/deregister"+dq, nil)).decode(t, &dr)
	if !slices.Equal(dr.ID, []string{"prod", "orders3"}) || s.keyOf(dr.Location) != key {
		t.Fatalf("deregister: %+v", dr)
	}
	var rr api.RegisterTableResponse
	ok(t, "register", s.post("/v1/table/prod%24back/register"+dq, map[string]any{"location": key})).decode(t, &rr)
	ok(t, "describe after register", s.post("/v1/table/prod%24back/describe"+dq, nil)).decode(t, &dt)
	if *dt.Version != 3 {
		t.Fatalf("registered: %+v", dt)
	}
	ok(t, "drop", s.post("/v1/table/prod%24back/drop"+dq, nil)).decode(t, &dr)
	if _, err := os.Stat(filepath.Join(s.Root, key)); !os.IsNotExist(err) {
		t.Fatalf("drop left the table's data: %v", err)
	}
	wantError(t, "describe after drop", s.post("/v1/table/prod%24back/describe"+dq, nil), 4, 404)
}

func TestMultiTableRoutes(t *testing.T) {
	s := startServer(t)
	key := s.declareOrders()
	var d api.DeclareTableResponse
	ok(t, "declare", s.post("/v1/table/prod%24sales%24items/declare"+dq, nil)).decode(t, &d)
	items := s.keyOf(d.Location)
	var bc api.BatchCreateTableVersionsResponse
	ok(t, "batch-create", s.post("/v1/table/version/batch-create"+dq, map[string]any{"entries": []map[string]any{
		{"id": []string{"prod", "sales", "orders"}, "version": 1, "manifest_path": s.stage(key, 1, "o1"), "naming_scheme": "V2"},
		{"id": []string{"prod", "sales", "items"}, "version": 1, "manifest_path": s.stage(items, 1, "i1")},
	}})).decode(t, &bc)
	if len(bc.Versions) != 2 || bc.TransactionID == "" || bc.Versions[1].Version != 1 {
		t.Fatalf("batch-create: %+v", bc)
	}
	var cm api.BatchCommitTablesResponse
	ok(t, "batch-commit", s.post("/v1/table/batch-commit"+dq, map[string]any{"operations": []map[string]any{
		{"declare_table": map[string]any{"id": []string{"prod", "sales", "fresh"}}},
		{"create_table_version": map[string]any{"id": []string{"prod", "sales", "orders"}, "version": 2, "manifest_path": s.stage(key, 2, "o2")}},
		{"delete_table_versions": map[string]any{"id": []string{"prod", "sales", "items"}, "ranges": []map[string]int{{"start_version": 0, "end_version": -1}}}},
	}})).decode(t, &cm)
	if len(cm.Results) != 3 || cm.Results[0].DeclareTable == nil || cm.Results[1].CreateTableVersion.Version.Version != 2 ||
		cm.Results[2].DeleteTableVersions.DeletedCount != 1 {
		t.Fatalf("batch-commit: %+v", cm)
	}
	// All or nothing: a stale version fails the whole batch.
	r := s.post("/v1/table/batch-commit"+dq, map[string]any{"operations": []map[string]any{
		{"declare_table": map[string]any{"id": []string{"prod", "sales", "never"}}},
		{"create_table_version": map[string]any{"id": []string{"prod", "sales", "orders"}, "version": 2, "manifest_path": s.stage(key, 2, "again")}},
	}})
	wantError(t, "a batch with a taken version", r, 14, 409)
	wantError(t, "its declare did not happen", s.post("/v1/table/prod%24sales%24never/exists"+dq, nil), 4, 404)
}

// TestUnmanagedCatalog: tables say managed_versioning false and their
// versions are read from storage, where Lance commits them itself.
func TestUnmanagedCatalog(t *testing.T) {
	s := startServer(t, withConfig(func(c *namespace.Config) { c.Unmanaged = true }))
	key := s.declareOrders()
	var dt api.DescribeTableResponse
	ok(t, "describe", s.post(pOrders+"/describe"+dq, nil)).decode(t, &dt)
	if dt.ManagedVersioning || !*dt.IsOnlyDeclared {
		t.Fatalf("describe: %+v", dt)
	}
	// Lance commits two versions on its own.
	for v := uint64(1); v <= 2; v++ {
		if err := s.Objects.Put(context.Background(), lancemanifest.Dir(key).Manifest(lancemanifest.V2, v), []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	ok(t, "describe", s.post(pOrders+"/describe"+dq, nil)).decode(t, &dt)
	if dt.Version == nil || *dt.Version != 2 {
		t.Fatalf("describe after two commits: %+v", dt)
	}
	var lv api.ListTableVersionsResponse
	ok(t, "version/list", s.post(pOrders+"/version/list"+dq+"&limit=1&descending=true", "null")).decode(t, &lv)
	if len(lv.Versions) != 1 || lv.Versions[0].Version != 2 || lv.PageToken != "2" {
		t.Fatalf("version/list: %+v", lv)
	}
	ok(t, "version/list, next page", s.post(pOrders+"/version/list"+dq+"&limit=1&descending=true&page_token=2", nil)).decode(t, &lv)
	if len(lv.Versions) != 1 || lv.Versions[0].Version != 1 || lv.PageToken != "" {
		t.Fatalf("version/list page 2: %+v", lv)
	}
	var lt api.ListTablesResponse
	ok(t, "list tables with data", s.do(http.MethodGet, pSales+"/table/list"+dq+"&include_declared=false", nil)).decode(t, &lt)
	if !slices.Equal(lt.Tables, []string{"orders"}) {
		t.Fatalf("include_declared=false: %+v", lt)
	}
	// A commit through flightns follows Lance's own.
	if v := s.commit(pOrders, key, 3, "three"); v.Version != 3 {
		t.Fatalf("commit: %+v", v)
	}
	wantError(t, "a version Lance already took", s.post(pOrders+"/version/create"+dq, map[string]any{"version": 2,
		"manifest_path": s.stage(key, 2, "late")}), 14, 409)
	var dv api.DescribeTableVersionResponse
	ok(t, "version/describe", s.post(pOrders+"/version/describe"+dq, map[string]any{"version": 3})).decode(t, &dv)
	if dv.Version.Version != 3 {
		t.Fatalf("version/describe: %+v", dv)
	}
	wantError(t, "version/describe of a missing version", s.post(pOrders+"/version/describe"+dq, map[string]any{"version": 9}), 11, 404)
}

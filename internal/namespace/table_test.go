package namespace

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

func TestTableLifecycle(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod")}))
	d := must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("prod", "orders"), Properties: api.Properties{"k": "v"}}))
	rootDir := e.objs.LocalDir()
	if !regexp.MustCompile(`^file://`+regexp.QuoteMeta(rootDir)+`/[0-9a-f]{8}_prod\$orders$`).MatchString(d.Location) || !d.ManagedVersioning {
		t.Fatalf("declare: %+v", d)
	}
	_, err := s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("prod", "orders")})
	wantCode(t, "declaring an existing table", err, nserror.TableAlreadyExists)
	_, err = s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("prod")})
	wantCode(t, "declaring over a namespace", err, nserror.TableAlreadyExists)
	_, err = s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("nope", "t")})
	wantCode(t, "declaring in a missing namespace", err, nserror.NamespaceNotFound)
	_, err = s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod", "orders")})
	wantCode(t, "a namespace over a table", err, nserror.NamespaceAlreadyExists)

	desc := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("prod", "orders"), WithTableURI: ptr(true)}))
	if desc.Location != d.Location || desc.TableURI != d.Location || !desc.ManagedVersioning || desc.Version != nil ||
		desc.IsOnlyDeclared == nil || !*desc.IsOnlyDeclared || desc.Properties["k"] != "v" || desc.Table != "orders" || !slices.Equal(desc.Namespace, []string{"prod"}) {
		t.Fatalf("describe a declared table: %+v", desc)
	}
	_, err = s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("prod", "nope")})
	wantCode(t, "describing a missing table", err, nserror.TableNotFound)
	if err := s.TableExists(ctx, api.TableExistsRequest{ID: id("prod", "orders")}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "exists of a missing table", s.TableExists(ctx, api.TableExistsRequest{ID: id("prod", "x")}), nserror.TableNotFound)

	// Versions.
	loc := e.locOf(id("prod", "orders"))
	v1 := must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "orders"), Version: 1,
		ManifestPath: e.stage(loc, 1, "m1"), NamingScheme: "V2"}))
	if v1.Version.Version != 1 || v1.Version.ManifestPath != e.s.root.objectPath(lancemanifest.Dir(loc).Manifest(lancemanifest.V2, 1)) ||
		*v1.Version.ManifestSize != 2 || v1.Version.TimestampMillis == nil {
		t.Fatalf("create version 1: %+v", v1.Version)
	}
	if _, err := os.Stat(filepath.Join(rootDir, loc, "_versions", "18446744073709551614.manifest")); err != nil {
		t.Fatalf("the final manifest is not on disk after the reply: %v", err)
	}
	// A relative staging path works as well as an object-store path.
	rel := lancemanifest.StagingPath(lancemanifest.Dir(loc).Manifest(lancemanifest.V2, 2))
	if err := e.objs.Put(ctx, rel, []byte("m2!")); err != nil {
		t.Fatal(err)
	}
	must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "orders"), Version: 2, ManifestPath: rel}))
	_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "orders"), Version: 2, ManifestPath: e.stage(loc, 2, "late")})
	wantCode(t, "a taken version", err, nserror.ConcurrentModification)
	_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "orders"), Version: 5, ManifestPath: e.stage(loc, 5, "gap")})
	wantCode(t, "a version that skips", err, nserror.InvalidInput)
	_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "orders"), Version: 3, ManifestPath: e.stage(loc, 3, "x"), NamingScheme: "V1"})
	wantCode(t, "a naming scheme that does not match", err, nserror.InvalidInput)
	_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "nope"), Version: 1, ManifestPath: "x"})
	wantCode(t, "a version of a missing table", err, nserror.TableNotFound)
	_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("prod", "orders"), Version: 3, ManifestPath: "/etc/passwd"})
	wantCode(t, "a staging path outside the root", err, nserror.InvalidInput)

	desc = must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("prod", "orders")}))
	if desc.Version == nil || *desc.Version != 2 || *desc.IsOnlyDeclared {
		t.Fatalf("describe after commits: %+v", desc)
	}
	dv := must(s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("prod", "orders"), Version: ptr(int64(1))}))
	if dv.Version.Version != 1 || !strings.HasSuffix(dv.Version.ManifestPath, "18446744073709551614.manifest") {
		t.Fatalf("describe version 1: %+v", dv.Version)
	}
	latest := must(s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("prod", "orders")}))
	if latest.Version.Version != 2 {
		t.Fatalf("describe latest: %+v", latest.Version)
	}
	_, err = s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("prod", "orders"), Version: ptr(int64(9))})
	wantCode(t, "describing a missing version", err, nserror.TableVersionNotFound)
	lst := must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("prod", "orders"), Descending: ptr(true), Limit: ptr(1)}))
	if len(lst.Versions) != 1 || lst.Versions[0].Version != 2 || lst.PageToken != "2" {
		t.Fatalf("list desc limit 1: %+v", lst)
	}
	lst = must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("prod", "orders"), Descending: ptr(true), PageToken: lst.PageToken}))
	if len(lst.Versions) != 1 || lst.Versions[0].Version != 1 || lst.PageToken != "" {
		t.Fatalf("list desc page 2: %+v", lst)
	}

	// Listing tables.
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("prod", "empty")}))
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("top")}))
	if got := must(s.ListTables(ctx, api.ListTablesRequest{ID: id("prod")})); !slices.Equal(got.Tables, []string{"empty", "orders"}) {
		t.Fatalf("list tables: %+v", got)
	}
	if got := must(s.ListTables(ctx, api.ListTablesRequest{ID: id("prod"), IncludeDeclared: ptr(false)})); !slices.Equal(got.Tables, []string{"orders"}) {
		t.Fatalf("list tables without declared ones: %+v", got)
	}
	if got := must(s.ListAllTables(ctx, api.ListTablesRequest{})); !slices.Equal(got.Tables, []string{"prod$empty", "prod$orders", "top"}) {
		t.Fatalf("list all tables: %+v", got)
	}
	if got := must(s.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id("prod")})); len(got.Namespaces) != 0 {
		t.Fatalf("tables listed as namespaces: %+v", got)
	}

	// Version records go, data stays.
	del := must(s.Versions().BatchDeleteTableVersions(ctx, api.BatchDeleteTableVersionsRequest{ID: id("prod", "orders"), Ranges: []api.VersionRange{{StartVersion: 1, EndVersion: 2}}}))
	if del.DeletedCount != 1 {
		t.Fatalf("batch delete: %+v", del)
	}
	if e.final(loc, 1) == "" {
		t.Fatal("deleting version 1's record removed its manifest")
	}
	_, err = s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id("prod", "orders"), Version: ptr(int64(1))})
	wantCode(t, "describing a deleted version", err, nserror.TableVersionNotFound)
	if l := must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id("prod", "orders")})); len(l.Versions) == 0 || l.Versions[0].Version == 1 {
		t.Fatalf("versions after describing a deleted one: %+v", l.Versions)
	}
	_, err = s.Versions().BatchDeleteTableVersions(ctx, api.BatchDeleteTableVersionsRequest{ID: id("prod", "orders"), Ranges: []api.VersionRange{{StartVersion: 3, EndVersion: 2}}})
	wantCode(t, "a reversed range", err, nserror.InvalidInput)
	all := must(s.Versions().BatchDeleteTableVersions(ctx, api.BatchDeleteTableVersionsRequest{ID: id("prod", "orders"), Ranges: []api.VersionRange{{StartVersion: 0, EndVersion: -1}}}))
	if all.DeletedCount != 1 {
		t.Fatalf("delete all: %+v", all)
	}
}

func TestRenameKeepsLocationAndVersions(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a")}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("b")}))
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "t")}))
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("b", "taken")}))
	loc := e.locOf(id("a", "t"))
	for v := uint64(1); v <= 3; v++ {
		must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id("a", "t"), Version: int64(v), ManifestPath: e.stage(loc, v, "m")}))
	}
	must(s.RenameTable(ctx, api.RenameTableRequest{ID: id("a", "t"), NewTableName: "t2"}))
	must(s.RenameTable(ctx, api.RenameTableRequest{ID: id("a", "t2"), NewTableName: "moved", NewNamespaceID: &api.ID{"b"}}))
	_, err := s.RenameTable(ctx, api.RenameTableRequest{ID: id("b", "moved"), NewTableName: "taken"})
	wantCode(t, "renaming onto an existing table", err, nserror.TableAlreadyExists)
	_, err = s.RenameTable(ctx, api.RenameTableRequest{ID: id("a", "gone"), NewTableName: "x"})
	wantCode(t, "renaming a missing table", err, nserror.TableNotFound)
	_, err = s.RenameTable(ctx, api.RenameTableRequest{ID: id("b", "moved"), NewTableName: "x", NewNamespaceID: &api.ID{"nope"}})
	wantCode(t, "renaming into a missing namespace", err, nserror.NamespaceNotFound)

	if got := e.locOf(id("b", "moved")); got != loc {
		t.Fatalf("the location moved: %q, was %q", got, loc)
	}
	d := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: id("b", "moved")}))
	if d.Version == nil || *d.Version != 3 {
		t.Fatalf("versions after rename: %+v", d)
	}
	wantCode(t, "the old name", s.TableExists(ctx, api.TableExistsRequest{ID: id("a", "t")}), nserror.TableNotFound)
	// The version rows followed the table in __manifest.
	res := must(s.Table().Query(ctx, `SELECT count(*) FROM table_versions WHERE table_id = 'b$moved'`))
	defer res.Release()
	n := int64(-1)
	if res.Next() {
		n = res.RecordBatch().Column(0).(interface{ Value(int) int64 }).Value(0)
	}
	seq := res.Seq
	if n != 3 {
		t.Fatalf("version rows under the new id at sequence %d: %d, want 3", seq, n)
	}
}

// CreateTableVersion takes a table's location from its cache, checked by
// the claim script: a writer whose cache still holds a table another
// process has deregistered meanwhile is refused (TableNotFound), and no
// version of it is written; once the table is declared again, commits go
// on.
func TestACommitToATableDroppedElsewhereIsRefused(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	must(e.s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("prod")}))
	tid := id("prod", "t")
	loc := e.withVersions(tid, 1) // the writer's cache now holds the table
	other := e.open()
	defer func() { _ = other.Close() }()
	must(other.DeregisterTable(ctx, api.DeregisterTableRequest{ID: tid}))
	_, err := e.s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 2, ManifestPath: e.stage(loc, 2, "after the drop")})
	wantCode(t, "a commit to a table dropped by another process", err, nserror.TableNotFound)
	if got := e.final(loc, 2); got != "" {
		t.Fatalf("version 2 of a dropped table was written: %q", got)
	}
	must(other.DeclareTable(ctx, api.DeclareTableRequest{ID: tid}))
	newLoc := e.locOf(tid)
	v := must(e.s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 1, ManifestPath: e.stage(newLoc, 1, "again")}))
	if v.Version.Version != 1 || e.final(newLoc, 1) != "again" {
		t.Fatalf("the first commit after declaring the table again: %+v, final %q", v.Version, e.final(newLoc, 1))
	}
}

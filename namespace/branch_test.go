//go:build duckdb_arrow

package namespace

import (
	"context"
	"testing"

	"github.com/flightns/flightns/nserror"
)

// A request for a Lance branch other than main never reads or changes
// main's versions: flightns keeps main's chain only, so reads and deletes
// on a branch answer TableBranchNotFound (22) and a commit on a branch is
// Unsupported (0), whichever operation carries it. "main", or no branch,
// is main.
func TestABranchRequestNeverTouchesMain(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	tid := id("t")
	loc := e.withVersions(tid, 0)
	must(s.CreateTableVersion(ctx, CreateTableVersionRequest{ID: tid, Version: 1, Branch: "main", ManifestPath: e.stage(loc, 1, "m1")}))

	// Lance's branches().create: list the branch's versions, then commit
	// the branch's first version (here version 2, main's next).
	_, err := s.ListTableVersions(ctx, ListTableVersionsRequest{ID: tid, Branch: "dev"})
	wantCode(t, "listing a branch's versions", err, nserror.TableBranchNotFound)
	staged := e.stage(loc, 2, "meant for dev")
	_, err = s.CreateTableVersion(ctx, CreateTableVersionRequest{ID: tid, Version: 2, Branch: "dev", ManifestPath: staged})
	wantCode(t, "committing on a branch", err, nserror.Unsupported)
	_, err = s.BatchCreateTableVersions(ctx, BatchCreateTableVersionsRequest{Entries: []CreateTableVersionEntry{
		{ID: tid, Version: 2, Branch: "dev", ManifestPath: staged}}})
	wantCode(t, "committing on a branch in a batch", err, nserror.Unsupported)
	_, err = s.BatchCommitTables(ctx, BatchCommitTablesRequest{Operations: []CommitTableOperation{
		{CreateTableVersion: &CreateTableVersionRequest{ID: tid, Version: 2, Branch: "dev", ManifestPath: staged}}}})
	wantCode(t, "committing on a branch in BatchCommitTables", err, nserror.Unsupported)
	_, err = s.DescribeTableVersion(ctx, DescribeTableVersionRequest{ID: tid, Version: ptr(int64(1)), Branch: "dev"})
	wantCode(t, "describing a branch's version", err, nserror.TableBranchNotFound)
	_, err = s.DescribeTable(ctx, DescribeTableRequest{ID: tid, Branch: "dev"})
	wantCode(t, "describing the table on a branch", err, nserror.TableBranchNotFound)
	_, err = s.BatchDeleteTableVersions(ctx, BatchDeleteTableVersionsRequest{ID: tid, Branch: "dev", Ranges: []VersionRange{{0, -1}}})
	wantCode(t, "deleting a branch's versions", err, nserror.TableBranchNotFound)
	_, err = s.BatchCommitTables(ctx, BatchCommitTablesRequest{Operations: []CommitTableOperation{
		{DeleteTableVersions: &BatchDeleteTableVersionsRequest{ID: tid, Branch: "dev", Ranges: []VersionRange{{0, -1}}}}}})
	wantCode(t, "deleting a branch's versions in BatchCommitTables", err, nserror.TableBranchNotFound)

	// Main is as it was: version 1 only, and version 2 still free for it.
	list := must(s.ListTableVersions(ctx, ListTableVersionsRequest{ID: tid, Branch: "main"}))
	if len(list.Versions) != 1 || list.Versions[0].Version != 1 {
		t.Fatalf("main's versions after the branch requests: %+v", list.Versions)
	}
	if e.final(loc, 2) != "" {
		t.Fatal("a manifest meant for the branch landed at main's version 2")
	}
	v2 := must(s.CreateTableVersion(ctx, CreateTableVersionRequest{ID: tid, Version: 2, ManifestPath: e.stage(loc, 2, "main's")}))
	if v2.Version.Version != 2 || e.final(loc, 2) != "main's" {
		t.Fatalf("main's own version 2: %+v, %q", v2.Version, e.final(loc, 2))
	}
}

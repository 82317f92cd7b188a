package namespace

import (
	"context"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// Each Lance branch of a table has a version chain of its own, under the
// table's tree/<branch>/: a request on a branch reads and writes that
// chain only, and main is never touched by one. This follows Lance's
// branches().create (list the branch: empty; commit its first version at
// the version it forks from), commits and tags on the branch, and
// branches().delete (Lance removes tree/<branch>/ without a request),
// after which the branch can be made again.
func TestBranchesHaveTheirOwnChains(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.s
		tid := id("t")
		loc := e.withVersions(tid, 2)
		dev := lancemanifest.Chain{Table: lancemanifest.Dir(loc), Branch: "dev"}.Key()

		// Before the branch exists: listing its versions is
		// TableBranchNotFound, as every branch operation answers.
		_, err := s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: tid, Branch: "dev"})
		wantCode(t, "listing the versions of a branch that does not exist", err, nserror.TableBranchNotFound)
		_, err = s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Version: ptr(int64(1)), Branch: "dev"})
		wantCode(t, "describing a version of a branch that does not exist", err, nserror.TableBranchNotFound)
		_, err = s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Branch: "dev"})
		wantCode(t, "describing the latest version of a branch that does not exist", err, nserror.TableBranchNotFound)
		_, err = s.DescribeTable(ctx, api.DescribeTableRequest{ID: tid, Branch: "dev"})
		wantCode(t, "describing the table on a branch that does not exist", err, nserror.TableBranchNotFound)
		_, err = s.Versions().BatchDeleteTableVersions(ctx, api.BatchDeleteTableVersionsRequest{ID: tid, Branch: "dev", Ranges: []api.VersionRange{{StartVersion: 0, EndVersion: -1}}})
		wantCode(t, "deleting versions of a branch that does not exist", err, nserror.TableBranchNotFound)

		// A branch's commit is confined to its own directory: a manifest
		// staged in main's _versions/ (or another branch's) is refused.
		_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 2, Branch: "dev", ManifestPath: e.stage(loc, 2, "main's dir")})
		wantCode(t, "a branch commit staged in main's directory", err, nserror.InvalidInput)
		_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 2, ManifestPath: e.stage(dev, 2, "dev's dir")})
		wantCode(t, "a main commit staged in a branch's directory", err, nserror.InvalidInput)
		for _, bad := range []string{"../x", "a//b", "/a", "a/", "x.lock", "a b", "a\\b", "tree/../../x"} {
			_, err = s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: tid, Branch: bad})
			wantCode(t, "branch "+bad, err, nserror.InvalidInput)
		}

		// The fork: the branch's first version is the version it forks from.
		v2 := must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 2, Branch: "dev", ManifestPath: e.stage(dev, 2, "dev 2")}))
		if v2.Version.Version != 2 || e.final(dev, 2) != "dev 2" {
			t.Fatalf("the fork: %+v, %q", v2.Version, e.final(dev, 2))
		}
		must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 3, Branch: "dev", ManifestPath: e.stage(dev, 3, "dev 3")}))
		_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 3, Branch: "dev", ManifestPath: e.stage(dev, 3, "dev 3 again")})
		wantCode(t, "a branch's version taken", err, nserror.ConcurrentModification)
		_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 9, Branch: "dev", ManifestPath: e.stage(dev, 9, "a gap")})
		wantCode(t, "a branch's version that skips", err, nserror.InvalidInput)

		// Errors name the table by its id (and branch), not by its directory.
		for _, c := range []struct{ branch, want string }{{"", `table "t" has no version 99`}, {"dev", `table "t" (branch "dev") has no version 99`}} {
			_, err = s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Branch: c.branch, Version: ptr(int64(99))})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), loc) {
				t.Errorf("describing version 99 of %q: %v, want it to say %s", c.branch, err, c.want)
			}
		}
		_, err = s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 2, ManifestPath: e.stage(loc, 2, "taken")})
		if err == nil || !strings.Contains(err.Error(), `table "t" is taken`) && !strings.Contains(err.Error(), `of table "t"`) || strings.Contains(err.Error(), loc) {
			t.Errorf("a taken version: %v", err)
		}

		// Main is as it was, and its version 3 is still its own.
		if e.final(loc, 3) != "" || e.final(loc, 2) != "mm" {
			t.Fatalf("main's manifests changed: 2 %q, 3 %q", e.final(loc, 2), e.final(loc, 3))
		}
		must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 3, ManifestPath: e.stage(loc, 3, "main 3")}))
		versions := func(branch string) []int64 {
			var out []int64
			for _, v := range must(s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: tid, Branch: branch})).Versions {
				out = append(out, v.Version)
			}
			return out
		}
		if got := versions("dev"); len(got) != 2 || got[0] != 2 || got[1] != 3 {
			t.Fatalf("dev's versions %v, want [2 3]", got)
		}
		if got := versions("main"); len(got) != 3 {
			t.Fatalf("main's versions %v, want [1 2 3]", got)
		}
		latest := must(s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Branch: "dev"}))
		if latest.Version.Version != 3 || latest.Version.ManifestPath != e.s.root.objectPath(lancemanifest.Dir(dev).Manifest(lancemanifest.V2, 3)) {
			t.Fatalf("dev's latest: %+v", latest.Version)
		}
		d := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: tid, Branch: "dev"}))
		if d.Version == nil || *d.Version != 3 || d.Location != e.s.root.uri(loc) {
			t.Fatalf("the table on dev: %+v", d)
		}

		// Tags on a branch's versions name the branch.
		must(s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "on-dev", Version: 2, Branch: "dev"}))
		tv := must(s.Branches().GetTableTagVersion(ctx, api.GetTableTagVersionRequest{ID: tid, Tag: "on-dev"}))
		if tv.Version != 2 || tv.Branch != "dev" {
			t.Fatalf("the tag on dev: %+v", tv)
		}
		_, err = s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "nowhere", Version: 1, Branch: "dev"})
		wantCode(t, "a tag on a version the branch does not have", err, nserror.TableVersionNotFound)

		// Lance deletes the branch (its files), then makes it again, from
		// main's version 3: a fresh chain.
		if _, err := e.objs.DeletePrefix(ctx, dev+"/"); err != nil {
			t.Fatal(err)
		}
		_, err = s.Versions().ListTableVersions(ctx, api.ListTableVersionsRequest{ID: tid, Branch: "dev"})
		wantCode(t, "listing a branch Lance deleted", err, nserror.TableBranchNotFound)
		_, err = s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Branch: "dev"})
		wantCode(t, "describing a branch Lance deleted", err, nserror.TableBranchNotFound)
		must(s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: 3, Branch: "dev", ManifestPath: e.stage(dev, 3, "dev again")}))
		if got := versions("dev"); len(got) != 1 || got[0] != 3 || e.final(dev, 3) != "dev again" {
			t.Fatalf("dev made again: %v, %q", got, e.final(dev, 3))
		}

		// Branches commit in batches too, next to main's commits.
		t2 := id("t2")
		loc2 := e.withVersions(t2, 1)
		must(s.Versions().BatchCreateTableVersions(ctx, api.BatchCreateTableVersionsRequest{Entries: []api.CreateTableVersionEntry{
			{ID: tid, Version: 4, Branch: "dev", ManifestPath: e.stage(dev, 4, "dev 4")},
			{ID: t2, Version: 2, ManifestPath: e.stage(loc2, 2, "t2 2")},
		}}))
		must(s.BatchCommitTables(ctx, api.BatchCommitTablesRequest{Operations: []api.CommitTableOperation{
			{CreateTableVersion: &api.CreateTableVersionRequest{ID: t2, Version: 1, Branch: "b/x", ManifestPath: e.stage(lancemanifest.Chain{Table: lancemanifest.Dir(loc2), Branch: "b/x"}.Key(), 1, "t2 b/x 1")}},
		}}))
		if got := versions("dev"); len(got) != 2 || got[1] != 4 {
			t.Fatalf("dev after the batch: %v", got)
		}
		if e.final(lancemanifest.Chain{Table: lancemanifest.Dir(loc2), Branch: "b/x"}.Key(), 1) != "t2 b/x 1" || e.final(loc2, 2) != "t2 2" {
			t.Fatal("the batches' manifests are not where they belong")
		}
		must(s.Versions().BatchDeleteTableVersions(ctx, api.BatchDeleteTableVersionsRequest{ID: tid, Branch: "dev", Ranges: []api.VersionRange{{StartVersion: 4, EndVersion: -1}}}))
		if got := versions("dev"); len(got) != 1 || got[0] != 3 {
			t.Fatalf("dev after deleting 4: %v", got)
		}
		if got := versions(""); len(got) != 3 {
			t.Fatalf("main after deleting dev's 4: %v", got)
		}

		// __manifest has a row per (table, branch, version); main's branch is
		// NULL. A mutation that waits for __manifest comes after all of the
		// above in sequence order.
		must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"after"}}))
		res := must(s.Table().Query(ctx, `SELECT table_id || ':' || coalesce(branch, 'NULL') || ':' || version || ':' || manifest_path
			FROM table_versions ORDER BY table_id, branch NULLS FIRST, version`))
		defer res.Release()
		var rows []string
		for res.Next() {
			col := res.RecordBatch().Column(0).(interface {
				Len() int
				Value(int) string
			})
			for i := range col.Len() {
				rows = append(rows, strings.Clone(col.Value(i)))
			}
		}
		m := func(chain string, v uint64) string { return lancemanifest.Dir(chain).Manifest(lancemanifest.V2, v) }
		want := []string{
			"t:NULL:1:" + m(loc, 1), "t:NULL:2:" + m(loc, 2), "t:NULL:3:" + m(loc, 3),
			"t:dev:3:" + m(dev, 3),
			"t2:NULL:1:" + m(loc2, 1), "t2:NULL:2:" + m(loc2, 2),
			"t2:b/x:1:" + m(lancemanifest.Chain{Table: lancemanifest.Dir(loc2), Branch: "b/x"}.Key(), 1),
		}
		if strings.Join(rows, "\n") != strings.Join(want, "\n") {
			t.Fatalf("table_versions:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
		}
	})
}

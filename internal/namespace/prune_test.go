package namespace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// listed is the versions ListTableVersions answers for a branch.
func listed(t *testing.T, s *Service, tid api.ID, branch string) []int64 {
	t.Helper()
	var out []int64
	for _, v := range must(s.Versions().ListTableVersions(context.Background(), api.ListTableVersionsRequest{ID: tid, Branch: branch})).Versions {
		out = append(out, v.Version)
	}
	return out
}

var syncN atomic.Int64

// sqlVersions is the versions of table tid in SQL's table_versions (main).
func sqlVersions(t *testing.T, s *Service, tid api.ID) string {
	t.Helper()
	ctx := context.Background()
	// A namespace made waits for __manifest, which then has every change
	// before it.
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{fmt.Sprintf("sync%d", syncN.Add(1))}}))
	res := must(s.Table().Query(ctx, `SELECT coalesce(string_agg(CAST(version AS VARCHAR), ',' ORDER BY version), '')
		FROM table_versions WHERE table_id = '`+tid.String()+`' AND branch IS NULL`))
	defer res.Release()
	var out string
	for res.Next() {
		col := res.RecordBatch().Column(0).(interface{ Value(int) string })
		out = strings.Clone(col.Value(0))
	}
	return out
}

// Lance's cleanup deletes old manifests and tells no one: the catalog
// follows. Versions 1..10, a tag on 3 and a branch forked from 5; a
// cleanup with its cutoff between 7 and 8 deletes the manifests of 1, 2,
// 4, 6 and 7. Then those versions are TableVersionNotFound, are not
// listed, leave SQL; the kept ones (3, 5, 8..10) answer as before. A
// manifest missing above the oldest kept version is drift: an error,
// never a path, and its record stays for admin verify.
func TestTheCatalogFollowsLancesCleanup(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.s
		tid := id("t")
		loc := e.withVersions(tid, 10)
		if err := e.objs.Put(ctx, lancemanifest.Dir(loc).Tag("gold"), []byte(strings.Replace(lanceTag, `"version": 1`, `"version": 3`, 1))); err != nil {
			t.Fatal(err)
		}
		if err := e.objs.Put(ctx, lancemanifest.Dir(loc).BranchRefs()+"dev.json",
			[]byte(`{"parentBranch": null, "parentVersion": 5, "createAt": 1796172517, "manifestSize": 5, "metadata": {}}`)); err != nil {
			t.Fatal(err)
		}
		if got := sqlVersions(t, s, tid); got != "1,2,3,4,5,6,7,8,9,10" {
			t.Fatalf("table_versions before the cleanup: %s", got)
		}
		before := s.Table().Visible()
		for _, v := range []uint64{1, 2, 4, 6, 7} {
			if err := e.objs.Delete(ctx, lancemanifest.Dir(loc).Manifest(lancemanifest.V2, v)); err != nil {
				t.Fatal(err)
			}
		}

		// A lookup of a pruned version: 404, never the path.
		_, err := s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Version: ptr(int64(2))})
		wantCode(t, "describing pruned version 2", err, nserror.TableVersionNotFound)
		if got := listed(t, s, tid, ""); !slices.Equal(got, []int64{3, 5, 8, 9, 10}) {
			t.Fatalf("listed after the cleanup: %v", got)
		}
		for _, v := range []int64{1, 4, 7} {
			_, err := s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Version: ptr(v)})
			wantCode(t, "describing a pruned version", err, nserror.TableVersionNotFound)
		}
		for _, v := range []int64{3, 5, 8} {
			d := must(s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Version: ptr(v)}))
			if d.Version.Version != v || d.Version.ManifestSize == nil || *d.Version.ManifestSize != v {
				t.Fatalf("kept version %d: %+v", v, d.Version)
			}
		}
		if got := sqlVersions(t, s, tid); got != "3,5,8,9,10" {
			t.Fatalf("table_versions after the cleanup: %s", got)
		}
		// Time travel still shows the catalog as it was.
		res := must(s.Table().Query(ctx, fmt.Sprintf(`SELECT count(*) FROM manifest_at(%d) WHERE object_type = 'table_version' AND object_id = 't'`, before)))
		var n int64 = -1
		for res.Next() {
			n = res.RecordBatch().Column(0).(interface{ Value(int) int64 }).Value(0)
		}
		res.Release()
		if n != 10 {
			t.Fatalf("manifest_at(%d) holds %d versions of t, want the 10 before the cleanup", before, n)
		}
		// A tag of a pruned version is refused as Lance refuses it.
		_, err = s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "late", Version: 6})
		wantCode(t, "tagging a pruned version", err, nserror.TableVersionNotFound)

		// Drift: version 9's manifest goes, which no cleanup deletes while
		// 8 is kept untagged.
		if err := e.objs.Delete(ctx, lancemanifest.Dir(loc).Manifest(lancemanifest.V2, 9)); err != nil {
			t.Fatal(err)
		}
		_, err = s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Version: ptr(int64(9))})
		wantCode(t, "describing version 9, drifted", err, nserror.Internal)
		if got := listed(t, s, tid, ""); !slices.Equal(got, []int64{3, 5, 8, 10}) {
			t.Fatalf("listed with version 9 drifted: %v", got)
		}
		p := must(s.claims.ClassifyPrunes(ctx, loc, ""))
		if len(p.Pruned) != 0 || len(p.Missing) != 1 || p.Missing[0].Version != 9 || p.Oldest != 8 {
			t.Fatalf("classified: %+v", p)
		}
		// The latest is never pruned: with its manifest gone, nothing is.
		for _, v := range []uint64{8, 10} {
			if err := e.objs.Delete(ctx, lancemanifest.Dir(loc).Manifest(lancemanifest.V2, v)); err != nil {
				t.Fatal(err)
			}
		}
		p = must(s.claims.FollowPrunes(ctx, loc, ""))
		if len(p.Pruned) != 0 || len(p.Missing) != 3 {
			t.Fatalf("with the latest gone: %+v", p)
		}
	})
}

// A ref file that is not Lance's (garbage in _refs/tags/) keeps every
// version it might name: nothing is taken for pruned, the listing still
// answers (without the missing manifests' versions), and a lookup of one
// is an error, never a path.
func TestAGarbageRefPrunesNothing(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	tid := id("t")
	loc := e.withVersions(tid, 4)
	if err := e.objs.Put(ctx, lancemanifest.Dir(loc).Tag("junk"), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if err := e.objs.Delete(ctx, lancemanifest.Dir(loc).Manifest(lancemanifest.V2, 1)); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, s, tid, ""); !slices.Equal(got, []int64{2, 3, 4}) {
		t.Fatalf("listed: %v", got)
	}
	_, err := s.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: tid, Version: ptr(int64(1))})
	wantCode(t, "a missing version under a garbage ref", err, nserror.Internal)
	if p := must(s.claims.ClassifyPrunes(ctx, loc, "")); len(p.Pruned) != 0 || len(p.Missing) != 1 {
		t.Fatalf("classified: %+v", p)
	}
}

// A newer Lance tells the catalog after its cleanup deleted a version's
// manifest: BatchDeleteTableVersions of that one version, with the
// manifest's path in its context.
func TestBatchDeleteAfterLancesCleanup(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	tid := id("t")
	loc := e.withVersions(tid, 4)
	for _, v := range []uint64{1, 2} {
		if err := e.objs.Delete(ctx, lancemanifest.Dir(loc).Manifest(lancemanifest.V2, v)); err != nil {
			t.Fatal(err)
		}
		d := must(s.Versions().BatchDeleteTableVersions(ctx, api.BatchDeleteTableVersionsRequest{ID: tid, Ranges: []api.VersionRange{{StartVersion: int64(v), EndVersion: int64(v) + 1}},
			Common: api.Common{Context: map[string]string{"lance.table_version_identity": s.root.objectPath(lancemanifest.Dir(loc).Manifest(lancemanifest.V2, v))}}}))
		if d.DeletedCount != 1 {
			t.Fatalf("deleting version %d: %+v", v, d)
		}
	}
	// A deletion that names another manifest than the version's is not of
	// this version: it stays.
	d := must(s.Versions().BatchDeleteTableVersions(ctx, api.BatchDeleteTableVersionsRequest{ID: tid, Ranges: []api.VersionRange{{StartVersion: 3, EndVersion: 4}},
		Common: api.Common{Context: map[string]string{"lance.table_version_identity": s.root.objectPath(lancemanifest.Dir(loc).Manifest(lancemanifest.V1, 3))}}}))
	if d.DeletedCount != 0 {
		t.Fatalf("a deletion naming another manifest deleted %d", d.DeletedCount)
	}
	if got := listed(t, s, tid, ""); !slices.Equal(got, []int64{3, 4}) {
		t.Fatalf("listed: %v", got)
	}
}

// Retention properties are validated where they are set, and a table's
// policy is inherited from the nearest namespace that sets each one.
func TestRetentionIsValidatedAndInherited(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	for _, bad := range []api.Properties{
		{PropCleanupOlderThan: "-1h"}, {PropCleanupOlderThan: "0s"}, {PropCleanupOlderThan: "soon"}, {PropCleanupOlderThan: "0d"},
		{PropCleanupRetainVersions: "0"}, {PropCleanupRetainVersions: "-3"}, {PropCleanupRetainVersions: "two"},
		{"flightns.cleanup.everything": "yes"},
	} {
		_, err := s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("bad"), Properties: bad})
		wantCode(t, fmt.Sprint(bad), err, nserror.InvalidInput)
		_, err = s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("badt"), Properties: bad})
		wantCode(t, fmt.Sprint(bad), err, nserror.InvalidInput)
	}
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a"), Properties: api.Properties{PropCleanupOlderThan: "7d", PropCleanupRetainVersions: "5"}}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a", "b"), Properties: api.Properties{PropCleanupOlderThan: "36h"}}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("a", "off"), Properties: api.Properties{PropCleanupOlderThan: "off"}}))
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "b", "t")}))
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "b", "own"), Properties: api.Properties{PropCleanupRetainVersions: "2"}}))
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("a", "off", "t")}))
	must(s.DeclareTable(ctx, api.DeclareTableRequest{ID: id("plain")}))
	for _, c := range []struct {
		tid  api.ID
		want Retention
		ok   bool
	}{
		{id("a", "b", "t"), Retention{OlderThan: 36 * time.Hour, RetainVersions: 5, From: "a$b"}, true},
		{id("a", "b", "own"), Retention{OlderThan: 36 * time.Hour, RetainVersions: 2, From: "a$b"}, true},
		{id("a", "off", "t"), Retention{RetainVersions: 5, From: "a$off"}, false},
		{id("plain"), Retention{RetainVersions: 1}, false},
	} {
		got, ok, err := s.Versions().RetentionOf(ctx, c.tid)
		if err != nil || ok != c.ok || got != c.want {
			t.Fatalf("retention of %s: %+v %v %v, want %+v %v", c.tid.String(), got, ok, err, c.want, c.ok)
		}
	}
}

// Only admins clean up: a writer is refused; a principal that is admin
// of one namespace by a grant cleans up its tables and sees none of
// another's (answered as missing, as everywhere).
func TestOnlyAdminsCleanUp(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	for _, ns := range []api.ID{id("a"), id("b")} {
		must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: ns}))
		must(e.s.DeclareTable(bg, api.DeclareTableRequest{ID: ns.Child("t")}))
	}
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Admin}))
	writer := auth.WithPrincipal(bg, auth.Principal{Name: "w", Role: auth.Write})
	ana := auth.WithPrincipal(bg, auth.Principal{Name: "ana", Role: auth.None})
	body := func(i api.ID) any { return map[string]any{"id": i, "dry_run": true, "older_than": "1d"} }
	_, err := op(writer, e.s, "CleanupTable", body(id("a", "t")))
	wantCode(t, "a writer's cleanup", err, nserror.PermissionDenied)
	if _, err := op(ana, e.s, "CleanupTable", body(id("a", "t"))); err != nil {
		t.Fatalf("an admin of a cleaning up a$t: %v", err)
	}
	_, err = op(ana, e.s, "CleanupTable", body(id("b", "t")))
	wantCode(t, "an admin of a cleaning up b$t", err, nserror.TableNotFound)
	_, err = op(auth.WithPrincipal(bg, auth.Principal{Name: "root", Role: auth.Admin}), e.s, "CleanupTable", map[string]any{"id": id("a", "t"), "older_than": "-1h"})
	wantCode(t, "a negative age", err, nserror.InvalidInput)
}

// A cleanup policy is an admin's to set, as a cleanup is: a writer may
// not put flightns.cleanup. properties on a table or namespace by any
// path that writes properties (declare, register, overwrite, a batch,
// a namespace), and may do all of them without; an admin of the
// namespace may. (Before, a writer re-registered its table over itself
// with older_than=1ms, and the maintainer deleted every old version.)
func TestOnlyAdminsSetACleanupPolicy(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: id("a")}))
	d := must(e.s.DeclareTable(bg, api.DeclareTableRequest{ID: id("a", "t")}))
	e.commitManifest(t, id("a", "t"), e.locOf(id("a", "t")), 1, lanceManifest(t, "v1")) // a Lance table to register over
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "wes", Role: auth.Write}))
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Admin}))
	wes := auth.WithPrincipal(bg, auth.Principal{Name: "wes", Role: auth.None})
	ana := auth.WithPrincipal(bg, auth.Principal{Name: "ana", Role: auth.None})
	policy := map[string]any{PropCleanupOlderThan: "1ms", PropCleanupRetainVersions: "1"}
	register := func(props any) map[string]any {
		return map[string]any{"id": id("a", "t"), "location": d.Location, "mode": "overwrite", "properties": props}
	}
	requests := []struct {
		what, op string
		body     func(props any) map[string]any
	}{
		{"an overwrite of its table by itself", "RegisterTable", register},
		{"a new table", "DeclareTable", func(props any) map[string]any { return map[string]any{"id": id("a", "u"), "properties": props} }},
		{"a table in a batch", "BatchCommitTables", func(props any) map[string]any {
			return map[string]any{"operations": []any{map[string]any{"declare_table": map[string]any{"id": id("a", "v"), "properties": props}}}}
		}},
		{"a new namespace", "CreateNamespace", func(props any) map[string]any { return map[string]any{"id": id("a", "n"), "properties": props} }},
	}
	for _, r := range requests {
		_, err := op(wes, e.s, r.op, r.body(policy))
		wantCode(t, "a writer's policy on "+r.what, err, nserror.PermissionDenied)
		if _, err := op(wes, e.s, r.op, r.body(map[string]any{"owner": "wes"})); err != nil {
			t.Fatalf("a writer's %s without a policy: %v", r.what, err)
		}
	}
	if p := must(e.s.DescribeTable(bg, api.DescribeTableRequest{ID: id("a", "t")})).Properties; p[PropCleanupOlderThan] != "" {
		t.Fatalf("a$t's properties after the refusals: %v", p)
	}
	if _, err := op(ana, e.s, "RegisterTable", register(policy)); err != nil {
		t.Fatalf("an admin of a sets a policy: %v", err)
	}
}

// Retention properties from any caller: checked without a panic, and
// what is accepted reads back as a policy that keeps the latest version.
func FuzzRetentionProps(f *testing.F) {
	for _, seed := range [][2]string{{"7d", "1"}, {"36h", "5"}, {"off", "2"}, {"-1h", "0"}, {"0d", "-3"}, {"9999999999d", "1073741825"}, {"1e9h", "x"}, {"", ""}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, age, retain string) {
		err := checkRetentionProps(api.Properties{PropCleanupOlderThan: age, PropCleanupRetainVersions: retain})
		if err != nil {
			if nserror.CodeOf(err) != nserror.InvalidInput {
				t.Fatalf("%q %q: %v", age, retain, err)
			}
			return
		}
		d, aerr := parseAge(age)
		k, rerr := parseRetain(retain)
		if aerr != nil || rerr != nil || d < 0 || (d == 0 && age != "off") || k < 1 {
			t.Fatalf("accepted %q %q as %v, %d", age, retain, d, k)
		}
	})
}

// The maintainer cleans up only what may go: a table whose versions are
// all younger than its retention is not planned at all, one with more
// than it keeps is.
func TestTheMaintainerSkipsWhatHasNothingToPrune(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	s := e.s
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("young"), Properties: api.Properties{PropCleanupOlderThan: "7d"}}))
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("few"), Properties: api.Properties{PropCleanupOlderThan: "1ms", PropCleanupRetainVersions: "5"}}))
	yl := e.withVersions(id("young", "t"), 3)
	fl := e.withVersions(id("few", "t"), 3)
	heads := must(s.claims.Heads(ctx))
	if !s.nothingToPrune(ctx, yl, heads, must3(s.Versions().RetentionOf(ctx, id("young", "t")))) {
		t.Error("a table younger than its retention would be planned")
	}
	if !s.nothingToPrune(ctx, fl, heads, must3(s.Versions().RetentionOf(ctx, id("few", "t")))) {
		t.Error("a table with fewer versions than it keeps would be planned")
	}
	time.Sleep(5 * time.Millisecond)
	pol := must3(s.Versions().RetentionOf(ctx, id("few", "t")))
	pol.RetainVersions = 2
	if s.nothingToPrune(ctx, fl, heads, pol) {
		t.Error("a table with old versions beyond what it keeps would be skipped")
	}
	// (The manifests are not Lance's: a cleanup of them would fail, so the
	// pass shows it planned none.)
	rep := must(s.MaintainPass(ctx))
	if !rep.Held || rep.Cleanups != 0 || rep.Failed != 0 {
		t.Fatalf("pass: %+v", rep)
	}
}

// must3 is must of a (value, ok, error) call whose ok does not matter.
func must3[T any](v T, _ bool, err error) T { return must(v, err) }

// While a table's cleanup runs, no table can be made at its directory:
// the cleanup deletes what its plan found there, and a table dropped and
// declared again at the same location meanwhile would lose its files.
// The cleanup holds its lock from before it plans. (Before, the plan was
// made first and the lock taken after, and nothing refused the new
// table.)
func TestNoTableIsMadeWhereACleanupRuns(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: id("a")}))
	loc := e.withVersions(id("a", "t"), 2)
	release := must(e.s.lockCleanup(bg, id("a", "t"), loc))
	must(e.s.DropTable(bg, api.DropTableRequest{ID: id("a", "t")}))
	again := api.DeclareTableRequest{ID: id("a", "t"), Location: e.s.root.uri(loc)}
	_, err := e.s.DeclareTable(bg, again)
	wantCode(t, "a table declared where a cleanup runs", err, nserror.ConcurrentModification)
	_, err = e.s.RegisterTable(bg, api.RegisterTableRequest{ID: id("a", "u"), Location: e.s.root.uri(loc)})
	wantCode(t, "a table registered where a cleanup runs", err, nserror.ConcurrentModification)
	release()
	must(e.s.DeclareTable(bg, again))
}

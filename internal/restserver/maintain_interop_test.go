package restserver

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/repair"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/objstore"
)

// TestLanceDBOptimizeIsFollowed: LanceDB's routine maintenance through
// flightns — 30 one-row adds, a delete, a branch and a tag, then
// optimize({cleanupOlderThan}) and one more add — on a directory and on
// MinIO. Lance's cleanup deletes old manifests without a request; the
// catalog follows with no operator step: admin verify reports the
// pruned versions as pruned, not drift; version/list answers exactly the
// versions LanceDB lists; a pruned version is 404 TableVersionNotFound;
// SQL's table_versions holds the same versions; LanceDB reads main, the
// branch and the tag.
func TestLanceDBOptimizeIsFollowed(t *testing.T) {
	for _, backend := range []string{"file", "s3"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			var opts []serverOption
			if backend == "s3" {
				srv := s3test.Start(t, "lake")
				objs, err := objstore.Open(ctx, srv.URI("lake", "cat"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = objs.Close() })
				opts = append(opts, withConfig(func(c *namespace.Config) { c.Objects = objs }))
			}
			s := startServer(t, opts...)
			var built struct {
				OK       bool
				Failures []string
				Version  int64
				Tagged   int64
			}
			node(t, nil, &built, "maintain.mjs", s.url(), "build")
			if !built.OK {
				t.Fatalf("build: %v", built.Failures)
			}
			var opt struct {
				OK             bool
				Failures       []string
				Versions       []int64
				Rows, Dev, Tag []string
			}
			node(t, nil, &opt, "maintain.mjs", s.url(), "optimize")
			if !opt.OK {
				t.Fatalf("optimize: %v", opt.Failures)
			}
			// The rows: 0..29 but 5, the tag's 100, and the last add's 200.
			if len(opt.Rows) != 31 || !slices.Contains(opt.Rows, "200:2000") || slices.Contains(opt.Rows, "5:50") {
				t.Fatalf("rows after optimize: %v", opt.Rows)
			}
			if len(opt.Dev) != 10 || len(opt.Tag) != 30 {
				t.Fatalf("the branch (%d rows) or the tag (%d rows) after optimize", len(opt.Dev), len(opt.Tag))
			}
			// Lance keeps the branch's fork point (10) and the tagged version,
			// and prunes everything else older than the cutoff.
			if len(opt.Versions) < 3 || opt.Versions[0] != 10 || opt.Versions[1] != built.Tagged {
				t.Fatalf("LanceDB lists %v after the cleanup; want 10 (the branch's base), the tagged %d, then newer ones", opt.Versions, built.Tagged)
			}

			rep, err := repair.Verify(ctx, repair.CatalogOf(s.service()), false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Unrepaired() != 0 {
				t.Fatalf("verify after LanceDB's optimize: %v", rep.Drift)
			}

			var l api.ListTableVersionsResponse
			ok(t, "version/list", s.post("/v1/table/m%24events/version/list", nil)).decode(t, &l)
			var listed []int64
			for _, v := range l.Versions {
				listed = append(listed, v.Version)
			}
			if !slices.Equal(listed, opt.Versions) {
				t.Fatalf("flightns lists %v, LanceDB %v", listed, opt.Versions)
			}
			r := s.post("/v1/table/m%24events/version/describe", map[string]any{"version": 2})
			if r.status != 404 || r.errorCode() != 11 {
				t.Fatalf("describing pruned version 2: %s", r)
			}
			want := make([]string, len(opt.Versions))
			for i, v := range opt.Versions {
				want[i] = strconv.FormatInt(v, 10)
			}
			s.post("/v1/namespace/sync/create", map[string]any{}) // __manifest has everything before it
			got := queryStrings(t, s, `SELECT CAST(version AS VARCHAR) FROM table_versions WHERE table_id = 'm$events' AND branch IS NULL ORDER BY version`)
			if !slices.Equal(got, want) {
				t.Fatalf("table_versions %v, LanceDB lists %v", got, want)
			}
		})
	}
}

// TestCatalogCleansUpUnderRetention: a namespace's retention properties
// (keep versions younger than 1ms, and the last 3) reach a table LanceDB
// made in it; a dry run deletes nothing; the maintainer's pass cleans
// the table up: the last three versions, the tagged one and the
// branch's base stay, the rest leaves the catalog and storage; LanceDB
// reads every version it still lists, the branch and the tag, the same
// as before; verify is clean.
func TestCatalogCleansUpUnderRetention(t *testing.T) {
	ctx := context.Background()
	s := startServer(t)
	ok(t, "namespace with retention", s.post("/v1/namespace/m/create", map[string]any{"properties": map[string]string{
		namespace.PropCleanupOlderThan: "1ms", namespace.PropCleanupRetainVersions: "3"}}))
	built := maintainBuild(t, s)
	before := maintainRead(t, s)
	if !before.OK || len(before.Versions) != int(built.Version) {
		t.Fatalf("read before: %v %v", before.Failures, before.Versions)
	}

	var dry api.CleanupTableResponse
	ok(t, "dry run", s.post("/v1/table/m%24events/cleanup", map[string]any{"dry_run": true})).decode(t, &dry)
	if !dry.DryRun || len(dry.Pruned[""]) == 0 || dry.FilesDeleted != 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	var l api.ListTableVersionsResponse
	ok(t, "version/list", s.post("/v1/table/m%24events/version/list", nil)).decode(t, &l)
	if len(l.Versions) != int(built.Version) {
		t.Fatalf("a dry run changed the versions: %d", len(l.Versions))
	}

	rep, err := s.service().MaintainPass(ctx)
	if err != nil || !rep.Held || rep.Cleanups != 1 || rep.Failed != 0 {
		t.Fatalf("maintainer pass: %+v %v", rep, err)
	}
	head := built.Version
	want := []int64{10, head - 2, head - 1, head} // the branch's base, the last three (the tagged head among them)
	after := maintainRead(t, s)
	if !after.OK || !slices.Equal(after.Versions, want) {
		t.Fatalf("LanceDB lists %v after the cleanup (%v), want %v", after.Versions, after.Failures, want)
	}
	sameReads(t, before, after)
	ok(t, "version/list", s.post("/v1/table/m%24events/version/list", nil)).decode(t, &l)
	var listed []int64
	for _, v := range l.Versions {
		listed = append(listed, v.Version)
	}
	if !slices.Equal(listed, want) {
		t.Fatalf("flightns lists %v, want %v", listed, want)
	}
	if r := s.post("/v1/table/m%24events/version/describe", map[string]any{"version": 5}); r.status != 404 || r.errorCode() != 11 {
		t.Fatalf("describing cleaned-up version 5: %s", r)
	}
	v, err := repair.Verify(ctx, repair.CatalogOf(s.service()), false, nil)
	if err != nil || v.Unrepaired() != 0 {
		t.Fatalf("verify after the cleanup: %v %v", v.Drift, err)
	}
	// A second pass finds nothing new to do for the table.
	if rep, err := s.service().MaintainPass(ctx); err != nil || rep.Cleanups != 0 {
		t.Fatalf("second pass: %+v %v", rep, err)
	}
	// The change feed holds the cleanup once, as what it deleted.
	cleaned := s.history(t, "?type=table.cleaned")
	if len(cleaned) != 1 || cleaned[0].Files == 0 || cleaned[0].Bytes == 0 || len(cleaned[0].Versions) != int(head)-len(want) || cleaned[0].ID.String() != "m$events" {
		t.Fatalf("the change feed's cleanups: %+v", cleaned)
	}
}

// TestCleanupStoppedAtEveryStep: a cleanup stopped at every deletion in
// turn (each run may delete one object more, then its storage fails) —
// after each stop every version the catalog lists has its manifest, the
// versions the cleanup keeps are all listed, and verify is clean; the
// next run picks up where the last stopped. At the end LanceDB reads
// every kept version, the branch and the tag as before. (internal/cleanup
// kills a cleanup with SIGKILL after every deletion; this is the same
// with the catalog's records in the loop.)
func TestCleanupStoppedAtEveryStep(t *testing.T) {
	ctx := context.Background()
	var stopping atomic.Bool
	var allowed atomic.Int64
	objs, err := objstore.OpenWith(ctx, "file://"+t.TempDir(), objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, p objstore.Phase) error {
		if stopping.Load() && op == objstore.OpDelete && p == objstore.Before && allowed.Add(-1) < 0 {
			return errors.New("stopped here")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	s := startServer(t, withConfig(func(c *namespace.Config) { c.Objects = objs }))
	maintainBuild(t, s)
	before := maintainRead(t, s)
	svc := s.service()
	tid := api.ID{"m", "events"}
	three := 3
	req := api.CleanupTableRequest{ID: tid, OlderThan: "1ms", RetainVersions: &three}
	dry := req
	dry.DryRun = true
	plan, err := svc.CleanupTable(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	pruned := plan.Pruned[""]
	if len(pruned) < 20 {
		t.Fatalf("the plan prunes %v", pruned)
	}
	tables, err := repair.Tables(ctx, repair.CatalogOf(svc))
	if err != nil || len(tables) != 1 {
		t.Fatalf("tables: %v %v", tables, err)
	}
	loc := tables[0].Location
	stopping.Store(true)
	runs := 0
	for ; ; runs++ {
		allowed.Store(1)
		_, err := svc.CleanupTable(ctx, req)
		var l api.ListTableVersionsResponse
		ok(t, "version/list", s.post("/v1/table/m%24events/version/list", nil)).decode(t, &l)
		var listed []int64
		for _, v := range l.Versions {
			listed = append(listed, v.Version)
			if _, herr := objs.Head(ctx, lancemanifest.Dir(loc).Manifest(lancemanifest.V2, uint64(v.Version))); herr != nil {
				t.Fatalf("run %d: listed version %d has no manifest: %v", runs, v.Version, herr)
			}
		}
		for _, v := range before.Versions {
			if !slices.Contains(pruned, uint64(v)) && !slices.Contains(listed, v) {
				t.Fatalf("run %d: kept version %d is not listed (%v)", runs, v, listed)
			}
		}
		rep, verr := repair.Verify(ctx, repair.CatalogOf(svc), false, nil)
		if verr != nil || rep.Unrepaired() != 0 {
			t.Fatalf("run %d: verify: %v %v", runs, rep.Drift, verr)
		}
		if err == nil {
			break
		}
		if runs > 2*len(pruned)+10 {
			t.Fatalf("the cleanup never finished: %v", err)
		}
	}
	if runs+1 < len(pruned) { // the last run deletes the last one
		t.Fatalf("finished after %d stops; the plan deletes at least %d manifests", runs, len(pruned))
	}
	stopping.Store(false)
	after := maintainRead(t, s)
	if !after.OK || len(after.Versions) != len(before.Versions)-len(pruned) {
		t.Fatalf("LanceDB after: %v %v", after.Versions, after.Failures)
	}
	sameReads(t, before, after)

	// Every run deleted something before it stopped: each is a
	// table.cleaned event, the stopped ones once the maintainer settles
	// their intents from storage.
	if _, _, err := svc.ResolveIntents(ctx, 0); err != nil {
		t.Fatal(err)
	}
	cleaned := 0
	err = svc.FollowChanges(ctx, api.ChangesRequest{Table: tid, Types: []string{api.EventTableCleaned}, Follow: new(false)}, func(b *namespace.ChangeBatch) error {
		cleaned += len(b.Events)
		return nil
	})
	if err != nil || cleaned != runs+1 {
		t.Fatalf("%d table.cleaned events (%v), want one for each of the %d runs", cleaned, err, runs+1)
	}
}

// maintainReport is what maintain.mjs build reports: the table's latest
// version, and the tagged one.
type maintainReport struct {
	OK       bool
	Failures []string
	Version  int64
	Tagged   int64
}

// maintainBuild builds m$events with LanceDB through s (maintain.mjs).
func maintainBuild(t *testing.T, s *server) maintainReport {
	t.Helper()
	var r maintainReport
	node(t, nil, &r, "maintain.mjs", s.url(), "build")
	if !r.OK {
		t.Fatalf("build: %v", r.Failures)
	}
	return r
}

// maintainReads is what maintain.mjs read reports: every version LanceDB
// lists and its rows, the branch's rows and the tag's.
type maintainReads struct {
	OK       bool
	Failures []string
	Versions []int64
	RowsAt   map[string][]string
	Dev, Tag []string
}

// maintainRead reads m$events with LanceDB through s.
func maintainRead(t *testing.T, s *server) maintainReads {
	t.Helper()
	var r maintainReads
	node(t, nil, &r, "maintain.mjs", s.url(), "read")
	if !r.OK {
		t.Fatalf("read: %v", r.Failures)
	}
	return r
}

// sameReads fails unless every version after lists reads as it did
// before, and the branch and the tag too.
func sameReads(t *testing.T, before, after maintainReads) {
	t.Helper()
	for _, v := range after.Versions {
		k := strconv.FormatInt(v, 10)
		if !slices.Equal(after.RowsAt[k], before.RowsAt[k]) {
			t.Fatalf("version %d reads %v after the cleanup, %v before", v, after.RowsAt[k], before.RowsAt[k])
		}
	}
	if !slices.Equal(after.Dev, before.Dev) || !slices.Equal(after.Tag, before.Tag) {
		t.Fatal("the branch or the tag reads differently after the cleanup")
	}
}

package repair

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/redisclaim"
)

// table declares ns$name and commits versions 1..n; it returns the table
// directory on disk.
func table(t *testing.T, svc *namespace.Service, root, name string, n int) string {
	t.Helper()
	ctx := context.Background()
	if _, err := svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"ns"}, Mode: api.ModeExistOk}); err != nil {
		t.Fatal(err)
	}
	d, err := svc.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"ns", name}})
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimPrefix(d.Location, "file://")
	for v := 1; v <= n; v++ {
		p := stage(t, dir, uint64(v))
		size := int64(len("manifest"))
		if _, err := svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"ns", name}, Version: int64(v),
			ManifestPath: "file://" + p, ManifestSize: &size}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func stage(t *testing.T, dir string, v uint64) string {
	t.Helper()
	p := filepath.Join(dir, "_versions", fmt.Sprintf("%020d.manifest-%s", uint64(math.MaxUint64)-v, uuid.NewString()))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("manifest"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func final(dir string, v uint64) string {
	return filepath.Join(dir, "_versions", fmt.Sprintf("%020d.manifest", uint64(math.MaxUint64)-v))
}

func kinds(r VerifyReport) string {
	var out []string
	for _, d := range r.Drift {
		out = append(out, fmt.Sprintf("%s@%d/%v", d.Kind, d.Version, d.Repaired))
	}
	return strings.Join(out, " ")
}

func TestVerifyFindsAndRepairsDriftBetweenRecordsAndStorage(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	a := table(t, svc, env.Root, "a", 3)
	b := table(t, svc, env.Root, "b", 2)
	var calls, lastDone, lastTotal int
	rep, err := Verify(ctx, CatalogOf(svc), false, func(done, total int) { calls, lastDone, lastTotal = calls+1, done, total })
	if err != nil || len(rep.Drift) != 0 || rep.Tables != 2 || rep.Versions != 5 {
		t.Fatalf("clean catalog: %+v, %v", rep, err)
	}
	// Progress goes over both tables twice: records, then __manifest rows.
	if calls < 5 || lastDone != 4 || lastTotal != 4 {
		t.Fatalf("progress: %d calls, last %d of %d; want at least 5, ending at 4 of 4", calls, lastDone, lastTotal)
	}
	// Lance's cleanup deletes an old manifest (pruned, not drift); a
	// manifest between two kept ones goes (drift: no cleanup does that);
	// someone writes one past the head around the catalog; another is
	// rewritten with other bytes.
	c := table(t, svc, env.Root, "c", 3)
	if err := os.Remove(final(a, 1)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(final(c, 2)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(final(b, 3), []byte("by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(final(a, 2), []byte("other bytes!"), 0o644); err != nil {
		t.Fatal(err)
	}
	// __manifest's rows of a's version 2 and c's version 2 disagree with
	// storage too; a's pruned version 1 left the catalog, its row with it.
	rep, err = Verify(ctx, CatalogOf(svc), false, nil)
	if got, want := kinds(rep), "size-mismatch@2/false unrecorded-manifest@3/false missing-manifest@2/false row-size-mismatch@2/false row-missing-manifest@2/false"; err != nil || got != want {
		t.Fatalf("report: %q (%v), want %q", got, err, want)
	}
	if len(rep.Pruned) != 1 || rep.Pruned[0].Table != "ns$a" || rep.Pruned[0].Version != 1 || rep.Pruned[0].Kind != PrunedVersion {
		t.Fatalf("pruned: %+v", rep.Pruned)
	}
	one := int64(1)
	if _, err := svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: api.ID{"ns", "a"}, Version: &one}); nserror.CodeOf(err) != nserror.TableVersionNotFound {
		t.Fatalf("a's pruned version 1: %v", err)
	}
	rep, err = Verify(ctx, CatalogOf(svc), true, nil)
	// Forgetting c's version 2 deletes its row as well; recording b's
	// version 3 adds its row.
	if got, want := kinds(rep), "size-mismatch@2/false unrecorded-manifest@3/true missing-manifest@2/true row-size-mismatch@2/false"; err != nil || got != want {
		t.Fatalf("repair: %q (%v), want %q", got, err, want)
	}
	if rep.Unrepaired() != 2 {
		t.Errorf("unrepaired %d, want 2 (a size mismatch needs a person)", rep.Unrepaired())
	}
	d, err := svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: api.ID{"ns", "b"}})
	if err != nil || d.Version.Version != 3 {
		t.Fatalf("b's latest after repair: %+v, %v", d, err)
	}
	rep, err = Verify(ctx, CatalogOf(svc), false, nil)
	if got := kinds(rep); err != nil || got != "size-mismatch@2/false row-size-mismatch@2/false" {
		t.Fatalf("after repair: %q (%v)", got, err)
	}
}

func TestGCDeletesOnlyOldOrphanedStagingObjects(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	dir := table(t, svc, env.Root, "t", 1)
	old, young := stage(t, dir, 5), stage(t, dir, 6)
	now := time.Now()
	past := now.Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	rep, err := GC(ctx, CatalogOf(svc), time.Hour, true, now, nil)
	if err != nil || len(rep.Orphaned) != 1 || rep.Deleted != 0 || rep.Staging != 2 {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	rep, err = GC(ctx, CatalogOf(svc), time.Hour, false, now, nil)
	if err != nil || rep.Deleted != 1 {
		t.Fatalf("gc: %+v, %v", rep, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("old orphan survived: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("young staging object deleted: %v", err)
	}
	if _, err := os.Stat(final(dir, 1)); err != nil {
		t.Errorf("a final manifest is gone: %v", err)
	}
	if _, err := GC(ctx, CatalogOf(svc), 0, false, now, nil); err == nil {
		t.Error("a zero safety window was accepted")
	}
}

func TestForcedRecoverRebuildsAndCompactWritesASnapshot(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	table(t, svc, env.Root, "t", 2)
	if _, err := Recover(ctx, CatalogOf(svc), true); err != nil {
		t.Fatal(err)
	}
	if n, err := env.RDB.Exists(ctx, string(redisstate.KeysOf(env.Catalog).Epoch())).Result(); err != nil || n != 1 {
		t.Fatalf("no epoch after recover: %d, %v", n, err)
	}
	d, err := svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: api.ID{"ns", "t"}})
	if err != nil || d.Version.Version != 2 {
		t.Fatalf("latest after recover: %+v, %v", d, err)
	}
	if err := Compact(ctx, CatalogOf(svc)); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(env.Root, "__manifest", "_snapshots", "*.parquet"))
	if len(snaps) == 0 {
		t.Error("no snapshot")
	}
}

// A writer that staged a version before its table was dropped writes into
// the dropped location afterwards: gc collects those files (once older
// than the window) by the drop's tombstone, and never touches the data of
// a deregistered table, which stays by design.
func TestGCCollectsWhatAStaleWriterWroteIntoADroppedTable(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	dropped := table(t, svc, env.Root, "gone", 1)
	kept := table(t, svc, env.Root, "kept", 1)
	if _, err := svc.DropTable(ctx, api.DropTableRequest{ID: api.ID{"ns", "gone"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DeregisterTable(ctx, api.DeregisterTableRequest{ID: api.ID{"ns", "kept"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dropped); !os.IsNotExist(err) {
		t.Fatalf("the drop left the table's data: %v", err)
	}
	// The stale writer: a data file and a staged manifest, then a commit
	// the catalog refuses.
	data := filepath.Join(dropped, "data", "late.lance")
	if err := os.MkdirAll(filepath.Dir(data), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, []byte("rows"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := stage(t, dropped, 2)
	size := int64(len("manifest"))
	if _, err := svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"ns", "gone"}, Version: 2,
		ManifestPath: "file://" + p, ManifestSize: &size}); err == nil {
		t.Fatal("a commit into a dropped table was accepted")
	}

	// Within the window nothing goes: the writer may still be at work.
	now := time.Now()
	rep, err := GC(ctx, CatalogOf(svc), time.Hour, false, now, nil)
	if err != nil || rep.Dropped != 1 || len(rep.Leftovers) != 0 || rep.Cleared != 0 {
		t.Fatalf("gc within the window: %+v, %v", rep, err)
	}
	later := now.Add(2 * time.Hour)
	rep, err = GC(ctx, CatalogOf(svc), time.Hour, true, later, nil)
	if err != nil || len(rep.Leftovers) != 2 || rep.Cleared != 0 {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("a dry run deleted %s: %v", data, err)
	}
	rep, err = GC(ctx, CatalogOf(svc), time.Hour, false, later, nil)
	if err != nil || len(rep.Leftovers) != 2 || rep.Cleared != 1 {
		t.Fatalf("gc after the window: %+v, %v", rep, err)
	}
	for _, f := range []string{data, p} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s survived gc: %v", f, err)
		}
	}
	if _, err := os.Stat(final(kept, 1)); err != nil {
		t.Errorf("gc touched a deregistered table's data: %v", err)
	}
	if rep, err := GC(ctx, CatalogOf(svc), time.Hour, false, later, nil); err != nil || rep.Dropped != 0 {
		t.Fatalf("the location is not forgotten: %+v, %v", rep, err)
	}
}

// A staging object older than the window that a claim still names (its
// writer claimed the version and stopped before the final manifest) is not
// an orphan: gc neither lists nor deletes it, and the commit is finished
// from it (reading the claims to learn which staging objects are in use
// helps that commit along: on file:// its staging object becomes the
// final manifest).
func TestGCSparesAnOldStagingObjectAClaimStillNames(t *testing.T) {
	env := nstest.New(t)
	var cut atomic.Bool
	svc := env.Open(t, func(c *namespace.Config) {
		c.Claims.Step = func(_ context.Context, step redisclaim.Step, _ string, version uint64) error {
			if cut.Load() && step == redisclaim.StepClaimed && version == 2 {
				return errors.New("the writer stops right after its claim")
			}
			return nil
		}
	})
	ctx := context.Background()
	dir := table(t, svc, env.Root, "t", 1)
	claimed := stage(t, dir, 2)
	size := int64(len("manifest"))
	cut.Store(true)
	if _, err := svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"ns", "t"}, Version: 2,
		ManifestPath: "file://" + claimed, ManifestSize: &size}); err == nil {
		t.Fatal("the cut did not fire")
	}
	cut.Store(false)
	now := time.Now()
	past := now.Add(-2 * time.Hour)
	if err := os.Chtimes(claimed, past, past); err != nil {
		t.Fatal(err)
	}
	rep, err := GC(ctx, CatalogOf(svc), time.Hour, false, now, nil)
	if err != nil || len(rep.Orphaned) != 0 || rep.Deleted != 0 {
		t.Fatalf("gc: %+v, %v", rep, err)
	}
	d, err := svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: api.ID{"ns", "t"}})
	if err != nil || d.Version.Version != 2 {
		t.Fatalf("latest after gc: %+v, %v", d, err)
	}
	if b, err := os.ReadFile(final(dir, 2)); err != nil || string(b) != "manifest" {
		t.Fatalf("version 2's final manifest: %q, %v", b, err)
	}
}

// A directory taken into the catalog again is its new table's: a table
// dropped (its data deleted, a tombstone left for gc), declared again at
// the same location, then deregistered keeps its data through `admin gc`
// however old its files are. (Before, the old tombstone stayed, and gc
// collected the deregistered table's data as the dropped table's
// left-overs.)
func TestGCKeepsADeregisteredTableWhereADroppedOneWas(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	first := table(t, svc, env.Root, "t", 1)
	if _, err := svc.DropTable(ctx, api.DropTableRequest{ID: api.ID{"ns", "t"}}); err != nil {
		t.Fatal(err)
	}
	d, err := svc.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"ns", "t"}, Location: "file://" + first})
	if err != nil {
		t.Fatal(err)
	}
	again := strings.TrimPrefix(d.Location, "file://")
	for v := 1; v <= 2; v++ {
		size := int64(len("manifest"))
		if _, err := svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"ns", "t"}, Version: int64(v),
			ManifestPath: "file://" + stage(t, again, uint64(v)), ManifestSize: &size}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.DeregisterTable(ctx, api.DeregisterTableRequest{ID: api.ID{"ns", "t"}}); err != nil {
		t.Fatal(err)
	}
	rep, err := GC(ctx, CatalogOf(svc), time.Hour, false, time.Now().Add(48*time.Hour), nil)
	if err != nil || rep.Dropped != 0 || rep.Cleared != 0 {
		t.Fatalf("gc: %+v, %v", rep, err)
	}
	for v := uint64(1); v <= 2; v++ {
		if _, err := os.Stat(final(again, v)); err != nil {
			t.Errorf("gc deleted the deregistered table's version %d: %v", v, err)
		}
	}
}

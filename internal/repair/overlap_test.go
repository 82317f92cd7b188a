package repair

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/objstore"
)

// nestLegacy declares ns$name inside the directory of the table at outer
// (a key) as a catalog written before directories were kept disjoint
// could, with one version, and returns its directory on disk.
func nestLegacy(t *testing.T, env *nstest.Env, svc *namespace.Service, outer, name string) string {
	t.Helper()
	ctx := context.Background()
	locs := redisstate.KeysOf(env.Catalog).Locs()
	if err := env.RDB.ZRem(ctx, string(locs), outer).Err(); err != nil {
		t.Fatal(err)
	}
	loc := outer + "/" + name
	if _, err := svc.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"ns", name}, Location: loc}); err != nil {
		t.Fatal(err)
	}
	if err := env.RDB.ZAdd(ctx, string(locs), redis.Z{Member: outer}).Err(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(env.Root, loc)
	size := int64(len("manifest"))
	if _, err := svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"ns", name}, Version: 1,
		ManifestPath: "file://" + stage(t, dir, 1), ManifestSize: &size}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// keyOf is a table directory's key under the root.
func keyOf(env *nstest.Env, dir string) string {
	return strings.TrimPrefix(dir, env.Root+"/")
}

// A table nested in another's directory (as older catalogs allowed) is
// reported by verify, naming both; verify --repair leaves both tables as
// they were, and a second verify reports the same.
func TestVerifyReportsOverlappingLocations(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	outer := table(t, svc, env.Root, "outer", 2)
	table(t, svc, env.Root, "outer0", 1) // a sibling sharing a prefix: apart
	inner := nestLegacy(t, env, svc, keyOf(env, outer), "inner")

	for _, fix := range []bool{false, true, false} {
		rep, err := Verify(ctx, CatalogOf(svc), fix, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := driftOf(rep, OverlappingLocation)
		if len(got) != 1 || got[0].Table != "ns$inner" || !strings.Contains(got[0].Detail, `"ns$outer"`) || got[0].Repaired {
			t.Fatalf("verify (repair %v): overlapping-location drift %+v; all: %s", fix, got, kinds(rep))
		}
		if len(rep.Drift) != 1 {
			t.Fatalf("verify (repair %v) found more: %s", fix, kinds(rep))
		}
	}
	for _, f := range []string{final(outer, 1), final(outer, 2), final(inner, 1)} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("after verify --repair: %v", err)
		}
	}
}

// tombstone writes the tombstone a drop of the table at loc leaves (as
// namespace's drop writes it).
func tombstone(t *testing.T, env *nstest.Env, loc string, at time.Time) {
	t.Helper()
	h := sha256.Sum256([]byte(loc))
	b, err := json.Marshal(map[string]any{"location": loc, "dropped_at": at})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Objects.Put(context.Background(), namespace.DroppedPrefix+hex.EncodeToString(h[:])+".json", b); err != nil {
		t.Fatal(err)
	}
}

// writeOld writes a file under the root, older than any gc window.
func writeOld(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("rows"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// The attack: a table declared inside a$t1's directory was dropped, its
// tombstone left on the nested location, and a later routine gc deleted
// a live file of a$t1. gc now leaves whatever a live table holds alone: a
// tombstone inside a live table's directory is forgotten with nothing
// deleted, the live directories inside a tombstoned one stay while its
// leftovers go, and a sibling whose name extends the tombstoned one's is
// apart.
func TestGCNeverDeletesALiveTablesFiles(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	outer := table(t, svc, env.Root, "t1", 1)
	live := filepath.Join(outer, "data", "part-0.lance")
	writeOld(t, live)
	long := time.Now().Add(-48 * time.Hour)
	tombstone(t, env, keyOf(env, outer)+"/data", long)
	tombstone(t, env, keyOf(env, outer)[:len(keyOf(env, outer))-1], long) // "…_ns$t" of "…_ns$t1"

	// A dropped directory, released, and a new table declared inside it.
	tombstone(t, env, "gone", long)
	leftover := filepath.Join(env.Root, "gone", "late.lance")
	writeOld(t, leftover)
	if _, err := svc.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"ns", "in"}, Location: "gone/in"}); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(env.Root, "gone", "in")
	size := int64(len("manifest"))
	if _, err := svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"ns", "in"}, Version: 1,
		ManifestPath: "file://" + stage(t, in, 1), ManifestSize: &size}); err != nil {
		t.Fatal(err)
	}
	writeOld(t, filepath.Join(in, "data", "part-0.lance"))

	rep, err := GC(ctx, CatalogOf(svc), time.Hour, false, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{live, final(outer, 1), final(in, 1), filepath.Join(in, "data", "part-0.lance")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("gc deleted a live table's file: %v (report %+v)", err, rep)
		}
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("gc left the leftover of the dropped directory around a live table: %v (report %+v)", err, rep)
	}
	if rep.Dropped != 3 || rep.Cleared != 3 || len(rep.Leftovers) != 1 {
		t.Errorf("gc report %+v: want 3 tombstones, all cleared, one leftover", rep)
	}
	if ds, err := namespace.DroppedTables(ctx, env.Objects); err != nil || len(ds) != 0 {
		t.Errorf("tombstones left: %+v %v", ds, err)
	}
}

// A drop whose deletion is cut at a seam (its tombstone's write, the
// data's deletion, the reservation's release) is still acknowledged, keeps its directory reserved
// (nothing may be declared there or inside it meanwhile), and gc, run
// later, deletes what is left and ends the reservation.
func TestADropCutMidDeletionKeepsItsDirectoryUntilGC(t *testing.T) {
	for _, seam := range []string{"tombstone", "data", "release"} {
		t.Run(seam, func(t *testing.T) {
			env := nstest.New(t)
			ctx := context.Background()
			var armed atomic.Bool
			faulty, err := objstore.OpenWith(ctx, "file://"+env.Root, objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, p objstore.Phase) error {
				if !armed.Load() || p != objstore.Before {
					return nil
				}
				if (seam == "tombstone" && op == objstore.OpPut && strings.HasPrefix(key, namespace.DroppedPrefix)) ||
					(seam == "data" && op == objstore.OpDelete && strings.Contains(key, "_versions/")) {
					return errors.New("injected: " + seam)
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = faulty.Close() }()
			svc := env.Open(t, func(c *namespace.Config) { c.Objects = faulty })
			dir := table(t, svc, env.Root, "gone", 1)
			loc := keyOf(env, dir)
			armed.Store(true)
			if _, err := svc.DropTable(ctx, api.DropTableRequest{ID: api.ID{"ns", "gone"}}); err != nil {
				t.Fatalf("the drop: %v", err)
			}
			armed.Store(false)
			if seam == "release" {
				// The process died after the deletion, before the release
				// (a Redis script, no storage seam): the reservation stays.
				if err := env.RDB.ZAdd(ctx, string(redisstate.KeysOf(env.Catalog).Locs()), redis.Z{Member: loc}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			for _, l := range []string{loc, loc + "/x"} {
				if _, err := svc.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"ns", "next"}, Location: l}); err == nil {
					t.Fatalf("declared at %s while the drop's deletion was unfinished", l)
				}
			}
			if seam == "tombstone" {
				// No tombstone names it: the data stays, and so does the
				// reservation, until a recovery rebuilds the reservations.
				if _, err := os.Stat(final(dir, 1)); err != nil {
					t.Fatalf("data deleted without a tombstone: %v", err)
				}
				if _, err := Recover(ctx, CatalogOf(svc), true); err != nil {
					t.Fatal(err)
				}
			} else { // the tombstone leads gc to what is left, and to the reservation
				if _, err := GC(ctx, CatalogOf(svc), time.Hour, false, time.Now().Add(2*time.Hour), nil); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(final(dir, 1)); !os.IsNotExist(err) {
					t.Fatalf("gc left the dropped table's files: %v", err)
				}
			}
			if _, err := svc.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"ns", "next"}, Location: loc + "/x"}); err != nil {
				t.Fatalf("declaring in the directory once the drop is settled: %v", err)
			}
		})
	}
}

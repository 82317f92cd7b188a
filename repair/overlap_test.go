package repair

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/namespace"
)

// nestLegacy declares ns$name inside the directory of the table at outer
// (a key) as a catalog written before directories were kept disjoint
// could, with one version, and returns its directory on disk.
func nestLegacy(t *testing.T, env *nstest.Env, svc *namespace.Service, outer, name string) string {
	t.Helper()
	ctx := context.Background()
	locs := redisstate.KeysOf(env.Catalog).Locs()
	if err := env.RDB.ZRem(ctx, locs, outer).Err(); err != nil {
		t.Fatal(err)
	}
	loc := outer + "/" + name
	if _, err := svc.DeclareTable(ctx, namespace.DeclareTableRequest{ID: namespace.ID{"ns", name}, Location: loc}); err != nil {
		t.Fatal(err)
	}
	if err := env.RDB.ZAdd(ctx, locs, redis.Z{Member: outer}).Err(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(env.Root, loc)
	size := int64(len("manifest"))
	if _, err := svc.CreateTableVersion(ctx, namespace.CreateTableVersionRequest{ID: namespace.ID{"ns", name}, Version: 1,
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
		rep, err := Verify(ctx, svc, fix, nil)
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
	if _, err := svc.DeclareTable(ctx, namespace.DeclareTableRequest{ID: namespace.ID{"ns", "in"}, Location: "gone/in"}); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(env.Root, "gone", "in")
	size := int64(len("manifest"))
	if _, err := svc.CreateTableVersion(ctx, namespace.CreateTableVersionRequest{ID: namespace.ID{"ns", "in"}, Version: 1,
		ManifestPath: "file://" + stage(t, in, 1), ManifestSize: &size}); err != nil {
		t.Fatal(err)
	}
	writeOld(t, filepath.Join(in, "data", "part-0.lance"))

	rep, err := GC(ctx, svc, time.Hour, false, time.Now(), nil)
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

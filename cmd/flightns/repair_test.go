package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flightns/flightns/internal/testutil/flighttest"
)

// repairJSON is the JSON report of admin repair.
type repairJSON struct {
	DryRun      bool   `json:"dry_run"`
	Snapshot    uint64 `json:"snapshot"`
	Seq         uint64 `json:"seq"`
	Quarantined []struct {
		Key, To, Kind, Detail string
	} `json:"quarantined"`
	LostFirst   uint64   `json:"lost_first"`
	LostLast    uint64   `json:"lost_last"`
	FromLog     uint64   `json:"from_log"`
	Restored    []string `json:"restored"`
	Adopted     []struct{ ID, Location string }
	Verify      *verifyJSON `json:"verify"`
	Snapshotted uint64      `json:"snapshotted"`
	Unrecovered []string    `json:"unrecovered"`
}

// repairEnv is a server's work directory with helpers for damaging and
// repairing its __manifest.
type repairEnv struct {
	t    *testing.T
	work string
	s    *serverProc
}

func (e *repairEnv) manifestDir(sub string) string {
	return filepath.Join(e.work, "flightns-data", "root", "__manifest", sub)
}

func (e *repairEnv) files(sub string) []string {
	e.t.Helper()
	m, err := filepath.Glob(filepath.Join(e.manifestDir(sub), "*.parquet"))
	if err != nil {
		e.t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

func (e *repairEnv) admin(want int, args ...string) string {
	e.t.Helper()
	code, out, errs := runCLI(e.t, e.work, append([]string{"admin"}, args...)...)
	if code != want {
		e.t.Fatalf("flightns admin %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
	}
	return out
}

func (e *repairEnv) repair() repairJSON {
	e.t.Helper()
	out := e.admin(0, "repair", "--format", "json")
	var r repairJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		e.t.Fatalf("not a JSON report: %v\n%s", err, out)
	}
	return r
}

// serve starts the server again; it must open the repaired catalog.
func (e *repairEnv) serve() {
	e.s = startServer(e.t, e.work, nil)
}

func (e *repairEnv) names(q string) []string {
	names := flighttest.Strings(e.t, e.s.flight, q)
	slices.Sort(names)
	return names
}

// The newest snapshot is truncated: no server opens the catalog. Repair
// quarantines it (the bytes are kept), falls back to the older snapshot
// and the segments after it, and nothing is lost.
func TestAdminRepairFallsBackToTheOlderSnapshotAndLosesNothing(t *testing.T) {
	t.Parallel()
	e := &repairEnv{t: t, work: t.TempDir()}
	e.serve()
	loc := declareTable(t, e.s.rest, "a", "t")
	for v := uint64(1); v <= 2; v++ {
		if code := commitVersion(t, e.s.rest, "a$t", loc, v); code != http.StatusOK {
			t.Fatalf("commit %d: HTTP %d", v, code)
		}
	}
	e.admin(0, "compact")
	mustREST(t, e.s.rest, "/v1/namespace/b/create", `{}`, nil)
	if code := commitVersion(t, e.s.rest, "a$t", loc, 3); code != http.StatusOK {
		t.Fatalf("commit 3: HTTP %d", code)
	}
	e.admin(0, "compact")
	mustREST(t, e.s.rest, "/v1/namespace/c/create", `{}`, nil)
	e.s.stop()

	snaps := e.files("_snapshots")
	if len(snaps) != 2 {
		t.Fatalf("snapshots %v, want 2", snaps)
	}
	newest := snaps[1]
	b, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	b = b[:len(b)/2]
	if err := os.WriteFile(newest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	key := "__manifest/_snapshots/" + filepath.Base(newest)

	// A dry run says what it would do and does nothing.
	out := e.admin(0, "repair", "--dry-run")
	if !strings.Contains(out, "would quarantine "+key) || !strings.Contains(out, "chain kept: snapshot ") {
		t.Fatalf("repair --dry-run:\n%s", out)
	}
	if _, err := os.Stat(newest); err != nil {
		t.Fatalf("a dry run moved the snapshot: %v", err)
	}

	r := e.repair()
	if len(r.Quarantined) != 1 || r.Quarantined[0].Key != key || !strings.HasPrefix(r.Quarantined[0].To, "__manifest/_quarantine/") ||
		len(r.Unrecovered) != 0 || r.Verify == nil || r.Verify.Left != 0 || r.Snapshotted == 0 {
		t.Fatalf("repair report: %+v", r)
	}
	kept, err := os.ReadFile(filepath.Join(e.work, "flightns-data", "root", r.Quarantined[0].To))
	if err != nil || !bytes.Equal(kept, b) {
		t.Fatalf("the quarantined snapshot is not the damaged file byte for byte: %v", err)
	}
	if _, err := os.Stat(newest); !os.IsNotExist(err) {
		t.Fatalf("the damaged snapshot is still in the history: %v", err)
	}

	e.serve()
	if ns := e.names("SELECT object_id FROM namespaces"); !slices.Equal(ns, []string{"a", "b", "c"}) {
		t.Fatalf("namespaces after repair: %v", ns)
	}
	if vs := e.names("SELECT CAST(version AS VARCHAR) FROM table_versions WHERE table_id = 'a$t'"); !slices.Equal(vs, []string{"1", "2", "3"}) {
		t.Fatalf("versions after repair: %v", vs)
	}
	if out := e.admin(0, "verify"); !strings.Contains(out, "0 drift, 0 left") {
		t.Fatalf("verify after repair: %s", out)
	}
	// A second repair finds nothing to do.
	if r := e.repair(); len(r.Quarantined) != 0 || len(r.Unrecovered) != 0 {
		t.Fatalf("a second repair: %+v", r)
	}
}

// A segment in the middle of the log is deleted: the segments after it
// cannot be applied and are quarantined; what they held comes back
// exactly from Redis's commit log. Then every file of the history is
// garbage and Redis has lost everything: the tables come back from their
// directories, and the report says what is lost.
func TestAdminRepairRederivesFromRedisAndThenFromStorageAlone(t *testing.T) {
	t.Parallel()
	e := &repairEnv{t: t, work: t.TempDir()}
	e.serve()
	loc := declareTable(t, e.s.rest, "a", "t")
	if code := commitVersion(t, e.s.rest, "a$t", loc, 1); code != http.StatusOK {
		t.Fatalf("commit 1: HTTP %d", code)
	}
	for _, ns := range []string{"b", "c", "d"} {
		mustREST(t, e.s.rest, "/v1/namespace/"+ns+"/create", `{"properties":{"owner":"x"}}`, nil)
	}
	if code := commitVersion(t, e.s.rest, "a$t", loc, 2); code != http.StatusOK {
		t.Fatalf("commit 2: HTTP %d", code)
	}
	e.s.stop()

	segs := e.files("_log")
	if len(segs) < 4 {
		t.Fatalf("segments %v: want at least 4, one per mutation", segs)
	}
	if err := os.Remove(segs[1]); err != nil {
		t.Fatal(err)
	}
	r := e.repair()
	if len(r.Quarantined) != len(segs)-2 || r.LostFirst == 0 || r.FromLog != r.LostFirst || len(r.Unrecovered) != 0 || r.Verify.Left != 0 {
		t.Fatalf("repair after a deleted segment: %+v", r)
	}
	e.serve()
	if ns := e.names("SELECT object_id FROM namespaces"); !slices.Equal(ns, []string{"a", "b", "c", "d"}) {
		t.Fatalf("namespaces after repair: %v", ns)
	}
	if p := e.names("SELECT metadata FROM __manifest WHERE object_type = 'namespace' AND object_id = 'c'"); len(p) != 1 || !strings.Contains(p[0], `"owner":"x"`) {
		t.Fatalf("properties after repair from the log: %v", p)
	}
	if vs := e.names("SELECT CAST(version AS VARCHAR) FROM table_versions WHERE table_id = 'a$t'"); !slices.Equal(vs, []string{"1", "2"}) {
		t.Fatalf("versions after repair: %v", vs)
	}
	e.s.stop()

	// Every file of the history is garbage, and Redis lost everything.
	for _, sub := range []string{"_log", "_snapshots"} {
		for _, f := range e.files(sub) {
			if err := os.WriteFile(f, []byte("PAR1 garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.RemoveAll(filepath.Join(e.work, "flightns-data", "redis")); err != nil {
		t.Fatal(err)
	}
	r = e.repair()
	if r.Snapshot != 0 || r.Seq != 0 || len(r.Adopted) != 1 || r.Adopted[0].ID != "a$t" || r.Verify.Left != 0 || len(r.Unrecovered) == 0 {
		t.Fatalf("repair with no readable chain: %+v", r)
	}
	out := e.admin(0, "repair", "--dry-run")
	if !strings.Contains(out, "chain kept: snapshot") {
		t.Fatalf("dry run after the rebuild:\n%s", out)
	}
	e.serve()
	if ns := e.names("SELECT object_id FROM namespaces"); !slices.Equal(ns, []string{"a"}) {
		t.Fatalf("namespaces rebuilt from storage: %v, want [a] (empty namespaces have no record in storage)", ns)
	}
	var dv struct{ Version struct{ Version int64 } }
	mustREST(t, e.s.rest, "/v1/table/a$t/version/describe", `{}`, &dv)
	if dv.Version.Version != 2 {
		t.Fatalf("table a$t rebuilt at version %d, want 2", dv.Version.Version)
	}
	if code := commitVersion(t, e.s.rest, "a$t", loc, 3); code != http.StatusOK {
		t.Fatalf("commit after the rebuild: HTTP %d", code)
	}
}

package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

func TestClientCommandsAgainstARunningServer(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, nil)
	cli := func(want int, args ...string) (string, string) {
		t.Helper()
		args = append(args, "--flight", s.flight, "--rest", "http://"+s.rest)
		code, out, errs := runCLI(t, work, args...)
		if code != want {
			t.Fatalf("flightns %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
		}
		return out, errs
	}

	// ns
	cli(0, "ns", "create", "sales")
	cli(0, "ns", "create", "sales.eu", "--property", "owner=ops")
	if out, _ := cli(0, "ns", "list"); strings.TrimSpace(out) != "sales" {
		t.Errorf("ns list: %q", out)
	}
	if out, _ := cli(0, "ns", "list", "sales"); strings.TrimSpace(out) != "eu" {
		t.Errorf("ns list sales: %q", out)
	}
	if out, _ := cli(0, "ns", "describe", "sales.eu"); !strings.Contains(out, `"owner": "ops"`) {
		t.Errorf("ns describe: %q", out)
	}
	if _, errs := cli(1, "ns", "describe", "nope"); !strings.Contains(errs, "code 1") {
		t.Errorf("ns describe of a missing namespace: %q", errs)
	}

	// table
	out, _ := cli(0, "table", "declare", "sales.orders")
	var d struct{ Location string }
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Location == "" {
		t.Fatalf("table declare: %q (%v)", out, err)
	}
	for v := uint64(1); v <= 2; v++ {
		if code := commitVersion(t, s.rest, "sales$orders", d.Location, v); code != http.StatusOK {
			t.Fatalf("commit %d: HTTP %d", v, code)
		}
	}
	if out, _ := cli(0, "table", "list", "sales"); strings.TrimSpace(out) != "orders" {
		t.Errorf("table list: %q", out)
	}
	if out, _ := cli(0, "table", "versions", "sales.orders"); !strings.Contains(out, "version") || strings.Count(out, "\n") != 4 {
		t.Errorf("table versions: %q", out)
	}
	if out, _ := cli(0, "table", "describe", "sales.orders"); !strings.Contains(out, d.Location) {
		t.Errorf("table describe: %q", out)
	}

	// query, in every format
	sql := "SELECT object_id, object_type FROM __manifest WHERE object_type <> 'table_version' ORDER BY object_id"
	if out, _ := cli(0, "query", sql); !strings.Contains(out, "sales$eu") || !strings.Contains(out, "(3 rows)") || !strings.Contains(out, "-+-") {
		t.Errorf("query (table): %q", out)
	}
	out, _ = cli(0, "query", "--format", "csv", sql)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 4 || recs[0][0] != "object_id" || recs[3][0] != "sales$orders" {
		t.Errorf("query (csv): %q (%v)", out, err)
	}
	out, _ = cli(0, "query", "--format", "json", sql)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 3 || rows[2]["object_type"] != "table" {
		t.Errorf("query (json): %q (%v)", out, err)
	}
	out, _ = cli(0, "query", "--format", "arrow", sql)
	rdr, err := ipc.NewReader(bytes.NewReader([]byte(out)))
	if err != nil {
		t.Fatalf("query (arrow): %v", err)
	}
	n := 0
	for rdr.Next() {
		n += int(rdr.RecordBatch().NumRows())
	}
	rdr.Release()
	if n != 3 {
		t.Errorf("query (arrow): %d rows", n)
	}
	if _, errs := cli(1, "query", "SELECT * FROM read_csv('/etc/passwd')"); errs == "" {
		t.Errorf("a refused query says nothing")
	}

	// tear down
	cli(0, "table", "deregister", "sales.orders")
	cli(0, "ns", "drop", "sales", "--cascade")
	if out, _ := cli(0, "ns", "list"); strings.TrimSpace(out) != "" {
		t.Errorf("ns list after drop: %q", out)
	}
	s.stop()
}

// finalPath is the final manifest file of version v in a table directory.
func finalPath(location string, v uint64) string {
	return filepath.Join(strings.TrimPrefix(location, "file://"), "_versions", fmt.Sprintf("%020d.manifest", uint64(math.MaxUint64)-v))
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, nil)
	admin := adminCLI(t, work)
	loc := declareTable(t, s.rest, "a", "t")
	for v := uint64(1); v <= 3; v++ {
		if code := commitVersion(t, s.rest, "a$t", loc, v); code != http.StatusOK {
			t.Fatalf("commit %d: HTTP %d", v, code)
		}
	}

	// verify: clean, then a manifest deleted behind the catalog's back
	// between two kept ones (no cleanup does that: drift).
	if out := admin(0, "verify"); !strings.Contains(out, "verified 1 tables, 3 version records: 0 drift") {
		t.Errorf("verify: %q", out)
	}
	if err := os.Remove(finalPath(loc, 2)); err != nil {
		t.Fatal(err)
	}
	if out := admin(1, "verify"); !strings.Contains(out, "missing-manifest: table a$t version 2") {
		t.Errorf("verify after a deleted manifest: %q", out)
	}
	if out := admin(0, "verify", "--repair"); !strings.Contains(out, "repaired") || !strings.Contains(out, "0 left") {
		t.Errorf("verify --repair: %q", out)
	}
	if out := admin(0, "verify"); !strings.Contains(out, "2 version records: 0 drift") {
		t.Errorf("verify after repair: %q", out)
	}
	// A final manifest written around the catalog, above the head.
	if err := os.WriteFile(finalPath(loc, 4), []byte("written by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := admin(0, "verify", "--repair"); !strings.Contains(out, "unrecorded-manifest: table a$t version 4") {
		t.Errorf("verify --repair of an unrecorded manifest: %q", out)
	}
	var dv struct{ Version struct{ Version int64 } }
	mustREST(t, s.rest, "/v1/table/a$t/version/describe", `{}`, &dv)
	if dv.Version.Version != 4 {
		t.Errorf("after repair the latest version is %d, want 4", dv.Version.Version)
	}

	// gc: an old orphan goes, a young one stays.
	old := strings.TrimPrefix(stageVersion(t, loc, 9, "orphan"), "file://")
	young := strings.TrimPrefix(stageVersion(t, loc, 10, "young"), "file://")
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if out := admin(0, "gc", "--dry-run"); !strings.Contains(out, "1 orphaned, 0 deleted") || !strings.Contains(out, filepath.Base(old)) {
		t.Errorf("gc --dry-run: %q", out)
	}
	if out := admin(0, "gc", "--older-than", "24h"); !strings.Contains(out, "1 deleted") {
		t.Errorf("gc: %q", out)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old orphan is still there: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("the young staging object is gone: %v", err)
	}

	// recover: rebuilt from storage while the server runs; it serves on.
	if out := admin(0, "recover"); !strings.HasPrefix(out, "recovered:") {
		t.Errorf("recover: %q", out)
	}
	mustREST(t, s.rest, "/v1/table/a$t/version/describe", `{}`, &dv)
	if dv.Version.Version != 4 {
		t.Errorf("after recover the latest version is %d, want 4", dv.Version.Version)
	}
	if code := commitVersion(t, s.rest, "a$t", loc, 5); code != http.StatusOK {
		t.Errorf("commit after recover: HTTP %d", code)
	}

	// revoke-sessions: a user's sessions end (the server test holds what
	// that does to them); the user is required.
	if out := admin(0, "revoke-sessions", "--name", "ana"); !strings.Contains(out, `every session of "ana" issued until now is revoked`) {
		t.Errorf("revoke-sessions: %q", out)
	}
	admin(2, "revoke-sessions")

	// compact: a snapshot appears.
	if out := admin(0, "compact"); !strings.HasPrefix(out, "compacted:") {
		t.Errorf("compact: %q", out)
	}
	snaps, _ := filepath.Glob(filepath.Join(work, "flightns-data/root/__manifest/_snapshots/*.parquet"))
	if len(snaps) == 0 {
		t.Errorf("no snapshot after admin compact")
	}
	s.stop()

	// With no server running, an admin command runs the data directory's
	// private Redis itself; a second server meanwhile is refused.
	if out := admin(0, "verify"); !strings.Contains(out, "0 drift") {
		t.Errorf("verify without a server: %q", out)
	}
	if out := admin(0, "recover", "--if-needed"); !strings.HasPrefix(out, "recovered:") {
		t.Errorf("recover --if-needed: %q", out)
	}
	admin(2, "frobnicate")
}

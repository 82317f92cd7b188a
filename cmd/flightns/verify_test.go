package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// verifyJSON is the JSON report of admin verify.
type verifyJSON struct {
	Tables         int `json:"tables"`
	VersionRecords int `json:"version_records"`
	Manifest       struct {
		Seq, Snapshot             uint64
		Snapshots, Segments, Rows int
	} `json:"manifest"`
	Drift []struct {
		Kind, Table, Path, Detail string
		Version                   uint64
		Repaired                  bool
	} `json:"drift"`
	DriftCount  int    `json:"drift_count"`
	Left        int    `json:"left"`
	StorageOnly bool   `json:"storage_only"`
	OpenError   string `json:"open_error"`
}

func TestAdminVerifyChecksManifestFilesEvenWhenTheCatalogDoesNotOpen(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, nil)
	admin := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errs := runCLI(t, work, append([]string{"admin", "verify"}, args...)...)
		if code != want {
			t.Fatalf("flightns admin verify %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
		}
		return out, errs
	}
	parse := func(out string) verifyJSON {
		t.Helper()
		var r verifyJSON
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not a JSON report: %v\n%s", err, out)
		}
		return r
	}
	loc := declareTable(t, s.rest, "a", "t")
	for v := uint64(1); v <= 2; v++ {
		if code := commitVersion(t, s.rest, "a$t", loc, v); code != http.StatusOK {
			t.Fatalf("commit %d: HTTP %d", v, code)
		}
	}

	// Clean, next to the running server: records and __manifest agree
	// with storage (a namespace, a table, two version rows).
	out, _ := admin(0, "--format", "json")
	r := parse(out)
	if r.Tables != 1 || r.VersionRecords != 2 || r.Drift == nil || len(r.Drift) != 0 || r.Left != 0 || r.Manifest.Rows != 4 || r.Manifest.Segments == 0 || r.StorageOnly {
		t.Fatalf("clean catalog: %s", out)
	}
	if out, _ := admin(0); !strings.Contains(out, "__manifest in storage: 4 rows at catalog sequence") ||
		!strings.Contains(out, "verified 1 tables, 2 version records: 0 drift, 0 left") {
		t.Fatalf("clean catalog (text): %q", out)
	}
	admin(2, "--format", "yaml")
	s.stop()

	// The newest snapshot is garbage: no server (and no catalog) opens any
	// more, and verify still says which file is wrong, from storage alone.
	bad := filepath.Join(work, "flightns-data", "root", "__manifest", "_snapshots", "09999999999999999999.parquet")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("PAR1 garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs := admin(1)
	if !strings.Contains(out, "unreadable-manifest-file: __manifest/_snapshots/09999999999999999999.parquet: not a Parquet file") ||
		!strings.Contains(out, "verified __manifest in storage only (the catalog does not open): 1 drift, 1 left") ||
		!strings.Contains(errs, "opening the catalog") {
		t.Fatalf("garbage snapshot:\nstdout: %s\nstderr: %s", out, errs)
	}
	out, _ = admin(1, "--format", "json")
	r = parse(out)
	if !r.StorageOnly || r.OpenError == "" || r.Left != 1 || len(r.Drift) != 1 || r.Drift[0].Kind != "unreadable-manifest-file" ||
		r.Drift[0].Path != "__manifest/_snapshots/09999999999999999999.parquet" || r.Manifest.Rows != 4 {
		t.Fatalf("garbage snapshot (json): %s", out)
	}
}

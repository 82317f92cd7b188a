package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runScenario runs one scenario end to end and returns its results,
// read back from the JSON report as a user would.
func runScenario(t *testing.T, cfg Config) []Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	cfg.Progress = &progress
	rep, err := Run(ctx, cfg)
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("the report is not JSON: %v", err)
	}
	return back.Results
}

// cleanup-s3 on 3 tables × 12 versions: for each mode a versions row and
// an objects row; every cleanup pruned all but the latest version of its
// table, deleted the pruned manifests (and, past the grace period, their
// transaction files), and counted S3 requests for it.
func TestCleanupS3ScenarioPrunesEveryOldVersion(t *testing.T) {
	tables, versions := cleanupTables, cleanupVersions
	cleanupTables, cleanupVersions = 3, 12
	defer func() { cleanupTables, cleanupVersions = tables, versions }()
	results := runScenario(t, Config{Scenarios: []string{"cleanup-s3"}, Clients: []int{1}})

	got := map[string]Result{}
	for _, r := range results {
		got[r.Scenario+"/"+r.Backend] = r
	}
	if len(results) != 4 || len(got) != 4 {
		t.Fatalf("%d results, want cleanup-s3/versions and cleanup-s3/objects for minio and minio-after-grace: %+v", len(results), results)
	}
	pruned := int64(cleanupTables * (cleanupVersions - cleanupRetain))
	for _, m := range []struct {
		backend      string
		filesPerPrun int64 // objects deleted per pruned version
	}{{"minio", 1}, {"minio-after-grace", 2}} {
		v, o := got["cleanup-s3/versions/"+m.backend], got["cleanup-s3/objects/"+m.backend]
		if v.Ops != pruned || v.Errors != 0 {
			t.Errorf("%s: pruned %d versions with %d failed cleanups, want %d and none: %s %s", m.backend, v.Ops, v.Errors, pruned, v.FirstError, v.Note)
		}
		if o.Ops != m.filesPerPrun*pruned {
			t.Errorf("%s: deleted %d objects, want %d (%d per pruned version): %s", m.backend, o.Ops, m.filesPerPrun*pruned, m.filesPerPrun, o.Note)
		}
		for _, r := range []Result{v, o} {
			if r.Clients != 1 || r.Seconds <= 0 || r.OpsPerSec <= 0 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms || r.S3PerOp <= 0 {
				t.Errorf("%s/%s: clients %d, %.3f s, %.1f/s, p50 %.2f p99 %.2f ms, %.2f S3 requests per op", r.Scenario, r.Backend, r.Clients, r.Seconds, r.OpsPerSec, r.P50Ms, r.P99Ms, r.S3PerOp)
			}
			if !strings.Contains(r.Note, "manifests left") || !strings.Contains(r.Note, "DELETE-BATCH") {
				t.Errorf("%s/%s: the note does not say what is left and which requests ran: %s", r.Scenario, r.Backend, r.Note)
			}
		}
		if left := cleanupTables * cleanupRetain; !strings.Contains(v.Note, strconv.Itoa(left)+" manifests left") {
			t.Errorf("%s: want %d manifests left: %s", m.backend, left, v.Note)
		}
	}
}

// commit-maintainer-s3 at one level, 2 rounds: a without row, a with
// row for each cadence of the maintainer and a row of what it did; each
// with row's ratio is its p99 ÷ without's, and the maintainer pruned
// versions while the commits ran.
func TestCommitMaintainerScenarioComparesP99WithAndWithout(t *testing.T) {
	tables := maintainerTables
	maintainerTables = 4
	defer func() { maintainerTables = tables }()
	results := runScenario(t, Config{Scenarios: []string{"commit-maintainer-s3"}, Clients: []int{2}, Rounds: 2, Duration: 500 * time.Millisecond})

	got := map[string]Result{}
	for _, r := range results {
		got[strings.TrimPrefix(r.Scenario, "commit-maintainer-s3/")] = r
		if r.Backend != "minio" || r.Clients != 2 || r.Errors != 0 {
			t.Errorf("%s: backend %q, %d clients, %d errors (%s)", r.Scenario, r.Backend, r.Clients, r.Errors, r.FirstError)
		}
	}
	if len(results) != 5 || len(got) != 5 {
		t.Fatalf("%d results, want without, with, with-1s, maintainer and maintainer-1s: %+v", len(results), results)
	}
	wo := got["without"]
	for _, name := range []string{"without", "with", "with-1s"} {
		r := got[name]
		if r.Ops <= 0 || r.Conflicts != 0 || r.OpsPerSec <= 0 || r.P50Ms <= 0 || r.P95Ms < r.P50Ms || r.P99Ms < r.P95Ms {
			t.Errorf("%s: %d commits, %d conflicts, %.1f/s, p50 %.2f p95 %.2f p99 %.2f ms", r.Scenario, r.Ops, r.Conflicts, r.OpsPerSec, r.P50Ms, r.P95Ms, r.P99Ms)
		}
		if r.Seconds < 2*0.5 {
			t.Errorf("%s: %.2f s measured, want both rounds' 0.5 s", r.Scenario, r.Seconds)
		}
		if name == "without" {
			continue
		}
		if want := r.P99Ms / wo.P99Ms; r.Ratio != want || r.Ceiling == "" {
			t.Errorf("%s: ratio %.3f (ceiling %q), want p99 with ÷ without = %.3f", r.Scenario, r.Ratio, r.Ceiling, want)
		}
		if !strings.Contains(r.Note, "versions pruned") || !strings.Contains(r.Note, "target ≤ 1.2") {
			t.Errorf("%s: the note does not say what the maintainer did or the target: %s", r.Scenario, r.Note)
		}
	}
	// Back to back, the maintainer cleans up the tables the commits
	// moved; a pass a second may find nothing to do in two half seconds.
	if m := got["maintainer"]; m.Ops <= 0 || m.OpsPerSec <= 0 || m.P50Ms <= 0 {
		t.Errorf("the maintainer pruned %d versions (%.1f/s), passes p50 %.2f ms: %s", m.Ops, m.OpsPerSec, m.P50Ms, m.Note)
	}
	if m := got["maintainer-1s"]; m.P50Ms <= 0 || !strings.Contains(m.Note, "every 1s") {
		t.Errorf("maintainer-1s: passes p50 %.2f ms: %s", m.P50Ms, m.Note)
	}
}

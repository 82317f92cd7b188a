package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The commit-cpu scenario, end to end against the real flightns binary
// in a short form (300 commits at 1 and 2 writers): a row per level with
// every commit acknowledged and the CPU time of the server, its SQL
// worker and Redis per commit, all read from /proc. What the time is,
// the scenario reports; this test does not assert it.
func TestCommitCPUScenario(t *testing.T) {
	servingFlightns(t)
	n := commitCPUCommits
	commitCPUCommits = 300
	defer func() { commitCPUCommits = n }()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Config{Scenarios: []string{"commit-cpu"}, Clients: []int{1, 2, 32}, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d rows, want one for 1 and one for 2 writers (32 is above the scenario's levels): %+v", len(rep.Results), rep.Results)
	}
	for i, r := range rep.Results {
		if r.Scenario != "commit-cpu" || r.Backend != "tmpfs" || r.Clients != []int{1, 2}[i] {
			t.Errorf("row %d: %s/%s with %d clients", i, r.Scenario, r.Backend, r.Clients)
		}
		if r.Ops < 300 || r.Errors != 0 || r.Conflicts != 0 || r.OpsPerSec <= 0 {
			t.Errorf("%d clients: %d commits, %d failed, %d conflicts, %.0f/s", r.Clients, r.Ops, r.Errors, r.Conflicts, r.OpsPerSec)
		}
		if r.ServerCPUMs <= 0 || r.RedisCPUMs <= 0 {
			t.Errorf("%d clients: CPU per commit: server %.3f ms, Redis %.3f ms", r.Clients, r.ServerCPUMs, r.RedisCPUMs)
		}
		for _, want := range []string{"flightns serve", "SQL worker", "all together", "LanceDB-shaped"} {
			if !strings.Contains(r.Note, want) {
				t.Errorf("%d clients: the note lacks %q: %s", r.Clients, want, r.Note)
			}
		}
	}
}

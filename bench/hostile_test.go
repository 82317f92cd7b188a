package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The hostile-queries scenario, end to end against the real flightns
// binary in both isolation modes: every result is there and sane, the
// commits had no errors, and the hostile phase really ran queries. Speed
// is what the scenario reports, not what this test asserts.
func TestHostileQueriesScenario(t *testing.T) {
	servingFlightns(t)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	// The process mode only: the in-process mode is the same code with
	// another flag, and its runaway queries hold the server for long
	// after (what the scenario exists to show), which `make test` need
	// not wait for.
	rep, err := Run(ctx, Config{Scenarios: []string{"hostile-queries"}, Backends: []string{"process"}, Clients: []int{2}, Duration: time.Second, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("progress:\n%s", progress.String())

	got := map[string]Result{}
	for _, r := range rep.Results {
		key := r.Scenario + "/" + r.Backend
		if _, dup := got[key]; dup {
			t.Errorf("%s: more than one result", key)
		}
		got[key] = r
	}
	if len(rep.Results) != 5 {
		t.Errorf("%d results, want 5", len(rep.Results))
	}
	for _, mode := range []string{"process"} {
		quiet, okQ := got["hostile-queries/quiet/"+mode]
		hostile, okH := got["hostile-queries/hostile/"+mode]
		queries, okQs := got["hostile-queries/queries/"+mode]
		nsQuiet, okNQ := got["hostile-queries/namespace-quiet/"+mode]
		nsHostile, okNH := got["hostile-queries/namespace-hostile/"+mode]
		if !okQ || !okH || !okQs || !okNQ || !okNH {
			t.Errorf("%s: missing results (quiet %v, hostile %v, queries %v, namespace %v/%v)", mode, okQ, okH, okQs, okNQ, okNH)
			continue
		}
		for _, r := range []Result{quiet, hostile} {
			if r.Clients != 2 || r.Ops <= 0 || r.OpsPerSec <= 0 || r.P50Ms <= 0 || r.P95Ms < r.P50Ms || r.P99Ms < r.P95Ms {
				t.Errorf("%s %s: clients=%d ops=%d ops/s=%.0f p50=%.3f p95=%.3f p99=%.3f",
					mode, r.Scenario, r.Clients, r.Ops, r.OpsPerSec, r.P50Ms, r.P95Ms, r.P99Ms)
			}
			if r.Errors != 0 {
				t.Errorf("%s %s: %d commits failed", mode, r.Scenario, r.Errors)
			}
		}
		if hostile.Ceiling != "hostile-queries/quiet" || hostile.Ratio <= 0 {
			t.Errorf("%s: hostile ceiling %q ratio %.3f", mode, hostile.Ceiling, hostile.Ratio)
		}
		if want := hostile.OpsPerSec / quiet.OpsPerSec; hostile.Ratio < want*0.999 || hostile.Ratio > want*1.001 {
			t.Errorf("%s: ratio %.4f, want hostile/quiet ops/s = %.4f", mode, hostile.Ratio, want)
		}
		if queries.Ops <= 0 || queries.Clients != hostileQueryClients {
			t.Errorf("%s: the hostile phase answered %d queries from %d clients; note: %s", mode, queries.Ops, queries.Clients, queries.Note)
		}
		if !strings.Contains(hostile.Note, "queries sent") || !strings.Contains(hostile.Note, "peak RSS") || !strings.Contains(quiet.Note, "peak RSS") {
			t.Errorf("%s: notes lack the queries or the peak RSS:\n%s\n%s", mode, quiet.Note, hostile.Note)
		}
		if strings.Contains(hostile.Note, "peak RSS of the server and its children 0 MiB") {
			t.Errorf("%s: no resident memory sampled: %s", mode, hostile.Note)
		}
		for _, r := range []Result{nsQuiet, nsHostile} {
			if r.Ops+r.Errors <= 0 || r.P50Ms <= 0 {
				t.Errorf("%s %s: no CreateNamespace probe (ops=%d errors=%d p50=%.3f)", mode, r.Scenario, r.Ops, r.Errors, r.P50Ms)
			}
		}
	}
}

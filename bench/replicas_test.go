package bench

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The replicas scenario, end to end against the real flightns binary: a
// result for each kind, replica count and client level, no failed
// request, every replica answered its share, and each ratio is the rate
// over one replica's. Speed is what the scenario reports, not what this
// test asserts.
func TestReplicasScenario(t *testing.T) {
	servingFlightns(t)
	tables := replicaTables
	replicaTables = 64
	defer func() { replicaTables = tables }()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Config{Scenarios: []string{"replicas"}, Clients: []int{3}, Duration: 500 * time.Millisecond, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("progress:\n%s", progress.String())

	got := map[string]Result{}
	for _, r := range rep.Results {
		if _, dup := got[r.Scenario]; dup {
			t.Errorf("%s: more than one result", r.Scenario)
		}
		got[r.Scenario] = r
	}
	if len(rep.Results) != 2*len(replicaCounts) {
		t.Errorf("%d results, want %d", len(rep.Results), 2*len(replicaCounts))
	}
	for _, kind := range []string{"commits", "create-namespace"} {
		one := got["replicas:"+kind+":1"]
		for _, n := range replicaCounts {
			name := fmt.Sprintf("replicas:%s:%d", kind, n)
			r, ok := got[name]
			if !ok {
				t.Errorf("%s: missing", name)
				continue
			}
			if r.Backend != "file" || r.Clients != 3 || r.Ops <= 0 || r.OpsPerSec <= 0 || r.P50Ms <= 0 || r.P95Ms < r.P50Ms || r.P99Ms < r.P95Ms {
				t.Errorf("%s: backend=%q clients=%d ops=%d ops/s=%.0f p50=%.3f p95=%.3f p99=%.3f",
					name, r.Backend, r.Clients, r.Ops, r.OpsPerSec, r.P50Ms, r.P95Ms, r.P99Ms)
			}
			if r.Errors != 0 {
				t.Errorf("%s: %d requests failed", name, r.Errors)
			}
			if want := r.OpsPerSec / one.OpsPerSec; r.Ceiling != "replicas:"+kind+":1" || r.Ratio < want*0.999 || r.Ratio > want*1.001 {
				t.Errorf("%s: ceiling %q ratio %.4f, want %q and ops/s over one replica's = %.4f", name, r.Ceiling, r.Ratio, "replicas:"+kind+":1", want)
			}
			// Three clients: client c at replica c mod n, so every replica
			// answered some.
			m := reAnswers.FindStringSubmatch(r.Note)
			if m == nil {
				t.Errorf("%s: the note does not say the answers by replica: %s", name, r.Note)
			} else if counts := strings.Split(m[1], "/"); len(counts) != n || slices.Contains(counts, "0") {
				t.Errorf("%s: answers by replica %s, want %d replicas each answering", name, m[1], n)
			}
			if !strings.Contains(r.Note, "one file:// root shared by them") || !strings.Contains(r.Note, "cores busy") {
				t.Errorf("%s: the note does not say the backend or the CPU use: %s", name, r.Note)
			}
		}
	}
}

var reAnswers = regexp.MustCompile(`answers by replica ([0-9/]+);`)

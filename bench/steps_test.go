package bench

import (
	"testing"
	"time"
)

// commit-steps on s3 commits through the full s3:// manifest paths a
// REST client may send to a catalog rooted at a whole bucket, and splits
// the server's time into its steps; the promotion is a request to MinIO,
// so it is not free.
func TestCommitStepsRunsOnS3(t *testing.T) {
	results := runScenario(t, Config{Scenarios: []string{"commit-steps"}, Backends: []string{"s3"}, Duration: 500 * time.Millisecond})
	if len(results) != 1 || results[0].Backend != "s3" {
		t.Fatalf("results %+v, want one on s3", results)
	}
	r := results[0]
	if r.Ops == 0 || r.Errors != 0 || r.ServerP50Ms <= 0 {
		t.Fatalf("commit-steps on s3: %+v", r)
	}
	for _, s := range commitSteps {
		if _, ok := r.StepsP50Ms[s]; !ok {
			t.Errorf("no time for step %s: %v", s, r.StepsP50Ms)
		}
	}
	if r.StepsP50Ms["promote"] <= 0 {
		t.Errorf("the promotion took no time on s3: %v", r.StepsP50Ms)
	}
}

package obs

import (
	"context"
	"math"
	"testing"
	"time"
)

// The history's samples are the interval's rates and quantiles, as
// Prometheus would compute them from two readings; an interval without
// data has none (NaN), and only the last samples are kept.
func TestHistorySamplesIntervals(t *testing.T) {
	m := NewMetrics()
	lag := 7.0
	h := NewHistory(m, time.Second, 3, func(context.Context) (float64, bool) { return lag, true })
	ctx := context.Background()
	t0 := time.Unix(1000, 0)
	h.Sample(ctx, t0) // the first reading: no interval yet
	if n := len(h.Samples()); n != 0 {
		t.Fatalf("%d samples after one reading", n)
	}
	for i := 0; i < 100; i++ {
		took := time.Millisecond
		if i >= 90 {
			took = 100 * time.Millisecond
		}
		m.Request("rest", "CreateTableVersion", "OK", took)
	}
	h.Sample(ctx, t0.Add(2*time.Second))
	s := h.Samples()[0]
	op := s.Ops["rest CreateTableVersion"]
	if op.PerS != 50 || s.CommitsPerS != 50 {
		t.Fatalf("rates %+v, commits %v", op, s.CommitsPerS)
	}
	// p50 lies in the bucket of 1 ms (0.8–1.6 ms), p99 in that of 100 ms
	// (51.2–102.4 ms).
	if s.RequestP50MS < 0.8 || s.RequestP50MS > 1.6 || s.RequestP99MS < 51.2 || s.RequestP99MS > 102.4 {
		t.Fatalf("quantiles %v %v", s.RequestP50MS, s.RequestP99MS)
	}
	if s.MaterializerLag != 7 || !math.IsNaN(s.ClaimP50MS) || !math.IsNaN(s.GroupCommitSize) {
		t.Fatalf("sample %+v", s)
	}
	// A quiet interval: zero rates, no quantiles, no operations.
	h.Sample(ctx, t0.Add(3*time.Second))
	q := h.Samples()[1]
	if q.CommitsPerS != 0 || !math.IsNaN(q.RequestP50MS) || len(q.Ops) != 0 {
		t.Fatalf("quiet sample %+v", q)
	}
	for i := 4; i < 10; i++ {
		h.Sample(ctx, t0.Add(time.Duration(i)*time.Second))
	}
	if got := h.Samples(); len(got) != 3 || !got[2].At.Equal(t0.Add(9*time.Second)) {
		t.Fatalf("kept %d samples, last at %v", len(got), got[len(got)-1].At)
	}
}

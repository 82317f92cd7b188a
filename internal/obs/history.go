package obs

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// History keeps the last samples of this process's own metrics, one every
// interval, for the web console's charts: rates and latency quantiles of
// each interval, computed from the difference between two readings of the
// registry (what Prometheus's rate and histogram_quantile would say of
// that interval). Nothing outside the registry is read but the one gauge
// it is given (the materializer's lag).
type History struct {
	m     *Metrics
	every time.Duration
	keep  int
	lag   func(context.Context) (float64, bool)

	mu      sync.Mutex
	last    *reading
	samples []Sample // oldest first, at most keep
}

// Sample is one interval's values; NaN where the interval had no data
// (no commit, no request).
type Sample struct {
	At              time.Time
	CommitsPerS     float64
	ConflictsPerS   float64
	ClaimP50MS      float64
	ClaimP99MS      float64
	RequestP50MS    float64
	RequestP99MS    float64
	GroupCommitSize float64 // mean sequences per __manifest segment
	MaterializerLag float64 // catalog sequences logged but not yet in __manifest
	// Ops holds, by "surface op", the operations that had requests.
	Ops map[string]OpSample
}

// OpSample is one operation's requests in one interval.
type OpSample struct {
	PerS, P50MS, P99MS float64
}

// reading is the registry's cumulative values at one time.
type reading struct {
	at        time.Time
	committed float64
	conflicts float64
	claim     hist
	request   hist
	group     hist
	ops       map[string]hist
}

// hist is a cumulative histogram: bucket upper bounds and counts.
type hist struct {
	bounds []float64
	counts []float64 // cumulative per bound, as Prometheus keeps them
	count  float64
	sum    float64
}

// NewHistory samples m every interval and keeps the last keep samples;
// lag, when set, reads the materializer's lag at each sample.
func NewHistory(m *Metrics, every time.Duration, keep int, lag func(context.Context) (float64, bool)) *History {
	return &History{m: m, every: every, keep: keep, lag: lag}
}

// Every is the sampling interval.
func (h *History) Every() time.Duration { return h.every }

// Run samples until ctx ends.
func (h *History) Run(ctx context.Context) {
	t := time.NewTicker(h.every)
	defer t.Stop()
	h.Sample(ctx, time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			h.Sample(ctx, now)
		}
	}
}

// Samples returns a copy of the samples, oldest first.
func (h *History) Samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Sample(nil), h.samples...)
}

// Sample reads the registry now and records the interval since the
// previous reading (the first reading records nothing).
func (h *History) Sample(ctx context.Context, now time.Time) {
	r := h.read(now)
	lag, lagOK := math.NaN(), false
	if h.lag != nil {
		lctx, cancel := context.WithTimeout(ctx, h.every)
		lag, lagOK = h.lag(lctx)
		cancel()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.last
	h.last = r
	if prev == nil {
		return
	}
	secs := r.at.Sub(prev.at).Seconds()
	if secs <= 0 {
		return
	}
	s := Sample{At: now, Ops: map[string]OpSample{},
		CommitsPerS:   (r.committed - prev.committed) / secs,
		ConflictsPerS: (r.conflicts - prev.conflicts) / secs,
	}
	s.ClaimP50MS, s.ClaimP99MS = r.claim.since(prev.claim).quantilesMS()
	s.RequestP50MS, s.RequestP99MS = r.request.since(prev.request).quantilesMS()
	g := r.group.since(prev.group)
	s.GroupCommitSize = math.NaN()
	if g.count > 0 {
		s.GroupCommitSize = g.sum / g.count
	}
	s.MaterializerLag = math.NaN()
	if lagOK {
		s.MaterializerLag = lag
	}
	for k, cur := range r.ops {
		d := cur.since(prev.ops[k])
		if d.count == 0 {
			continue
		}
		p50, p99 := d.quantilesMS()
		s.Ops[k] = OpSample{PerS: d.count / secs, P50MS: p50, P99MS: p99}
	}
	h.samples = append(h.samples, s)
	if len(h.samples) > h.keep {
		h.samples = append(h.samples[:0], h.samples[len(h.samples)-h.keep:]...)
	}
}

// read gathers the registry's cumulative values.
func (h *History) read(now time.Time) *reading {
	r := &reading{at: now, ops: map[string]hist{}}
	families, err := h.m.reg.Gather()
	if err != nil {
		return r // a collector failed: what was gathered still counts
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "flightns_commits_total":
				if label(m, "result") == "committed" {
					r.committed += m.GetCounter().GetValue()
				}
			case "flightns_conflicts_total":
				r.conflicts += m.GetCounter().GetValue()
			case "flightns_claim_duration_seconds":
				r.claim = r.claim.plus(m.GetHistogram())
			case "flightns_request_duration_seconds":
				r.request = r.request.plus(m.GetHistogram())
				k := label(m, "surface") + " " + label(m, "op")
				r.ops[k] = r.ops[k].plus(m.GetHistogram())
			case "flightns_group_commit_size":
				r.group = r.group.plus(m.GetHistogram())
			}
		}
	}
	return r
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// plus adds a Prometheus histogram to h (same buckets: one metric's).
func (h hist) plus(p *dto.Histogram) hist {
	out := hist{count: h.count + float64(p.GetSampleCount()), sum: h.sum + p.GetSampleSum()}
	for i, b := range p.GetBucket() {
		out.bounds = append(out.bounds, b.GetUpperBound())
		c := float64(b.GetCumulativeCount())
		if i < len(h.counts) {
			c += h.counts[i]
		}
		out.counts = append(out.counts, c)
	}
	return out
}

// since is what h observed after prev (an empty prev: all of it).
func (h hist) since(prev hist) hist {
	out := hist{bounds: h.bounds, count: h.count - prev.count, sum: h.sum - prev.sum}
	for i, c := range h.counts {
		if i < len(prev.counts) {
			c -= prev.counts[i]
		}
		out.counts = append(out.counts, c)
	}
	return out
}

// quantilesMS are the 50th and 99th percentiles in milliseconds, NaN with
// no observation.
func (h hist) quantilesMS() (p50, p99 float64) {
	return h.quantile(0.5) * 1000, h.quantile(0.99) * 1000
}

// quantile interpolates linearly within the bucket that holds rank q, as
// histogram_quantile does; past the last bound it answers that bound.
func (h hist) quantile(q float64) float64 {
	if h.count <= 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.count
	i := sort.Search(len(h.counts), func(i int) bool { return h.counts[i] >= rank })
	if i == len(h.counts) {
		return h.bounds[len(h.bounds)-1]
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = h.bounds[i-1], h.counts[i-1]
	}
	in := h.counts[i] - below
	if in <= 0 {
		return h.bounds[i]
	}
	return lo + (h.bounds[i]-lo)*(rank-below)/in
}

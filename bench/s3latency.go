package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightns/flightns/internal/s3proxy"
)

// The latency every S3 request gets in commit-s3-latency: 15 ms ± 5 ms,
// about what a bucket in the same region answers a small request in.
const (
	s3MinLatency = 10 * time.Millisecond
	s3MaxLatency = 20 * time.Millisecond
)

// commitS3LatencyScenario measures single-table commits on s3:// when
// every request to the store takes as long as it does over a network:
// a MinIO server behind s3proxy, which delays each
// request 10–20 ms and injects no errors. A lone writer first shows how
// many requests one commit's Put sends and how many of them it waits for
// one after another (the critical path); then each --clients level runs,
// and its ratio compares the commits/s with what writers that never wait
// for each other would reach: clients / (the lone writer's mean commit).
func commitS3LatencyScenario() Scenario {
	return Scenario{
		Name: "commit-s3-latency",
		Description: "single-table commits over 1,024 tables on s3:// with 15 ms ± 5 ms per S3 request (s3proxy, no errors): " +
			"S3 requests per commit and how many are sequential (lone writer), and commits/s at each --clients level against clients / lone-writer latency",
		Run:   runS3Latency,
		Steps: func(cfg Config) int { return len(cfg.Clients) + 1 },
	}
}

func runS3Latency(ctx context.Context, cfg Config, rep *Report) error {
	rdb, stop, err := scenarioRedis(ctx, cfg)
	if err != nil {
		return err
	}
	defer stop()

	proxy, stopS3, err := startS3Proxy(ctx)
	if err != nil {
		return err
	}
	defer stopS3()
	trace := &s3Trace{}
	proxy.Trace = trace.observe
	objs, err := openS3(ctx, proxy.URL)
	if err != nil {
		return err
	}
	// The tables' first versions are written without the latency.
	w, err := newCommitterOn(ctx, rdb, objs, func() { _ = objs.Close() }, "s3", "bench-s3lat", commitTables, 1, nil)
	if err != nil {
		return err
	}
	defer w.close()
	proxy.Set(s3proxy.Faults{MinLatency: s3MinLatency, MaxLatency: s3MaxLatency})

	lone, err := s3LoneWriter(ctx, cfg, w, trace)
	if err != nil {
		return err
	}
	cfg.add(rep, lone.result)
	for _, clients := range cfg.Clients {
		trace.start()
		r := Measure(ctx, clients, cfg.Duration, w.commit)
		inFlight, took := trace.load(r.Seconds)
		trace.stop()
		r.Scenario, r.Backend = "commit-s3-latency", "s3"
		ideal := float64(clients) / lone.mean.Seconds()
		if r.OpsPerSec > 0 {
			r.Ceiling, r.Ratio = "clients / lone-writer mean latency", r.OpsPerSec/ideal
		}
		r.Note = fmt.Sprintf("over %d tables; %d writers that never waited for each other would make %.0f commits/s (target ratio ≥ 0.8 at 128); "+
			"S3 requests: %.1f in flight on average, %.1f ms each at the proxy", commitTables, clients, ideal, inFlight, took)
		cfg.add(rep, r)
	}
	return nil
}

// load is the mean number of requests in flight at the proxy over the
// last seconds of tracing, and their mean duration in milliseconds.
func (t *s3Trace) load(seconds float64) (float64, float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.ops) == 0 || seconds <= 0 {
		return 0, 0
	}
	var sum time.Duration
	for _, o := range t.ops {
		sum += o.end.Sub(o.start)
	}
	return sum.Seconds() / seconds, float64(sum) / float64(len(t.ops)) / float64(time.Millisecond)
}

// loneS3 is what a lone writer showed.
type loneS3 struct {
	result Result
	mean   time.Duration // a whole commit: the writer's staging PUT and Put
}

// s3LoneWriter commits with one writer for the measurement's duration
// and counts, for each commit's Put, the S3 requests on its table's keys
// that ran within it, and the longest chain of them that ran one after
// another.
func s3LoneWriter(ctx context.Context, cfg Config, w *committer, trace *s3Trace) (loneS3, error) {
	var mu sync.Mutex
	var requests, sequential []int
	var putTook []time.Duration
	w.onPut = func(table string, start, end time.Time) {
		ops := trace.within("/bench/"+table+"/", start, end)
		mu.Lock()
		requests = append(requests, len(ops))
		sequential = append(sequential, longestChain(ops))
		putTook = append(putTook, end.Sub(start))
		mu.Unlock()
	}
	trace.start()
	r := Measure(ctx, 1, cfg.Duration, w.commit)
	trace.stop()
	w.onPut = nil
	if r.Ops == 0 {
		return loneS3{}, fmt.Errorf("commit-s3-latency: a lone writer committed nothing in %s", cfg.Duration)
	}
	mean := time.Duration(r.Seconds / float64(r.Ops+r.Conflicts+r.Errors) * float64(time.Second))
	r.Scenario, r.Backend = "commit-s3-latency:lone-writer", "s3"
	r.Note = fmt.Sprintf("per commit's Put: %s S3 requests, %s of them sequential (target ≤ 2); Put p50 %.1f ms; a whole commit (with the writer's staging PUT) %.1f ms on average; every request delayed %s–%s",
		spread(requests), spread(sequential), median(putTook), float64(mean)/float64(time.Millisecond), s3MinLatency, s3MaxLatency)
	return loneS3{result: r, mean: mean}, nil
}

// spread shows the distinct values of counts with how often each came.
func spread(counts []int) string {
	seen := map[int]int{}
	for _, c := range counts {
		seen[c]++
	}
	keys := make([]int, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d (%d×)", k, seen[k]))
	}
	return strings.Join(parts, " or ")
}

// s3Op is one request to the store, as the proxy saw it.
type s3Op struct {
	path       string
	start, end time.Time
}

// s3Trace records the store's requests while on.
type s3Trace struct {
	mu  sync.Mutex
	on  bool
	ops []s3Op
}

func (t *s3Trace) start() { t.mu.Lock(); t.on, t.ops = true, nil; t.mu.Unlock() }
func (t *s3Trace) stop()  { t.mu.Lock(); t.on = false; t.mu.Unlock() }

func (t *s3Trace) observe(r s3proxy.Request) {
	t.mu.Lock()
	if t.on {
		t.ops = append(t.ops, s3Op{path: r.Path, start: r.Start, end: r.End})
	}
	t.mu.Unlock()
}

// within returns the requests on paths under prefix that started and
// ended between start and end.
func (t *s3Trace) within(prefix string, start, end time.Time) []s3Op {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []s3Op
	for _, o := range t.ops {
		if strings.HasPrefix(o.path, prefix) && !o.start.Before(start) && !o.end.After(end) {
			out = append(out, o)
		}
	}
	return out
}

// longestChain is the most requests of ops that ran one after another,
// each starting after the one before it ended: the round trips a commit
// waited for in sequence.
func longestChain(ops []s3Op) int {
	sorted := slices.Clone(ops)
	slices.SortFunc(sorted, func(a, b s3Op) int { return a.end.Compare(b.end) })
	depth := make([]int, len(sorted))
	best := 0
	for i, o := range sorted {
		depth[i] = 1
		for j := range i {
			if !sorted[j].end.After(o.start) {
				depth[i] = max(depth[i], depth[j]+1)
			}
		}
		best = max(best, depth[i])
	}
	return best
}

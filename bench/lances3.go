package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/s3proxy"
)

// lanceS3Latency is the delay every S3 request gets in the slow half of
// lance-s3: about what a small request to a bucket in the same region
// takes.
const lanceS3Latency = 10 * time.Millisecond

// lanceS3Trailing is how long after the last add the requests are still
// counted: the work a commit leaves past its reply (the staging object's
// deletion, the catalog's segments, the version's statistics) is part of
// what the commit costs.
const lanceS3Trailing = 3 * time.Second

// lanceS3Scenario runs the LanceDB workload of the lance scenario on S3:
// a MinIO server of its own, reached through s3proxy, directly and with
// lanceS3Latency per request; flightns (REST, managed versioning, an
// s3:// root on the same bucket) and Lance's own directory namespace in
// alternating rounds. The proxy sees every request of both — Lance's and
// flightns's — and tells them apart by their User-Agent.
func lanceS3Scenario() Scenario {
	return Scenario{
		Name: "lance-s3",
		Description: fmt.Sprintf("LanceDB (Node) one-row adds on S3 (MinIO, own process, through a counting proxy; direct and %s per request), 1 and %d processes × %d adds to one table: "+
			"flightns REST with managed versioning vs connectNamespace(\"dir\") on the same bucket; commits/s, p50/p99, S3 requests per commit and sequential round trips per add",
			lanceS3Latency, lanceProcesses, lanceAdds),
		Run:   runLanceS3,
		Steps: func(Config) int { return 8 },
	}
}

func runLanceS3(ctx context.Context, cfg Config, rep *Report) error {
	dir, err := lanceDir()
	if err != nil {
		return err
	}
	bin, err := servingBinary("lance-s3")
	if err != nil {
		return err
	}
	proxy, stopS3, err := startS3Proxy(ctx)
	if err != nil {
		return err
	}
	defer stopS3()
	log := &requestLog{}
	proxy.Trace = log.add
	for _, mode := range []struct {
		backend string
		latency time.Duration
	}{{"minio", 0}, {"minio+10ms", lanceS3Latency}} {
		if !cfg.wants(mode.backend) {
			continue
		}
		proxy.Set(s3proxy.Faults{MinLatency: mode.latency})
		for _, procs := range cfg.Processes {
			if err := runLanceS3At(ctx, cfg, rep, dir, bin, proxy, log, mode.backend, procs); err != nil {
				return fmt.Errorf("%s, %d processes: %w", mode.backend, procs, err)
			}
		}
	}
	return nil
}

// lanceS3Run is one round of one namespace.
type lanceS3Run struct {
	res   Result
	count s3Count
}

func runLanceS3At(ctx context.Context, cfg Config, rep *Report, dir, bin string, proxy *s3proxy.Proxy, log *requestLog, backend string, procs int) error {
	runs := map[string][]lanceS3Run{}
	for round := range cfg.Rounds {
		// Alternate which goes first, so that neither always meets a
		// warmer (or more loaded) server.
		impls := []string{"dir", "rest"}
		if round%2 == 1 {
			slices.Reverse(impls)
		}
		for _, impl := range impls {
			r, err := lanceS3Round(ctx, dir, bin, proxy, log, impl, procs, fmt.Sprintf("%s-%dp-r%d-%s", strings.ReplaceAll(backend, "+", "-"), procs, round, impl))
			if err != nil {
				return fmt.Errorf("%s: %w", impl, err)
			}
			runs[impl] = append(runs[impl], r)
		}
	}
	d, f := medianS3Run(runs["dir"]), medianS3Run(runs["rest"])
	d.res.Scenario, d.res.Backend = "lance-s3:dir", backend
	d.res.S3PerOp, d.res.S3Sequential = d.count.perCommit(), d.count.sequential
	d.res.Note = fmt.Sprintf(`connectNamespace("dir") on the bucket; median of %d rounds: %s commits/s; S3 per commit: %s; sequential round trips per add (median): %.0f`,
		cfg.Rounds, s3Rates(runs["dir"]), d.count.breakdown(), d.count.sequential)
	f.res.Scenario, f.res.Backend, f.res.Ceiling = "lance-s3:flightns", backend, d.res.Scenario
	f.res.S3PerOp, f.res.S3Sequential = f.count.perCommit(), f.count.sequential
	if d.res.OpsPerSec > 0 {
		f.res.Ratio = f.res.OpsPerSec / d.res.OpsPerSec
	}
	p99 := 0.0
	if d.res.P99Ms > 0 {
		p99 = f.res.P99Ms / d.res.P99Ms
	}
	f.res.Note = fmt.Sprintf(`connectNamespace("rest"), managed versioning, the catalog on the same bucket; median of %d rounds: %s commits/s; %.2f× of Lance's own, p99 %.2f× of its; `+
		`S3 per commit: %s (Lance alone %.1f: %+.1f); sequential round trips per add (median): %.0f (Lance alone %.0f)`,
		cfg.Rounds, s3Rates(runs["rest"]), f.res.Ratio, p99, f.count.breakdown(), d.count.perCommit(), f.count.perCommit()-d.count.perCommit(), f.count.sequential, d.count.sequential)
	d.res.Note += failedAdds(runs["dir"])
	f.res.Note += failedAdds(runs["rest"])
	cfg.add(rep, d.res)
	cfg.add(rep, f.res)
	return nil
}

// failedAdds says how many adds Lance gave up on over every round of one
// namespace, and the first error ("" when none did).
func failedAdds(runs []lanceS3Run) string {
	n, first := int64(0), ""
	for _, r := range runs {
		n += r.res.Errors
		if first == "" {
			first = r.res.FirstError
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d adds failed over the rounds, the first: %s", n, first)
}

// lanceS3Round runs the workload once through one namespace, in a fresh
// prefix of the bucket, and counts the requests the proxy saw from the
// first add to lanceS3Trailing after the last. flightns is the real
// server, `flightns serve` with its private Redis and its SQL worker
// (which follows the catalog's segments in storage, as it does for every
// user).
func lanceS3Round(ctx context.Context, dir, bin string, proxy *s3proxy.Proxy, log *requestLog, impl string, procs int, prefix string) (lanceS3Run, error) {
	var base map[string]any
	switch impl {
	case "dir":
		base = map[string]any{"impl": "dir", "root": "s3://bench/" + prefix, "storageOptions": lanceS3Options(proxy.URL),
			"namespace": []string{}, "table": "log"}
	default:
		tmp, err := os.MkdirTemp("", "flightns-bench-lance-s3-")
		if err != nil {
			return lanceS3Run{}, err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		srv, err := startServe(ctx, bin, tmp, "--data", filepath.Join(tmp, "data"), "--root", proxy.URI("bench", prefix),
			"--flight-addr", "127.0.0.1:0", "--rest-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--console-addr", "")
		if err != nil {
			return lanceS3Run{}, err
		}
		defer func() { _ = srv.stop(10 * time.Second) }()
		uri := "http://" + srv.rest
		// LanceDB gets nothing but the REST URI (and the credentials in
		// its environment): where the tables are, and how to reach the
		// store, come from DescribeTable and DeclareTable.
		base = map[string]any{"impl": "rest", "uri": uri, "namespace": []string{"bench"}, "table": "log"}
	}
	log.reset()
	res, reps, err := lanceWorkload(ctx, dir, base, procs, 0)
	if err != nil {
		return lanceS3Run{}, err
	}
	time.Sleep(lanceS3Trailing)
	first, last := reps[0].StartMs, reps[0].EndMs
	var spans [][2]float64
	for _, r := range reps {
		first, last = min(first, r.StartMs), max(last, r.EndMs)
		spans = append(spans, r.Spans...)
	}
	from, to := time.UnixMilli(first), time.UnixMilli(last).Add(lanceS3Trailing)
	reqs := log.between(from, to)
	c := s3Count{commits: res.Ops, byKind: map[string]int{}}
	for _, r := range reqs {
		c.byKind[s3Sender(r)+" "+s3Kind(r)]++
	}
	if procs == 1 {
		var chains []float64
		for _, sp := range spans {
			chains = append(chains, float64(longestChain(opsWithin(reqs, sp))))
		}
		slices.Sort(chains)
		if len(chains) > 0 {
			c.sequential = chains[len(chains)/2]
		}
	}
	return lanceS3Run{res: res, count: c}, nil
}

// lanceS3Options are the storage options Lance's own directory namespace
// needs to reach the bucket through the proxy (flightns's LanceDB client
// gets the same from DescribeTable, keys apart).
func lanceS3Options(endpoint string) map[string]string {
	return map[string]string{
		"aws_endpoint": endpoint, "aws_region": minioproc.Region, "aws_allow_http": "true",
		"aws_virtual_hosted_style_request": "false",
		"aws_access_key_id":                minioproc.AccessKey, "aws_secret_access_key": minioproc.SecretKey,
	}
}

// opsWithin is the requests that ran within an add's span (fractional
// milliseconds since the epoch).
func opsWithin(reqs []s3proxy.Request, span [2]float64) []s3Op {
	from := time.UnixMicro(int64(span[0] * 1000))
	to := time.UnixMicro(int64(span[1] * 1000))
	var out []s3Op
	for _, r := range reqs {
		if !r.Start.Before(from) && !r.End.After(to) {
			out = append(out, s3Op{path: r.Path, start: r.Start, end: r.End})
		}
	}
	return out
}

// s3Count is what the proxy saw of one round.
type s3Count struct {
	commits    int64
	byKind     map[string]int // "<sender> <method> <kind>" → requests
	sequential float64        // median longest chain per add (one process)
}

func (c s3Count) total() int {
	n := 0
	for _, v := range c.byKind {
		n += v
	}
	return n
}

func (c s3Count) perCommit() float64 {
	if c.commits == 0 {
		return 0
	}
	return float64(c.total()) / float64(c.commits)
}

// breakdown is the requests per commit, in all and by sender and kind.
func (c s3Count) breakdown() string {
	if c.commits == 0 {
		return "no commits"
	}
	keys := slices.Collect(maps.Keys(c.byKind))
	slices.SortFunc(keys, func(a, b string) int { return c.byKind[b] - c.byKind[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(c.byKind[k])/float64(c.commits)))
	}
	return fmt.Sprintf("%.2f (%s)", c.perCommit(), strings.Join(parts, ", "))
}

// medianS3Run is the round with the median commit rate.
func medianS3Run(runs []lanceS3Run) lanceS3Run {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b lanceS3Run) int {
		switch {
		case a.res.OpsPerSec < b.res.OpsPerSec:
			return -1
		case a.res.OpsPerSec > b.res.OpsPerSec:
			return 1
		}
		return 0
	})
	return sorted[len(sorted)/2]
}

func s3Rates(runs []lanceS3Run) string {
	res := make([]Result, len(runs))
	for i, r := range runs {
		res[i] = r.res
	}
	return rates(res)
}

// s3Sender names who sent a request: flightns (the AWS SDK for Go) or
// Lance (object_store, Rust).
func s3Sender(r s3proxy.Request) string {
	if strings.Contains(r.UserAgent, "aws-sdk-go") {
		return "flightns"
	}
	return "lance"
}

// s3Kind names a request by its method and what it touched.
func s3Kind(r s3proxy.Request) string {
	method := r.Method
	q := r.RawQuery
	switch {
	case r.Method == "GET" && strings.Contains(q, "list-type"):
		return "LIST"
	case r.Method == "POST" && strings.Contains(q, "delete"):
		return "DELETE-BATCH"
	}
	p := r.Path
	base := p[strings.LastIndex(p, "/")+1:]
	kind := "other"
	switch {
	case strings.Contains(p, "/__manifest/"):
		kind = "catalog"
	case strings.Contains(p, "/_versions/") && strings.HasSuffix(base, ".manifest"):
		kind = "manifest"
	case strings.Contains(p, "/_versions/") && strings.Contains(base, ".manifest-"):
		kind = "staging"
	case strings.Contains(p, "/_versions/"):
		kind = "versions"
	case strings.Contains(p, "/data/"):
		kind = "data"
	case strings.Contains(p, "/_transactions/"):
		kind = "txn"
	case strings.Contains(p, "/_refs/"):
		kind = "refs"
	}
	return method + " " + kind
}

// requestLog keeps every request the proxy answered since its reset.
type requestLog struct {
	mu   sync.Mutex
	reqs []s3proxy.Request
}

func (l *requestLog) add(r s3proxy.Request) {
	l.mu.Lock()
	l.reqs = append(l.reqs, r)
	l.mu.Unlock()
}

func (l *requestLog) reset() {
	l.mu.Lock()
	l.reqs = nil
	l.mu.Unlock()
}

// between is the requests that arrived in [from, to].
func (l *requestLog) between(from, to time.Time) []s3proxy.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []s3proxy.Request
	for _, r := range l.reqs {
		if !r.Start.Before(from) && !r.Start.After(to) {
			out = append(out, r)
		}
	}
	return out
}

package bench

import (
	"cmp"
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
// a MinIO server of its own, reached through s3proxy, in each of
// lanceS3Modes; flightns (REST, managed versioning, an
// s3:// root on the same bucket) and its peers (lanceS3Peers: Lance's own
// directory namespace, plain and with managed versioning, and Lance with
// its DynamoDB commit store on dynalite, behind a proxy of its own with
// the same latency) in alternating rounds. The S3 proxy sees every
// request of all — Lance's and flightns's — and tells them apart by
// their User-Agent.
func lanceS3Scenario() Scenario {
	return Scenario{
		Name: "lance-s3",
		Description: fmt.Sprintf("LanceDB (Node) one-row adds on S3 (MinIO, own process, through a counting proxy; direct, %s per request, and that behind a store that refuses a conditional copy onto an existing key as AWS S3 does), 1 and %d processes × %d adds to one table: "+
			"flightns REST with managed versioning vs connectNamespace(\"dir\"), plain and with table_version_tracking_enabled, and vs Lance's DynamoDB commit store (s3+ddb://, dynalite through a counting proxy with the same delay) on the same bucket; "+
			"commits/s, p50/p99, S3 and DynamoDB requests per commit and sequential round trips per add",
			lanceS3Latency, lanceProcesses, lanceAdds),
		Run:   runLanceS3,
		Steps: func(Config) int { return len(lanceS3Modes) * 2 * len(lanceS3Peers) },
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
	ddb, err := startLanceDynamo(ctx, dir)
	if err != nil {
		return err
	}
	defer ddb.stop()
	log := &requestLog{}
	proxy.Trace = log.add
	for _, mode := range lanceS3Modes {
		if !cfg.wants(mode.backend) {
			continue
		}
		proxy.Set(s3proxy.Faults{MinLatency: mode.latency})
		stores := lanceS3Stores{proxy, log, ddb, mode.honours}
		if mode.honours {
			proxy.HonourCopyCondition(minioproc.AccessKey, minioproc.SecretKey, minioproc.Region)
		} else {
			proxy.OverwriteOnCopy()
		}
		ddb.proxy.setLatency(mode.latency)
		for _, procs := range cfg.Processes {
			if err := runLanceS3At(ctx, cfg, rep, dir, bin, stores, mode.backend, procs); err != nil {
				return fmt.Errorf("%s, %d processes: %w", mode.backend, procs, err)
			}
		}
	}
	return nil
}

// lanceS3Modes are the stores lance-s3 runs on: MinIO directly, with
// lanceS3Latency per request, and with that latency behind a proxy that
// refuses a conditional copy onto an existing key, as AWS S3 does
// (s3proxy.HonourCopyCondition; flightns's startup probe finds it, and
// promotes by server-side copy).
var lanceS3Modes = []struct {
	backend string
	latency time.Duration
	honours bool
}{{"minio", 0, false}, {"minio+10ms", lanceS3Latency, false}, {"minio-copy+10ms", lanceS3Latency, true}}

// lanceS3Stores is what lance-s3's rounds write to and count at: the S3
// proxy and its request log, the DynamoDB of Lance's commit store, and
// whether the proxy honours a conditional copy.
type lanceS3Stores struct {
	s3      *s3proxy.Proxy
	log     *requestLog
	ddb     *lanceDynamo
	honours bool
}

// lanceS3Peers are the ways LanceDB commits in lance-s3, in the order of
// a round (each round starts one further along), by their name in
// lanceS3Round and the row reported: Lance alone (every other row's
// ceiling), Lance's directory namespace with managed versioning, Lance
// with its DynamoDB commit store, and flightns.
var lanceS3Peers = []struct{ impl, row string }{
	{"dir", "lance-s3:dir"},
	{"dir-managed", "lance-s3:dir-managed"},
	{"ddb", "lance-s3:ddb"},
	{"rest", "lance-s3:flightns"},
}

// dirManagedProperties turn on managed versioning in Lance's directory
// namespace (LanceDB 0.39, Lance 12): DescribeTable answers
// managed_versioning, so LanceDB writes a staging manifest and commits
// it with the namespace's CreateTableVersion, which the namespace runs in
// the writer's process (a create-only PUT of the final manifest, then the
// staging object's deletion). It records no version in its __manifest:
// that Lance has no table_version_storage_enabled.
var dirManagedProperties = map[string]string{"manifest_enabled": "true", "table_version_tracking_enabled": "true"}

// lanceS3Run is one round of one namespace.
type lanceS3Run struct {
	res   Result
	count s3Count
}

// runLanceS3At runs cfg.Rounds rounds of every peer at procs writer
// processes and reports each peer's median round.
func runLanceS3At(ctx context.Context, cfg Config, rep *Report, dir, bin string, st lanceS3Stores, backend string, procs int) error {
	runs := map[string][]lanceS3Run{}
	for round := range cfg.Rounds {
		// Rotate which goes first, so that none always meets a warmer
		// (or more loaded) server.
		for i := range lanceS3Peers {
			impl := lanceS3Peers[(round+i)%len(lanceS3Peers)].impl
			r, err := lanceS3Round(ctx, dir, bin, st, impl, procs, fmt.Sprintf("%s-%dp-r%d-%s", strings.ReplaceAll(backend, "+", "-"), procs, round, impl))
			if err != nil {
				return fmt.Errorf("%s: %w", impl, err)
			}
			runs[impl] = append(runs[impl], r)
		}
	}
	for _, r := range lanceS3Rows(cfg.Rounds, runs, backend, procs == 1) {
		cfg.add(rep, r)
	}
	return nil
}

// lanceS3Rows is each peer's row, in lanceS3Peers' order: its median
// round with its requests per add, compared with Lance alone, and
// flightns's with the other peers too; chains says whether the round
// trips per add were measured (one process).
func lanceS3Rows(rounds int, runs map[string][]lanceS3Run, backend string, chains bool) []Result {
	med := map[string]lanceS3Run{}
	for _, p := range lanceS3Peers {
		m := medianS3Run(runs[p.impl])
		m.res.Scenario, m.res.Backend = p.row, backend
		m.res.S3PerOp, m.res.DynamoPerOp, m.res.S3Sequential = m.count.perCommit(), m.count.dynamoPerCommit(), m.count.sequential
		med[p.impl] = m
	}
	d, m, g, f := med["dir"], med["dir-managed"], med["ddb"], med["rest"]
	d.res.Note = fmt.Sprintf(`connectNamespace("dir") on the bucket; median of %d rounds: %s commits/s; S3 per commit: %s`,
		rounds, s3Rates(runs["dir"]), d.count.breakdown()) + roundTrips(chains, "%.0f", d.count.sequential)
	var vsAlone string
	m.res.Ceiling = d.res.Scenario
	m.res.Ratio, vsAlone = versus(m.res, d.res, "Lance alone")
	m.res.Note = fmt.Sprintf(`connectNamespace("dir", table_version_tracking_enabled) on the bucket: every commit a CreateTableVersion of the namespace, in LanceDB's process; median of %d rounds: %s commits/s; %s; S3 per commit: %s (Lance alone %.1f)`,
		rounds, s3Rates(runs["dir-managed"]), vsAlone, m.count.breakdown(), d.count.perCommit()) +
		roundTrips(chains, "%.0f (Lance alone %.0f)", m.count.sequential, d.count.sequential)
	g.res.Ceiling = d.res.Scenario
	g.res.Ratio, vsAlone = versus(g.res, d.res, "Lance alone")
	g.res.Note = fmt.Sprintf(`lancedb.connect("s3+ddb://…?ddbTableName=%s"), Lance's DynamoDB commit store on dynalite; median of %d rounds: %s commits/s; %s; S3 per commit: %s (Lance alone %.1f); DynamoDB per commit: %s`,
		lanceDynamoTable, rounds, s3Rates(runs["ddb"]), vsAlone, g.count.breakdown(), d.count.perCommit(), g.count.dynamoBreakdown()) +
		roundTrips(chains, "%.0f, S3 and DynamoDB (Lance alone %.0f)", g.count.sequential, d.count.sequential)
	f.res.Ceiling = d.res.Scenario
	f.res.Ratio, vsAlone = versus(f.res, d.res, "Lance alone")
	toManaged, vsManaged := versus(f.res, m.res, "Lance's managed directory")
	toDynamo, vsDynamo := versus(f.res, g.res, "Lance with DynamoDB")
	f.res.PeerRatios = map[string]float64{m.res.Scenario: toManaged, g.res.Scenario: toDynamo}
	f.res.Note = fmt.Sprintf(`connectNamespace("rest"), managed versioning, the catalog on the same bucket; median of %d rounds: %s commits/s; %s; %s; %s; `+
		`S3 per commit: %s (Lance alone %.1f: %+.1f; Lance's managed directory %.1f; Lance with DynamoDB %.1f S3 and %.1f DynamoDB); `+
		`LanceDB's REST requests to flightns per commit: %s, CreateTableVersion answered in %.1f ms on average (flightns's own measure)`,
		rounds, s3Rates(runs["rest"]), vsAlone, vsManaged, vsDynamo, f.count.breakdown(), d.count.perCommit(), f.count.perCommit()-d.count.perCommit(),
		m.count.perCommit(), g.count.perCommit(), g.count.dynamoPerCommit(), f.count.restBreakdown(), f.count.createMs) +
		roundTrips(chains, "%.0f (Lance alone %.0f, Lance's managed directory %.0f, Lance with DynamoDB %.0f)", f.count.sequential, d.count.sequential, m.count.sequential, g.count.sequential)
	med["dir"], med["dir-managed"], med["ddb"], med["rest"] = d, m, g, f
	rows := make([]Result, 0, len(lanceS3Peers))
	for _, p := range lanceS3Peers {
		r := med[p.impl].res
		r.Note += failedAdds(runs[p.impl])
		rows = append(rows, r)
	}
	return rows
}

// roundTrips is a note's clause on the round trips one add waited for in
// sequence (format and its values), or "" where they were not measured.
func roundTrips(measured bool, format string, values ...any) string {
	if !measured {
		return ""
	}
	return "; sequential round trips per add (median): " + fmt.Sprintf(format, values...)
}

// versus is r's commit rate as a multiple of peer's, measured in the
// same rounds, and that with the p99 latencies' multiple in words.
func versus(r, peer Result, name string) (float64, string) {
	ratio, p99 := 0.0, 0.0
	if peer.OpsPerSec > 0 {
		ratio = r.OpsPerSec / peer.OpsPerSec
	}
	if peer.P99Ms > 0 {
		p99 = r.P99Ms / peer.P99Ms
	}
	return ratio, fmt.Sprintf("%.2f× of %s, p99 %.2f× of its", ratio, name, p99)
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

// lanceS3Round runs the workload once through one peer, in a fresh
// prefix of the bucket, and counts the S3 and DynamoDB requests the
// proxies saw from the first add to lanceS3Trailing after the last.
// flightns is the real server, `flightns serve` with its private Redis
// and its SQL worker (which follows the catalog's segments in storage,
// as it does for every user).
func lanceS3Round(ctx context.Context, dir, bin string, st lanceS3Stores, impl string, procs int, prefix string) (lanceS3Run, error) {
	var base map[string]any
	var srv *serveProc // flightns's, through which LanceDB's REST requests are counted
	switch impl {
	case "dir":
		base = map[string]any{"impl": "dir", "root": "s3://bench/" + prefix, "storageOptions": lanceS3Options(st.s3.URL),
			"namespace": []string{}, "table": "log"}
	case "dir-managed":
		base = map[string]any{"impl": "dir", "root": "s3://bench/" + prefix, "storageOptions": lanceS3Options(st.s3.URL),
			"properties": dirManagedProperties, "namespace": []string{}, "table": "log"}
	case "ddb":
		// A plain connection, no namespace: the URI's scheme makes Lance
		// commit through the DynamoDB table.
		base = map[string]any{"impl": "ddb", "root": st.ddb.uri("bench", prefix), "storageOptions": st.ddb.storageOptions(st.s3.URL),
			"namespace": []string{}, "table": "log"}
	case "rest":
		tmp, err := os.MkdirTemp("", "flightns-bench-lance-s3-")
		if err != nil {
			return lanceS3Run{}, err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		srv, err = startServe(ctx, bin, tmp, "--data", filepath.Join(tmp, "data"), "--root", st.s3.URI("bench", prefix),
			"--flight-addr", "127.0.0.1:0", "--rest-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--console-addr", "")
		if err != nil {
			return lanceS3Run{}, err
		}
		defer func() { _ = srv.stop(10 * time.Second) }()
		// The store is what the mode says only if the server's startup
		// probe found it so.
		if want := fmt.Sprintf("conditional_copy=%t", st.honours); srv.count("storage: promotions of staging manifests not read") != 1 || srv.count(want) != 1 {
			return lanceS3Run{}, fmt.Errorf("flightns serve did not log its promotions with %s:\n%s", want, srv.tail(20))
		}
		uri := "http://" + srv.rest
		// LanceDB gets nothing but the REST URI (and the credentials in
		// its environment): where the tables are, and how to reach the
		// store, come from DescribeTable and DeclareTable.
		base = map[string]any{"impl": "rest", "uri": uri, "namespace": []string{"bench"}, "table": "log"}
	default:
		return lanceS3Run{}, fmt.Errorf("lance-s3 has no peer %q", impl)
	}
	st.log.reset()
	st.ddb.proxy.reset()
	var restBefore map[string]int
	var timesBefore map[string]restTime
	if srv != nil {
		var err error
		if restBefore, timesBefore, err = srv.restRequests(ctx); err != nil {
			return lanceS3Run{}, err
		}
	}
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
	reqs, dreqs := st.log.between(from, to), st.ddb.proxy.between(from, to)
	c := s3Count{commits: res.Ops, byKind: map[string]int{}, dynamo: map[string]int{}}
	for _, r := range reqs {
		c.byKind[s3Sender(r)+" "+s3Kind(r)]++
	}
	for _, r := range dreqs {
		c.dynamo[dynamoKind(r)]++
	}
	if srv != nil {
		after, times, err := srv.restRequests(ctx)
		if err != nil {
			return lanceS3Run{}, err
		}
		c.rest = map[string]int{}
		for op, n := range after {
			if d := n - restBefore[op]; d > 0 {
				c.rest[op] = d
			}
		}
		t, t0 := times["CreateTableVersion"], timesBefore["CreateTableVersion"]
		if n := t.n - t0.n; n > 0 {
			c.createMs = 1000 * (t.seconds - t0.seconds) / float64(n)
		}
	}
	if procs == 1 {
		var chains []float64
		for _, sp := range spans {
			chains = append(chains, float64(longestChain(append(opsWithin(reqs, sp), dynamoOpsWithin(dreqs, sp)...))))
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

// s3Count is what the proxies saw of one round.
type s3Count struct {
	commits int64
	byKind  map[string]int // S3: "<sender> <method> <kind>" → requests
	dynamo  map[string]int // DynamoDB: operation (and refusal status) → requests
	rest    map[string]int // flightns's REST operations (and refusals) → requests
	// createMs is the mean time flightns took to answer a
	// CreateTableVersion (refused ones too), in milliseconds: its own
	// measure, from the request's arrival to its answer.
	createMs float64
	// sequential is the median over adds (one process) of the longest
	// chain of requests, S3 and DynamoDB together, one add waited for.
	sequential float64
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

// dynamoPerCommit is the DynamoDB requests per commit.
func (c s3Count) dynamoPerCommit() float64 {
	if c.commits == 0 {
		return 0
	}
	n := 0
	for _, v := range c.dynamo {
		n += v
	}
	return float64(n) / float64(c.commits)
}

// breakdown is the S3 requests per commit, in all and by sender and kind.
func (c s3Count) breakdown() string {
	return perCommitBreakdown(c.byKind, c.commits, c.perCommit())
}

// dynamoBreakdown is the DynamoDB requests per commit, in all and by
// operation.
func (c s3Count) dynamoBreakdown() string {
	return perCommitBreakdown(c.dynamo, c.commits, c.dynamoPerCommit())
}

// restBreakdown is the REST requests to flightns per commit, in all and
// by operation.
func (c s3Count) restBreakdown() string {
	n := 0
	for _, v := range c.rest {
		n += v
	}
	return perCommitBreakdown(c.rest, c.commits, float64(n)/float64(max(c.commits, 1)))
}

// perCommitBreakdown is total, then each kind's count per commit, the
// most frequent first.
func perCommitBreakdown(byKind map[string]int, commits int64, total float64) string {
	if commits == 0 {
		return "no commits"
	}
	keys := slices.Collect(maps.Keys(byKind))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(byKind[b]-byKind[a], strings.Compare(a, b)) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(byKind[k])/float64(commits)))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%.2f", total)
	}
	return fmt.Sprintf("%.2f (%s)", total, strings.Join(parts, ", "))
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

package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// The hostile-queries scenario asks whether commits keep their throughput
// while hostile read-only queries run, with the SQL engine in a worker
// process of its own (--sql-isolation process) and inside the server
// (--sql-isolation none). For each mode it starts a real `flightns serve`
// (its own data directory, its own private Redis), and at each --clients
// level up to hostileMaxClients measures a closed loop of REST commits
// quiet (half the duration before, half after) and, between the two
// halves, for the whole duration while hostileQueryClients Flight SQL
// clients run runaway queries in a loop, each bounded by the server's
// query timeout.
const (
	hostileQueryClients = 4
	hostileQueryTimeout = 5 * time.Second
	hostileSQLMemory    = "512MB"
	hostileMaxClients   = 32
	// hostileProbeEvery paces the CreateNamespace probe: a latency
	// sample, not load.
	hostileProbeEvery = 100 * time.Millisecond
	// hostileIdleWait bounds the wait for the server to go idle between
	// phases (queries left running after their clients stopped).
	hostileIdleWait = 30 * time.Second
	// hostileNamespace holds the tables the commits go to.
	hostileNamespace = "hq"
	// hostileRefusalPause is how long a query client pauses after a query
	// refused in less than that.
	hostileRefusalPause = 50 * time.Millisecond
	// hostileShutdown is the server's --shutdown-timeout.
	hostileShutdown = 5 * time.Second
)

// hostileQueries are the runaway queries of issue 14, each run until the
// server ends it: endless aggregation, a 10^10-row cross product read and
// discarded, 100 GB of string building, one 4 GiB string, and a 10 GB
// aggregate string.
var hostileQueries = []struct{ label, sql string }{
	{"count-1e11", `SELECT count(*) FROM range(100000000000)`},
	{"cross-1e10", `SELECT * FROM range(100000) a, range(100000) b`},
	{"repeat-1e6x1e5", `SELECT max(length(repeat('x', 1000000) || range)) FROM range(100000)`},
	{"repeat-4GiB", `SELECT length(repeat('a', 4294967295))`},
	{"string_agg-10GB", `SELECT string_agg(repeat('x', 100000), ',') FROM range(100000)`},
}

// hostileSelection is the indexes of the hostile queries to run: those
// $FLIGHTNS_BENCH_HOSTILE_QUERIES names by label (comma-separated), or
// all of them. It is for finding out which query does what.
func hostileSelection() []int {
	var sel []int
	names := strings.Split(os.Getenv("FLIGHTNS_BENCH_HOSTILE_QUERIES"), ",")
	for i, q := range hostileQueries {
		if slices.Contains(names, q.label) {
			sel = append(sel, i)
		}
	}
	if len(sel) == 0 {
		for i := range hostileQueries {
			sel = append(sel, i)
		}
	}
	return sel
}

// hostileModes are the values of --sql-isolation measured, in order.
var hostileModes = []string{"process", "none"}

func hostileScenario() Scenario {
	return Scenario{
		Name: "hostile-queries",
		Description: fmt.Sprintf("commits under hostile queries: REST commits to a real `flightns serve`, quiet and while %d Flight SQL clients run runaway queries (--query-timeout %s, --sql-memory %s), with --sql-isolation process and none, at each --clients level up to %d",
			hostileQueryClients, hostileQueryTimeout, hostileSQLMemory, hostileMaxClients),
		Run: runHostile,
		Steps: func(cfg Config) int {
			return 5 * len(hostileModesOf(cfg)) * len(cfg.clientsUpTo(hostileMaxClients))
		},
	}
}

// hostileModesOf is the modes --backends names, or both if it names none.
func hostileModesOf(cfg Config) []string {
	var out []string
	for _, m := range hostileModes {
		if slices.Contains(cfg.Backends, m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return hostileModes
	}
	return out
}

func runHostile(ctx context.Context, cfg Config, rep *Report) error {
	bin, err := servingBinary("hostile-queries")
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("chrt"); err != nil {
		return errors.New("the hostile-queries benchmark runs its query clients under SCHED_IDLE with chrt: install util-linux")
	}
	for _, mode := range hostileModesOf(cfg) {
		if err := hostileMode(ctx, cfg, rep, bin, mode); err != nil {
			return fmt.Errorf("--sql-isolation %s: %w", mode, err)
		}
	}
	return nil
}

// hostileMode measures one isolation mode on a server of its own.
func hostileMode(ctx context.Context, cfg Config, rep *Report, bin, mode string) error {
	tmp, err := os.MkdirTemp("", "flightns-bench-hostile-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	data := filepath.Join(tmp, "data")
	srv, err := startServe(ctx, bin, tmp, "--data", data, "--log-format", "text",
		"--flight-addr", "127.0.0.1:0", "--rest-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--console-addr", "",
		"--sql-isolation", mode, "--sql-memory", hostileSQLMemory, "--query-timeout", hostileQueryTimeout.String(),
		"--shutdown-timeout", hostileShutdown.String())
	if err != nil {
		return err
	}
	defer func() {
		_ = srv.stop(hostileShutdown + 15*time.Second)
		srv.saveLog("hostile-queries-" + mode + ".log")
	}()
	srv.spillDir = filepath.Join(data, "sql-spill")
	objs, err := objstore.Open(ctx, "file://"+filepath.Join(data, "root"))
	if err != nil {
		return err
	}
	defer func() { _ = objs.Close() }()

	levels := cfg.clientsUpTo(hostileMaxClients)
	w := &hostileWriter{rc: newRESTClient(srv.rest), objs: objs, payload: bytes.Repeat([]byte("m"), 1024)}
	if err := w.declare(ctx, slices.Max(levels)); err != nil {
		return err
	}
	// A first commit on every table: the first commit of a table and the
	// server's first requests cost more than the steady state.
	for c := range slices.Max(levels) {
		if out := w.commit(ctx, c); out != OK {
			return fmt.Errorf("the first commit to %s failed; server log:\n%s", w.table(c), srv.tail(30))
		}
	}
	first := len(rep.Results)
	for _, clients := range levels {
		if err := hostileLevel(ctx, cfg, rep, srv, w, mode, clients); err != nil {
			return fmt.Errorf("%d clients: %w", clients, err)
		}
	}
	// How the server stops after the hostile queries is part of the
	// answer: a failed shutdown is noted on this mode's results, not an
	// error of the run.
	t0 := time.Now()
	stopErr := srv.stop(hostileShutdown + 15*time.Second)
	shutdown := fmt.Sprintf("shutdown (SIGTERM, --shutdown-timeout %s) took %.1f s", hostileShutdown, time.Since(t0).Seconds())
	if stopErr != nil {
		shutdown += ": " + stopErr.Error()
	}
	for i := first; i < len(rep.Results); i++ {
		rep.Results[i].Note += "; " + shutdown
	}
	if cfg.Progress != nil {
		_, _ = fmt.Fprintf(cfg.Progress, "hostile-queries (--sql-isolation %s): %s\n", mode, shutdown)
	}
	return nil
}

// hostilePhase is one measurement of the commits, and what was measured
// beside them.
type hostilePhase struct {
	commits Result
	lat     []time.Duration // the commits' latencies
	probe   *probe          // CreateNamespace, paced
	peakRSS int64           // bytes, the server and all its descendants
	usage   string          // CPU time and writes of the server's processes
	load    string          // the machine's load average at the start
	busy    bool            // the server was still busy when the phase began
	perSec  []int           // commits acknowledged in each second of the phase
	log     [2]int          // the server's log lines of the phase
}

// phase measures the commits of clients clients for d, with the
// CreateNamespace probe and the memory sampler running, and ql's
// queries if ql is not nil (they are stopped, and answered, before it
// returns).
func (w *hostileWriter) phase(ctx context.Context, srv *serveProc, clients int, d time.Duration, hostile bool) (hostilePhase, *queryLoad, error) {
	var ph hostilePhase
	// Each phase starts on an idle server, or says it could not.
	_, idle := waitIdle(ctx, srv.pid(), hostileIdleWait)
	ph.busy = !idle
	if err := w.sync(ctx, clients); err != nil {
		return ph, nil, err
	}
	ph.load = loadAvg()
	sampler := sampleTree(srv.pid(), srv.spillDir)
	var ql *queryLoad
	if hostile {
		ql = startQueries(ctx, srv.bin, srv.flight, hostileQueryClients)
	}
	ph.probe = startProbe(ctx, w.rc)
	var mu sync.Mutex
	ph.log[0] = srv.lineCount()
	start := time.Now()
	ph.perSec = make([]int, int(d.Seconds()+0.999))
	ph.commits = Measure(ctx, clients, d, func(ctx context.Context, c int) Outcome {
		t0 := time.Now()
		out := w.commit(ctx, c)
		if ctx.Err() == nil || out != Failed { // as Measure counts
			mu.Lock()
			ph.lat = append(ph.lat, time.Since(t0))
			if s := int(time.Since(start).Seconds()); out == OK && s < len(ph.perSec) {
				ph.perSec[s]++
			}
			mu.Unlock()
		}
		return out
	})
	ph.probe.stop()
	if ql != nil {
		ql.stop()
	}
	ph.log[1] = srv.lineCount()
	ph.peakRSS = sampler.stop()
	ph.usage = sampler.usage()
	return ph, ql, nil
}

// timeline is counts per second, in words.
func timeline(perSec []int) string {
	parts := make([]string, len(perSec))
	for i, n := range perSec {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, " ")
}

// mergeRuns is one Result of two measurements of the same load.
func mergeRuns(a, b Result, lat []time.Duration) Result {
	r := Result{Clients: a.Clients, Ops: a.Ops + b.Ops, Errors: a.Errors + b.Errors, Conflicts: a.Conflicts + b.Conflicts,
		Seconds: a.Seconds + b.Seconds}
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	lat = slices.Clone(lat)
	slices.Sort(lat)
	r.P50Ms, r.P95Ms, r.P99Ms = pct(lat, 0.50), pct(lat, 0.95), pct(lat, 0.99)
	return r
}

// hostileLevel measures clients committing quiet for half the duration,
// under the hostile queries for the duration, then quiet again for the
// other half: the quiet rate brackets the hostile one, so that a change
// in the machine's other load during the run shifts both alike.
func hostileLevel(ctx context.Context, cfg Config, rep *Report, srv *serveProc, w *hostileWriter, mode string, clients int) error {
	restartsBefore := srv.count("the SQL worker ended")
	before, _, err := w.phase(ctx, srv, clients, cfg.Duration/2, false)
	if err != nil {
		return err
	}
	hostile, ql, err := w.phase(ctx, srv, clients, cfg.Duration, true)
	if err != nil {
		return err
	}
	restarts := srv.count("the SQL worker ended") - restartsBefore
	// How long the server stayed busy once the last query had its answer:
	// work a stopped query left running. The second quiet phase waits
	// for it too.
	after, idle := waitIdle(ctx, srv.pid(), hostileIdleWait)
	busy := fmt.Sprintf("busy %.1f s after the last query was answered", after.Seconds())
	if !idle {
		busy = fmt.Sprintf("still busy %.0f s after the last query was answered", after.Seconds())
	}
	later, _, err := w.phase(ctx, srv, clients, cfg.Duration-cfg.Duration/2, false)
	if err != nil {
		return err
	}

	what := fmt.Sprintf("REST commits (stage a 1 KiB manifest, then CreateTableVersion), one table per client, on flightns serve --sql-isolation %s --sql-memory %s --query-timeout %s%s, its private Redis fsyncing every write",
		mode, hostileSQLMemory, hostileQueryTimeout, serveTuning())
	quietRSS := max(before.peakRSS, later.peakRSS)
	q := mergeRuns(before.commits, later.commits, append(slices.Clone(before.lat), later.lat...))
	q.Scenario, q.Backend = "hostile-queries/quiet", mode
	q.Note = fmt.Sprintf("%s; no queries; half the time before the hostile phase (%.0f commits/s), half after (%.0f commits/s); peak RSS of the server and its children %s; the machine's load average %s and %s; the server's processes before: %s; after: %s",
		what, before.commits.OpsPerSec, later.commits.OpsPerSec, mib(quietRSS), before.load, later.load, before.usage, later.usage)
	if before.busy || later.busy {
		q.Note += fmt.Sprintf("; NOT QUIET: the server was still busy (earlier queries) after %s of waiting", hostileIdleWait)
	}
	cfg.add(rep, q)

	nq := mergeProbes(before.probe, later.probe)
	nh := mergeProbes(hostile.probe)
	h := hostile.commits
	h.Scenario, h.Backend, h.Ceiling = "hostile-queries/hostile", mode, q.Scenario
	if q.OpsPerSec > 0 {
		h.Ratio = h.OpsPerSec / q.OpsPerSec
	}
	qs := ql.summary()
	h.Note = fmt.Sprintf("%s; while %d Flight SQL clients ran runaway queries (%s); kept %.0f%% of the quiet rate (target ≥ 80%%); CreateNamespace p50 %.1f ms, p99 %.1f ms (quiet %.1f / %.1f ms); peak RSS of the server and its children %s (quiet %s); SQL worker restarts %d; %s; commits acknowledged in each second of the phase: %s; the server's processes meanwhile: %s; the machine's load average %s; the server's warnings and errors meanwhile: %s",
		what, hostileQueryClients, qs, 100*h.Ratio, nh.P50Ms, nh.P99Ms, nq.P50Ms, nq.P99Ms,
		mib(hostile.peakRSS), mib(quietRSS), restarts, busy, timeline(hostile.perSec), hostile.usage, hostile.load, srv.warnings(hostile.log[0], hostile.log[1]))
	cfg.add(rep, h)

	nq.Scenario, nq.Backend = "hostile-queries/namespace-quiet", mode
	nq.Note = fmt.Sprintf("REST CreateNamespace every %s beside the quiet commits (latency probe, not load)", hostileProbeEvery)
	cfg.add(rep, nq)
	nh.Scenario, nh.Backend = "hostile-queries/namespace-hostile", mode
	if nq.P50Ms > 0 {
		nh.Ceiling, nh.Ratio = nq.Scenario+" (p50 latency ratio, lower is better)", nh.P50Ms/nq.P50Ms
	}
	nh.Note = fmt.Sprintf("REST CreateNamespace every %s beside the commits, under the hostile queries (target < 1 s); p50 %.1f ms, p99 %.1f ms, slowest %.1f ms",
		hostileProbeEvery, nh.P50Ms, nh.P99Ms, hostile.probe.slowest().Seconds()*1000)
	cfg.add(rep, nh)

	qr := ql.result()
	qr.Scenario, qr.Backend = "hostile-queries/queries", mode
	qr.Note = fmt.Sprintf("the hostile queries themselves, %d clients each in a loop over %d runaway queries (a query refused in less than %s is followed by a pause of as long): ops = queries answered (an error such as DeadlineExceeded counts: the bound at work), errors = queries without an answer within %s (3× the query timeout); %s; by query: %s",
		hostileQueryClients, len(hostileQueries), hostileRefusalPause, 3*hostileQueryTimeout, qs, ql.perQuery())
	cfg.add(rep, qr)

	if cfg.Progress != nil {
		_, _ = fmt.Fprintf(cfg.Progress, "hostile-queries (--sql-isolation %s, %d clients): quiet %.0f commits/s (%.0f before, %.0f after), hostile %.0f commits/s, ratio %.2f; CreateNamespace p50 %.1f ms p99 %.1f ms; peak RSS %s (quiet %s); %d queries answered, %d unanswered; worker restarts %d; %s\n",
			mode, clients, q.OpsPerSec, before.commits.OpsPerSec, later.commits.OpsPerSec, h.OpsPerSec, h.Ratio, nh.P50Ms, nh.P99Ms,
			mib(hostile.peakRSS), mib(quietRSS), qr.Ops, qr.Errors, restarts, busy)
	}
	return nil
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// --- the server process -----------------------------------------------

// serveProc is a `flightns serve` child process.
type serveProc struct {
	childProc
	bin          string // the flightns executable
	flight, rest string
	metrics      string // its metrics listener ("" when it has none)
	spillDir     string // where its queries spill
}

var reAddr = regexp.MustCompile(`"?addr"?[=:]"?([0-9.]+:\d+)`)

// startServe runs `bin serve args...` in dir and waits for "flightns
// ready" in its log.
func startServe(ctx context.Context, bin, dir string, args ...string) (*serveProc, error) {
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	cmd.Env = serveEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serveProc{childProc: newChildProc(cmd), bin: bin}
	if err := p.follow(ctx, stderr, 200_000, nil); err != nil {
		return nil, err
	}
	p.mu.Lock()
	for _, l := range p.lines {
		m := reAddr.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		switch {
		case strings.Contains(l, "Flight SQL listening"):
			p.flight = m[1]
		case strings.Contains(l, "REST listening"):
			p.rest = m[1]
		case strings.Contains(l, "metrics and health listening"):
			p.metrics = m[1]
		}
	}
	p.mu.Unlock()
	if p.flight == "" || p.rest == "" {
		_ = p.stop(5 * time.Second)
		return nil, fmt.Errorf("flightns serve logged no Flight or REST address:\n%s", p.tail(30))
	}
	return p, nil
}

// serveEnv is this process's environment without the FLIGHTNS_ variables
// that would point the server elsewhere (another Redis, root, auth file…):
// only the SQL engine's tuning (FLIGHTNS_SQL_*, FLIGHTNS_MAX_*) and
// FLIGHTNS_CPU_PROFILE_DIR (the server's CPU profiles) pass.
func serveEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "FLIGHTNS_") && !strings.HasPrefix(kv, "FLIGHTNS_SQL_") && !strings.HasPrefix(kv, "FLIGHTNS_MAX_") &&
			!strings.HasPrefix(kv, "FLIGHTNS_CPU_PROFILE_DIR=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// serveTuning lists the FLIGHTNS_SQL_* and FLIGHTNS_MAX_* variables the
// server inherits, for the notes.
func serveTuning() string {
	var out []string
	for _, kv := range serveEnv() {
		if strings.HasPrefix(kv, "FLIGHTNS_") {
			out = append(out, kv)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (environment: " + strings.Join(out, " ") + ")"
}

func (p *serveProc) pid() int { return p.cmd.Process.Pid }

// restTime is what a server's request-duration histogram says of one
// REST operation: how many requests (refused ones too) and the seconds
// they took in all.
type restTime struct {
	n       int
	seconds float64
}

// restRequests reads the server's Prometheus metrics of requests and
// returns its REST ones by operation: how many
// (flightns_requests_total; a refusal's code after the operation,
// "CreateTableVersion ConcurrentModification"), and their time
// (flightns_request_duration_seconds, by operation only).
func (p *serveProc) restRequests(ctx context.Context) (counts map[string]int, times map[string]restTime, err error) {
	if p.metrics == "" {
		return nil, nil, errors.New("flightns serve logged no metrics address")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metrics+"/metrics", nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("flightns serve's metrics: %w", err)
	}
	counts, times = map[string]int{}, map[string]restTime{}
	restOps := func(name string, fn func(labels map[string]string, m *dto.Metric)) {
		for _, m := range families[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["surface"] == "rest" {
				fn(labels, m)
			}
		}
	}
	restOps("flightns_requests_total", func(labels map[string]string, m *dto.Metric) {
		k := labels["op"]
		if c := labels["code"]; c != "OK" {
			k += " " + c
		}
		counts[k] += int(m.GetCounter().GetValue())
	})
	restOps("flightns_request_duration_seconds", func(labels map[string]string, m *dto.Metric) {
		h, t := m.GetHistogram(), times[labels["op"]]
		times[labels["op"]] = restTime{n: t.n + int(h.GetSampleCount()), seconds: t.seconds + h.GetSampleSum()}
	})
	return counts, times, nil
}

// count is the number of log lines so far containing s.
func (p *serveProc) count(s string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func (p *serveProc) lineCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

var reMsg = regexp.MustCompile(`msg=("(?:[^"\\]|\\.)*"|\S+)`)

// warnings counts the WARN and ERROR messages among log lines [from, to),
// the most frequent first.
func (p *serveProc) warnings(from, to int) string {
	p.mu.Lock()
	lines := slices.Clone(p.lines[min(from, len(p.lines)):min(to, len(p.lines))])
	p.mu.Unlock()
	n := map[string]int{}
	for _, l := range lines {
		if !strings.Contains(l, "level=WARN") && !strings.Contains(l, "level=ERROR") {
			continue
		}
		msg := l
		if m := reMsg.FindStringSubmatch(l); m != nil {
			msg = strings.Trim(m[1], `"`)
			if i := strings.Index(l, "code="); i >= 0 && msg == "request" { // the access log: keep its code
				msg += " " + strings.Fields(l[i:])[0]
			}
		}
		n[msg]++
	}
	if len(n) == 0 {
		return "none"
	}
	keys := slices.Collect(maps.Keys(n))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(n[b]-n[a], strings.Compare(a, b)) })
	var parts []string
	for _, k := range keys[:min(6, len(keys))] {
		parts = append(parts, fmt.Sprintf("%q ×%d", k, n[k]))
	}
	if len(keys) > 6 {
		parts = append(parts, fmt.Sprintf("%d more", len(keys)-6))
	}
	return strings.Join(parts, ", ")
}

// saveLog writes the log to $FLIGHTNS_BENCH_SERVER_LOG/name, if that is
// set.
func (p *serveProc) saveLog(name string) {
	dir := os.Getenv("FLIGHTNS_BENCH_SERVER_LOG")
	if dir == "" {
		return
	}
	p.mu.Lock()
	text := strings.Join(p.lines, "\n") + "\n"
	p.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
}

// --- REST commits and CreateNamespace --------------------------------

// hostileWriter commits to one table per client over REST, staging each
// manifest straight into the catalog root as a Lance writer would.
type hostileWriter struct {
	rc      *restClient
	objs    *objstore.Store
	payload []byte
	keys    []string // table location keys under the root, by client
	heads   []int64  // last committed version, by client
}

func (w *hostileWriter) table(c int) string { return fmt.Sprintf("%s$t%d", hostileNamespace, c) }

// declare creates the namespace and n tables.
func (w *hostileWriter) declare(ctx context.Context, n int) error {
	if err := w.rc.post(ctx, "/v1/namespace/"+hostileNamespace+"/create", map[string]any{"mode": "ExistOk"}, nil); err != nil {
		return fmt.Errorf("creating namespace %s: %w", hostileNamespace, err)
	}
	w.keys, w.heads = make([]string, n), make([]int64, n)
	for c := range n {
		var d struct {
			Location string `json:"location"`
		}
		if err := w.rc.post(ctx, "/v1/table/"+w.table(c)+"/declare", map[string]any{}, &d); err != nil {
			return fmt.Errorf("declaring %s: %w", w.table(c), err)
		}
		key, err := tableKey(w.objs, w.table(c), d.Location)
		if err != nil {
			return err
		}
		w.keys[c] = key
	}
	return nil
}

// head asks the server for table c's latest version.
func (w *hostileWriter) head(ctx context.Context, c int) (int64, error) {
	var d struct {
		Version *int64 `json:"version"`
	}
	if err := w.rc.post(ctx, "/v1/table/"+w.table(c)+"/describe", map[string]any{}, &d); err != nil {
		return 0, err
	}
	if d.Version == nil {
		return 0, nil
	}
	return *d.Version, nil
}

// sync learns the heads of the first n tables: a commit cut at the end of
// a measurement may have landed.
func (w *hostileWriter) sync(ctx context.Context, n int) error {
	for c := range n {
		v, err := w.head(ctx, c)
		if err != nil {
			return fmt.Errorf("describing %s: %w", w.table(c), err)
		}
		w.heads[c] = v
	}
	return nil
}

// commit stages and commits the next version of client c's table.
func (w *hostileWriter) commit(ctx context.Context, c int) Outcome {
	v := w.heads[c] + 1
	key := lancemanifest.StagingPath(lancemanifest.Dir(w.keys[c]).Manifest(lancemanifest.V2, uint64(v)))
	if err := w.objs.PutWith(ctx, key, w.payload, objstore.WriteOptions{NoSync: true}); err != nil {
		return Failed
	}
	err := w.rc.post(ctx, "/v1/table/"+w.table(c)+"/version/create", map[string]any{
		"version": v, "manifest_path": rootBase(w.objs) + "/" + key, "manifest_size": len(w.payload)}, nil)
	if err == nil {
		w.heads[c] = v
		return OK
	}
	if h, herr := w.head(context.WithoutCancel(ctx), c); herr == nil {
		w.heads[c] = h
	}
	var re *restError
	if errors.As(err, &re) && re.code == int(nserror.ConcurrentModification) {
		return Conflict
	}
	return Failed
}

// probe creates a namespace every hostileProbeEvery and records how long
// each took.
type probe struct {
	cancel  context.CancelFunc
	done    chan struct{}
	start   time.Time
	seconds float64
	lat     []time.Duration
	ok      int64
	errs    int64
}

var probeSeq atomic.Int64

func startProbe(ctx context.Context, rc *restClient) *probe {
	ctx, cancel := context.WithCancel(ctx)
	p := &probe{cancel: cancel, done: make(chan struct{}), start: time.Now()}
	go func() {
		defer close(p.done)
		tk := time.NewTicker(hostileProbeEvery)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			id := fmt.Sprintf("probe%d", probeSeq.Add(1))
			t0 := time.Now()
			// Not cut by the end of the phase: a slow answer is the point.
			err := rc.post(context.WithoutCancel(ctx), "/v1/namespace/"+id+"/create", map[string]any{}, nil)
			p.lat = append(p.lat, time.Since(t0))
			if err != nil {
				p.errs++
			} else {
				p.ok++
			}
		}
	}()
	return p
}

// stop ends the probe (it waits for the call in flight).
func (p *probe) stop() {
	p.cancel()
	<-p.done
	p.seconds = time.Since(p.start).Seconds()
}

func (p *probe) slowest() time.Duration {
	if len(p.lat) == 0 {
		return 0
	}
	return slices.Max(p.lat)
}

// mergeProbes is the stopped probes as one Result.
func mergeProbes(ps ...*probe) Result {
	r := Result{Clients: 1}
	var lat []time.Duration
	for _, p := range ps {
		r.Ops, r.Errors, r.Seconds = r.Ops+p.ok, r.Errors+p.errs, r.Seconds+p.seconds
		lat = append(lat, p.lat...)
	}
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	slices.Sort(lat)
	r.P50Ms, r.P95Ms, r.P99Ms = pct(lat, 0.50), pct(lat, 0.95), pct(lat, 0.99)
	return r
}

// --- the hostile queries ----------------------------------------------

// queryLoad is clients Flight SQL clients running hostileQueries in a loop.
// Each query is a `chrt --idle 0 flightns query --format arrow` child
// process (SCHED_IDLE, as the SQL worker) whose output is discarded: on a machine of two cores, clients in this
// process reading gigabytes of results would take the CPU from the
// commits measured beside them, which remote query clients would not.
type queryLoad struct {
	bin, addr string
	clients   int
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	start     time.Time
	seconds   float64
	issued    atomic.Int64

	mu     sync.Mutex
	codes  map[codes.Code]int
	lat    []time.Duration
	gaveUp int          // no answer within 3× the timeout
	late   int          // answered more than 1 s after the timeout
	per    []queryStats // by hostileQueries index
}

// queryStats is what became of one of the hostile queries.
type queryStats struct {
	sent, gaveUp int
	codes        map[codes.Code]int
	longest      time.Duration
}

// startQueries starts clients loops of queries to the Flight SQL server
// at addr, run by the flightns binary bin; it returns once every client
// has sent its first query.
func startQueries(ctx context.Context, bin, addr string, clients int) *queryLoad {
	ctx, cancel := context.WithCancel(ctx)
	ql := &queryLoad{bin: bin, addr: addr, clients: clients, cancel: cancel, codes: map[codes.Code]int{},
		per: make([]queryStats, len(hostileQueries)), start: time.Now()}
	sel := hostileSelection()
	for i := range clients {
		ql.wg.Go(func() {
			for n := i; ctx.Err() == nil; n++ {
				ql.run(ctx, sel[n%len(sel)])
			}
		})
	}
	for ql.issued.Load() < int64(clients) && time.Since(ql.start) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	// Give the first queries a moment to get going.
	time.Sleep(300 * time.Millisecond)
	return ql
}

// run sends one query and reads its whole result. Once sent, a query is
// not cancelled by the end of the phase: the server's timeout ends it,
// and how long that takes is part of the measurement.
func (ql *queryLoad) run(ctx context.Context, q int) {
	ql.issued.Add(1)
	giveUp := 3 * hostileQueryTimeout
	t0 := time.Now()
	code, err := ql.query(context.WithoutCancel(ctx), hostileQueries[q].sql, giveUp)
	took := time.Since(t0)
	if code != codes.OK && took < hostileRefusalPause {
		// Refused at once: pause, so that the load stays runaway
		// queries rather than a loop of refusals.
		defer time.Sleep(hostileRefusalPause)
	}
	ql.mu.Lock()
	defer ql.mu.Unlock()
	st := &ql.per[q]
	st.sent++
	if err != nil || took >= giveUp {
		ql.gaveUp++
		st.gaveUp++
		return
	}
	ql.codes[code]++
	if st.codes == nil {
		st.codes = map[codes.Code]int{}
	}
	st.codes[code]++
	st.longest = max(st.longest, took)
	ql.lat = append(ql.lat, took)
	if took > hostileQueryTimeout+time.Second {
		ql.late++
	}
}

// reCode finds the gRPC code in the error `flightns query` prints.
var reCode = regexp.MustCompile(`code = (\w+)`)

// codeByName is every gRPC code by its name.
var codeByName = func() map[string]codes.Code {
	m := map[string]codes.Code{}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		m[c.String()] = c
	}
	return m
}()

// query runs sql (GetFlightInfo, then DoGet of every endpoint) in a
// `flightns query` child under SCHED_IDLE, discards its result
// and returns the answer's gRPC code; err is a query that could not be
// run or told nothing within giveUp.
func (ql *queryLoad) query(ctx context.Context, sql string, giveUp time.Duration) (codes.Code, error) {
	ctx, cancel := context.WithTimeout(ctx, giveUp+5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "chrt", "--idle", "0", ql.bin, "query", "--flight", ql.addr,
		"--timeout", giveUp.String(), "--format", "arrow", sql)
	cmd.Env = serveEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // stdout: /dev/null
	err := cmd.Run()
	if err == nil {
		return codes.OK, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		if m := reCode.FindStringSubmatch(stderr.String()); m != nil {
			if c, ok := codeByName[m[1]]; ok {
				return c, nil
			}
		}
	}
	return codes.Unknown, fmt.Errorf("flightns query: %w: %s", err, strings.TrimSpace(stderr.String()))
}

// stop sends no more queries and waits for the answers of those in
// flight.
func (ql *queryLoad) stop() {
	ql.cancel()
	ql.wg.Wait()
	ql.seconds = time.Since(ql.start).Seconds()
}

// codeCounts is counts by gRPC code, in words.
func codeCounts(m map[codes.Code]int) string {
	var parts []string
	for c, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// perQuery describes what became of each hostile query.
func (ql *queryLoad) perQuery() string {
	ql.mu.Lock()
	defer ql.mu.Unlock()
	var parts []string
	for i, st := range ql.per {
		if st.sent == 0 {
			continue
		}
		p := fmt.Sprintf("%s: %d sent", hostileQueries[i].label, st.sent)
		if len(st.codes) > 0 {
			p += fmt.Sprintf(", answered %s, longest %.1f s", codeCounts(st.codes), st.longest.Seconds())
		}
		if st.gaveUp > 0 {
			p += fmt.Sprintf(", %d unanswered after %s", st.gaveUp, 3*hostileQueryTimeout)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// summary describes the queries' outcomes in words.
func (ql *queryLoad) summary() string {
	ql.mu.Lock()
	defer ql.mu.Unlock()
	longest := time.Duration(0)
	if len(ql.lat) > 0 {
		longest = slices.Max(ql.lat)
	}
	return fmt.Sprintf("%d queries sent, %d answered (%s), longest %.1f s, %d answered more than 1 s past the %s timeout, %d unanswered after %s",
		ql.issued.Load(), len(ql.lat), codeCounts(ql.codes), longest.Seconds(), ql.late, hostileQueryTimeout, ql.gaveUp, 3*hostileQueryTimeout)
}

// result is the queries as a Result: ops answered, errors unanswered.
func (ql *queryLoad) result() Result {
	ql.mu.Lock()
	defer ql.mu.Unlock()
	lat := slices.Clone(ql.lat)
	slices.Sort(lat)
	r := Result{Clients: ql.clients, Ops: int64(len(lat)), Errors: int64(ql.gaveUp), Seconds: ql.seconds,
		P50Ms: pct(lat, 0.50), P95Ms: pct(lat, 0.95), P99Ms: pct(lat, 0.99)}
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	return r
}

// --- the server's processes in /proc -----------------------------------

// procInfo is one process of the server's tree.
type procInfo struct {
	pid   int
	label string // "server", "sql-worker", "redis-server", …
	rss   int64  // bytes (VmRSS)
	ticks int64  // CPU time, clock ticks (utime + stime)
	wrote int64  // bytes it caused to be written to storage (write_bytes)
}

// procTree lists root and its descendants, from /proc.
func procTree(root int) []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	type stat struct {
		ppid  int
		comm  string
		ticks int64
	}
	all := map[int]stat{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields 4, 14 and 15.
		s := string(b)
		i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(s[j+1:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		all[pid] = stat{ppid: ppid, comm: s[i+1 : j], ticks: ut + st}
	}
	in := map[int]bool{root: true}
	for changed := true; changed; {
		changed = false
		for pid, st := range all {
			if !in[pid] && in[st.ppid] {
				in[pid], changed = true, true
			}
		}
	}
	var out []procInfo
	for pid := range in {
		st, ok := all[pid]
		if !ok {
			continue
		}
		label := st.comm
		switch {
		case pid == root:
			label = "server"
		case st.comm == "flightns":
			label = "sql-worker"
		}
		out = append(out, procInfo{pid: pid, label: label, rss: procStatus(pid, "VmRSS:") << 10, ticks: st.ticks,
			wrote: procIO(pid, "write_bytes:")})
	}
	return out
}

// procStatus is a kB field of /proc/pid/status (0 if it is gone).
func procStatus(pid int, field string) int64 {
	return procField(fmt.Sprintf("/proc/%d/status", pid), field)
}

// procIO is a field of /proc/pid/io (0 if unreadable).
func procIO(pid int, field string) int64 {
	return procField(fmt.Sprintf("/proc/%d/io", pid), field)
}

func procField(path, field string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// treeTicks is the CPU time of the tree, in clock ticks.
func treeTicks(root int) int64 {
	var t int64
	for _, p := range procTree(root) {
		t += p.ticks
	}
	return t
}

// treeSampler follows a process tree through a phase: its peak resident
// memory, and the CPU time and storage writes of each of its processes
// (a process that ends keeps what it was last seen to use).
type treeSampler struct {
	stopCh chan struct{}
	done   chan struct{}
	peak   int64
	seen   map[int]*procUse
	spill  string // a directory whose peak size is recorded
	spilt  int64
}

type procUse struct {
	label                     string
	ticks0, ticks, wrote0, wr int64
}

func sampleTree(root int, spillDir string) *treeSampler {
	s := &treeSampler{stopCh: make(chan struct{}), done: make(chan struct{}), seen: map[int]*procUse{}, spill: spillDir}
	first := true
	go func() {
		defer close(s.done)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			var rss int64
			for _, p := range procTree(root) {
				rss += p.rss
				u := s.seen[p.pid]
				if u == nil {
					u = &procUse{label: p.label}
					if first { // running before the phase: count from here
						u.ticks0, u.wrote0 = p.ticks, p.wrote
					}
					s.seen[p.pid] = u
				}
				u.ticks, u.wr = p.ticks, p.wrote
			}
			first = false
			s.peak = max(s.peak, rss)
			s.spilt = max(s.spilt, dirSize(s.spill))
			select {
			case <-s.stopCh:
				return
			case <-tk.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peak resident memory in bytes.
func (s *treeSampler) stop() int64 {
	close(s.stopCh)
	<-s.done
	return s.peak
}

// usage describes, after stop, the CPU time and storage writes of each
// kind of process during the phase, and the peak spill.
func (s *treeSampler) usage() string {
	const clockTicks = 100 // USER_HZ on Linux
	cpu, wrote := map[string]int64{}, map[string]int64{}
	for _, u := range s.seen {
		cpu[u.label] += u.ticks - u.ticks0
		wrote[u.label] += u.wr - u.wrote0
	}
	labels := slices.Sorted(maps.Keys(cpu))
	var parts []string
	for _, l := range labels {
		parts = append(parts, fmt.Sprintf("%s %.1f CPU s, wrote %s", l, float64(cpu[l])/clockTicks, mib(wrote[l])))
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; peak spill %s", mib(s.spilt))
}

// dirSize is the bytes of the files under dir (0 if there is none).
func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// loadAvg is the machine's 1-minute load average, in words.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// waitIdle waits, at most limit, until the process tree of root uses less
// than a quarter of a core over half a second; it returns how long that
// took and whether it happened.
func waitIdle(ctx context.Context, root int, limit time.Duration) (time.Duration, bool) {
	const window = 500 * time.Millisecond
	const clockTicks = 100 // USER_HZ on Linux
	start := time.Now()
	prev := treeTicks(root)
	for time.Since(start) < limit && ctx.Err() == nil {
		time.Sleep(window)
		cur := treeTicks(root)
		used := float64(cur-prev) / clockTicks
		prev = cur
		if used < 0.25*window.Seconds() {
			return max(0, time.Since(start)-window), true
		}
	}
	return time.Since(start), false
}

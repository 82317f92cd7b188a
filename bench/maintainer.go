package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/s3proxy"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// maintainerTables is how many tables the commits of commit-maintainer-s3
// go to (at least one per writer); tests make it smaller.
var maintainerTables = 16

// maintainerRetain is the retain_versions of those tables: every cleanup
// reads the kept manifests again, as a table with a real retention does.
const maintainerRetain = 10

// maintainerTarget is the most commit p99 may grow while the maintainer
// cleans up (issue 44): p99 with ÷ p99 without.
const maintainerTarget = 1.2

// commitMaintainerScenario measures what the maintainer's cleanups cost
// the commits running beside them: one-row-add-like commits (a
// transaction file, a real Lance manifest staged, CreateTableVersion
// through the namespace service) on MinIO, in alternating rounds with and
// without maintainer passes running back to back (MaintainPass, what the
// background maintainer runs every Interval), which clean up every table
// whose head moved — the other writers' tables and the writer's own.
func commitMaintainerScenario() Scenario {
	return Scenario{
		Name: "commit-maintainer-s3",
		Description: fmt.Sprintf("commits (transaction file, staged Lance manifest, CreateTableVersion) over %d tables on MinIO, in alternating rounds without the maintainer and with it cleaning up those tables "+
			"(passes back to back, and a pass a second; retention older_than 1ms, retain_versions %d): p50/p99 of each and p99 with ÷ without (target ≤ %.1f), at each --clients level up to 8",
			maintainerTables, maintainerRetain, maintainerTarget),
		Run:   runCommitMaintainer,
		Steps: func(cfg Config) int { return 5 * len(cfg.clientsUpTo(8)) },
	}
}

func runCommitMaintainer(ctx context.Context, cfg Config, rep *Report) error {
	rdb, stop, err := scenarioRedis(ctx, cfg)
	if err != nil {
		return err
	}
	defer stop()
	objs, log, minioPid, stopS3, err := tracedMinIO(ctx)
	if err != nil {
		return err
	}
	defer stopS3()
	host := hostUsage{minioPid: minioPid, rdb: rdb}
	// The maintainer's own loop never ticks here (an hour apart): the
	// rounds with it run its passes themselves, back to back, and the
	// rounds without run none. Each table may be cleaned up at every pass
	// (CleanupEvery), as often as its head moves.
	svc, err := namespace.Open(ctx, namespace.Config{Objects: objs, Redis: rdb, Catalog: "bench-maintain", Logger: quietLogger(), CleanupGrace: cleanupGrace, Maintain: &namespace.MaintainConfig{Interval: time.Hour, CleanupEvery: time.Millisecond}, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		return err
	}
	defer func() { _ = svc.Close() }()

	levels := cfg.clientsUpTo(8)
	n := max(maintainerTables, slices.Max(levels))
	props := api.Properties{namespace.PropCleanupOlderThan: "1ms", namespace.PropCleanupRetainVersions: strconv.Itoa(maintainerRetain)}
	t, err := newLanceTables(ctx, svc, objs, "hot", "t", n, props)
	if err != nil {
		return err
	}
	if err := t.build(ctx, 2*maintainerRetain, 8); err != nil {
		return err
	}
	if err := settle(ctx, svc); err != nil {
		return err
	}
	time.Sleep(stagingSwept)
	// A first pass reads every chain and cleans every table: the rounds
	// measure the maintainer at work, not its start.
	if _, err := svc.MaintainPass(ctx); err != nil {
		return err
	}
	for _, clients := range levels {
		if err := maintainerLevel(ctx, cfg, rep, svc, t, log, host, clients); err != nil {
			return fmt.Errorf("%d clients: %w", clients, err)
		}
	}
	return nil
}

// commitPhase pools the commits of one kind of round.
type commitPhase struct {
	lat                     []time.Duration
	ops, conflicts, errs    int64
	seconds                 float64
	requests                int
	roundP99s, roundRates   []float64
	passes, cleanups        int
	pruned, deleted, failed int
	passTook                []time.Duration
	busy                    time.Duration // passes running
	overrun                 time.Duration // passes running on past their rounds
	firstError              string
	byKind                  map[string]int           // S3 requests by kind
	kindTook                map[string]time.Duration // and their time at the proxy
	cpu                     cpuSample                // used during the rounds
}

// hostUsage is where the scenario reads the CPU time of the processes.
type hostUsage struct {
	minioPid int
	rdb      *redis.Client
}

// maintainerModes are the kinds of round: without the maintainer, with
// its passes back to back (every commit runs beside a cleanup), and with
// a pass started every second (the maintainer with --maintain-interval 1s,
// 60 times its default, and every table cleaned at each pass its head
// moved by, where the default is once an hour).
var maintainerModes = []struct {
	name  string
	on    bool
	every time.Duration
}{{"without", false, 0}, {"with", true, 0}, {"with-1s", true, time.Second}}

func maintainerLevel(ctx context.Context, cfg Config, rep *Report, svc *namespace.Service, t *lanceTables, log *requestLog, host hostUsage, clients int) error {
	phases := make([]commitPhase, len(maintainerModes))
	for i := range phases {
		phases[i].byKind, phases[i].kindTook = map[string]int{}, map[string]time.Duration{}
	}
	// Writer c commits to tables c, c+clients, c+2·clients, … in turn.
	cursor := make([]int, clients)
	tablesOf := func(c int) int { return (len(t.ids) - c + clients - 1) / clients }
	for round := range cfg.Rounds {
		// Each round starts with another mode, so that none always
		// follows the same one.
		for k := range maintainerModes {
			mi := (round + k) % len(maintainerModes)
			mode, ph := maintainerModes[mi], &phases[mi]
			// What the last round left to the materializer and the
			// sweeper is not this round's work.
			if err := settle(ctx, svc); err != nil {
				return err
			}
			time.Sleep(stagingSwept)
			var stopPasses func() passStats
			if mode.on {
				stopPasses = runPasses(ctx, svc, mode.every)
			}
			log.reset()
			cpu0 := sampleCPU(ctx, host.minioPid, host.rdb)
			start := time.Now()
			lat := make([][]time.Duration, clients)
			r := Measure(ctx, clients, cfg.Duration, func(ctx context.Context, c int) Outcome {
				i := c + clients*(cursor[c]%tablesOf(c))
				t0 := time.Now()
				// A commit under way when the round ends finishes: its
				// latency is real, and no answer is lost.
				out := t.commit(context.WithoutCancel(ctx), i)
				lat[c] = append(lat[c], time.Since(t0))
				if out == OK {
					cursor[c]++
				}
				return out
			})
			end := time.Now()
			ph.cpu = ph.cpu.plus(sampleCPU(ctx, host.minioPid, host.rdb).minus(cpu0))
			if mode.on {
				ps := stopPasses()
				ph.passes += len(ps.took)
				ph.passTook = append(ph.passTook, ps.took...)
				ph.busy += ps.busy
				ph.cleanups, ph.pruned, ph.deleted, ph.failed = ph.cleanups+ps.cleanups, ph.pruned+ps.pruned, ph.deleted+ps.deleted, ph.failed+ps.failed
				ph.overrun += time.Since(end)
				if ph.firstError == "" {
					ph.firstError = ps.firstError
				}
			}
			for _, q := range log.between(start, end) {
				ph.requests++
				ph.byKind[s3Kind(q)]++
				ph.kindTook[s3Kind(q)] += q.End.Sub(q.Start)
			}
			for _, l := range lat {
				ph.lat = append(ph.lat, l...)
			}
			ph.ops, ph.conflicts, ph.errs, ph.seconds = ph.ops+r.Ops, ph.conflicts+r.Conflicts, ph.errs+r.Errors, ph.seconds+r.Seconds
			ph.roundP99s, ph.roundRates = append(ph.roundP99s, r.P99Ms), append(ph.roundRates, r.OpsPerSec)
		}
	}
	without := &phases[0]
	wo := without.result(clients, "commit-maintainer-s3/without")
	wo.Note = fmt.Sprintf("commits with no maintainer pass running, over %d tables (writer c on tables c, c+%d, …); %d rounds of %s, alternating with the rounds with it; per round p99 %s ms, commits/s %s; "+
		"S3 requests %.1f per commit (everyone's: the writers' uploads, the commits, the catalog's segments), %s; %s",
		len(t.ids), clients, cfg.Rounds, cfg.Duration, floats(without.roundP99s, 1), floats(without.roundRates, 0), without.perCommit(),
		without.kinds(), without.cpu.cores(without.seconds))
	cfg.add(rep, wo)
	var maint []Result
	for mi, mode := range maintainerModes[1:] {
		with := &phases[mi+1]
		wi := with.result(clients, "commit-maintainer-s3/"+mode.name)
		wi.Ceiling = "p99 over commit-maintainer-s3/without's (same run, alternating rounds)"
		p50, rate := 0.0, 0.0
		if wo.P99Ms > 0 && wo.P50Ms > 0 && wo.OpsPerSec > 0 {
			wi.Ratio, p50, rate = wi.P99Ms/wo.P99Ms, wi.P50Ms/wo.P50Ms, wi.OpsPerSec/wo.OpsPerSec
		}
		cadence := "passes back to back"
		if mode.every > 0 {
			cadence = fmt.Sprintf("a pass started every %s", mode.every)
		}
		wi.Note = fmt.Sprintf("commits beside the maintainer, %s, each pass cleaning up every table whose head moved (retention older_than 1ms, retain_versions %d); "+
			"p99 %.2f× without (target ≤ %.1f), p50 %.2f×, commits/s %.2f×; per round p99 %s ms, commits/s %s; S3 requests %.1f per commit (the maintainer's included); "+
			"the maintainer meanwhile: %d passes, busy %.0f%% of the time, %d cleanups, %d versions pruned, %d objects deleted (pruned manifests: files are younger than the %s grace period); %s; %s",
			cadence, maintainerRetain, wi.Ratio, maintainerTarget, p50, rate, floats(with.roundP99s, 1), floats(with.roundRates, 0), with.perCommit(),
			with.passes, with.busyShare(), with.cleanups, with.pruned, with.deleted, cleanupGrace, with.kinds(), with.cpu.cores(with.seconds))
		cfg.add(rep, wi)
		maint = append(maint, with.maintainer(clients, "commit-maintainer-s3/maintainer"+strings.TrimPrefix(mode.name, "with"), cadence))
	}
	for _, m := range maint {
		cfg.add(rep, m)
	}
	return nil
}

// result is the phase's commits as one result.
func (p *commitPhase) result(clients int, scenario string) Result {
	sorted := slices.Clone(p.lat)
	slices.Sort(sorted)
	r := Result{Scenario: scenario, Backend: "minio", Clients: clients, Ops: p.ops, Errors: p.errs, Conflicts: p.conflicts, Seconds: p.seconds,
		P50Ms: pct(sorted, 0.50), P95Ms: pct(sorted, 0.95), P99Ms: pct(sorted, 0.99)}
	if p.seconds > 0 {
		r.OpsPerSec = float64(p.ops) / p.seconds
	}
	return r
}

// maintainer is what the maintainer did in the rounds with it: versions
// pruned per second of those rounds, and its passes' latency.
func (p *commitPhase) maintainer(clients int, scenario, cadence string) Result {
	sorted := slices.Clone(p.passTook)
	slices.Sort(sorted)
	r := Result{Scenario: scenario, Backend: "minio", Clients: clients, Ops: int64(p.pruned), Errors: int64(p.failed),
		Seconds: p.seconds, P50Ms: pct(sorted, 0.50), P95Ms: pct(sorted, 0.95), P99Ms: pct(sorted, 0.99), FirstError: p.firstError}
	if p.seconds > 0 {
		r.OpsPerSec = float64(p.pruned) / p.seconds
	}
	r.Note = fmt.Sprintf("the maintainer (%s) in its rounds: versions pruned per second of those rounds; p50/p95/p99 are its passes' durations; %d passes (the last of each round ran on %.2f s in all past its end, untimed), "+
		"busy %.0f%% of the time; %d cleanups, %d failed; %d versions pruned, %d objects deleted",
		cadence, p.passes, p.overrun.Seconds(), p.busyShare(), p.cleanups, p.failed, p.pruned, p.deleted)
	return r
}

// busyShare is the percentage of the rounds' time a pass was running.
func (p *commitPhase) busyShare() float64 {
	return 100 * p.busy.Seconds() / max(p.seconds+p.overrun.Seconds(), 1e-9)
}

// kinds is the phase's S3 requests per second by kind.
func (p *commitPhase) kinds() string {
	keys := slices.Collect(maps.Keys(p.byKind))
	slices.SortFunc(keys, func(a, b string) int {
		if p.byKind[a] != p.byKind[b] {
			return p.byKind[b] - p.byKind[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f/s %.1f ms", k, float64(p.byKind[k])/max(p.seconds, 1e-9), p.kindTook[k].Seconds()*1000/float64(p.byKind[k]))
	}
	return fmt.Sprintf("S3 requests per second %.0f, by kind with their mean time at the proxy: %s", float64(p.requests)/max(p.seconds, 1e-9), strings.Join(parts, ", "))
}

func (p *commitPhase) perCommit() float64 {
	if p.ops == 0 {
		return 0
	}
	return float64(p.requests) / float64(p.ops)
}

// passStats is what the passes of one round did.
type passStats struct {
	took                              []time.Duration
	busy                              time.Duration
	cleanups, pruned, deleted, failed int
	firstError                        string
}

// runPasses runs maintainer passes, one started every every (0: back to
// back), until stop, which waits for the pass in progress and returns
// what they did.
func runPasses(ctx context.Context, svc *namespace.Service, every time.Duration) (stop func() passStats) {
	quit, done := make(chan struct{}), make(chan struct{})
	var st passStats
	go func() {
		defer close(done)
		for {
			t0 := time.Now()
			r, err := svc.MaintainPass(ctx)
			took := time.Since(t0)
			st.took, st.busy = append(st.took, took), st.busy+took
			st.cleanups, st.pruned, st.deleted, st.failed = st.cleanups+r.Cleanups, st.pruned+r.CleanedVersions, st.deleted+r.Deleted, st.failed+r.Failed
			switch {
			case err != nil:
				st.failed++
				if st.firstError == "" {
					st.firstError = err.Error()
				}
			case !r.Held && st.firstError == "":
				st.firstError = "a pass did not hold the maintainer's lease"
			}
			select {
			case <-quit:
				return
			default:
			}
			if every > took {
				select {
				case <-quit:
					return
				case <-time.After(every - took):
				}
			}
		}
	}()
	return func() passStats {
		close(quit)
		<-done
		return st
	}
}

// floats shows values with prec decimals, separated by slashes.
func floats(vs []float64, prec int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatFloat(v, 'f', prec, 64)
	}
	return strings.Join(parts, "/")
}

// startMinIOProxy is startS3Proxy that also returns the MinIO server's
// process id, whose CPU time the scenario reports.
// tracedMinIO is a store on a MinIO server of its own, behind a proxy
// whose requests log records: the store, the log, MinIO's pid, and stop.
func tracedMinIO(ctx context.Context) (*objstore.Store, *requestLog, int, func(), error) {
	proxy, pid, stopS3, err := startMinIOProxy(ctx)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	log := &requestLog{}
	proxy.Trace = log.add
	objs, err := objstore.Open(ctx, proxy.URI("bench", ""))
	if err != nil {
		stopS3()
		return nil, nil, 0, nil, err
	}
	return objs, log, pid, func() { _ = objs.Close(); stopS3() }, nil
}

func startMinIOProxy(ctx context.Context) (*s3proxy.Proxy, int, func(), error) {
	dir, err := os.MkdirTemp("", "flightns-bench-minio-")
	if err != nil {
		return nil, 0, nil, err
	}
	m, err := minioproc.Start(ctx, minioproc.Config{Dir: dir, Buckets: []string{"bench"}})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, 0, nil, err
	}
	for k, v := range minioproc.Env() {
		_ = os.Setenv(k, v)
	}
	proxy, err := s3proxy.Start(m.URL)
	if err != nil {
		_ = m.Stop()
		_ = os.RemoveAll(dir)
		return nil, 0, nil, err
	}
	return proxy, m.Pid(), func() { proxy.Close(); _ = m.Stop(); _ = os.RemoveAll(dir) }, nil
}

// cpuSample is the CPU time used so far by this process (flightns, the
// writers, the maintainer), the MinIO server, Redis, and the whole
// machine.
type cpuSample struct {
	self, minio, redis, machine time.Duration
}

func sampleCPU(ctx context.Context, minioPid int, rdb *redis.Client) cpuSample {
	s := cpuSample{self: procCPU(os.Getpid()), minio: procCPU(minioPid)}
	if info, err := rdb.Info(ctx, "cpu").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
				f, _ := strconv.ParseFloat(v, 64)
				s.redis += time.Duration(f * float64(time.Second))
			}
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		// cpu user nice system idle iowait irq softirq steal …, in ticks
		line, _, _ := strings.Cut(string(b), "\n")
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseInt(f, 10, 64)
			if i != 3 && i != 4 && i < 8 {
				s.machine += time.Duration(v) * 10 * time.Millisecond
			}
		}
	}
	return s
}

func (s cpuSample) plus(o cpuSample) cpuSample {
	return cpuSample{s.self + o.self, s.minio + o.minio, s.redis + o.redis, s.machine + o.machine}
}

func (s cpuSample) minus(o cpuSample) cpuSample {
	return cpuSample{s.self - o.self, s.minio - o.minio, s.redis - o.redis, s.machine - o.machine}
}

// cores says how many cores each part kept busy on average over seconds.
func (s cpuSample) cores(seconds float64) string {
	if seconds <= 0 {
		return "no time measured"
	}
	f := func(d time.Duration) float64 { return d.Seconds() / seconds }
	return fmt.Sprintf("cores busy on average: this process (flightns, the writers, the maintainer) %.2f, MinIO %.2f, Redis %.2f, the whole machine %.2f of %d",
		f(s.self), f(s.minio), f(s.redis), f(s.machine), runtime.NumCPU())
}

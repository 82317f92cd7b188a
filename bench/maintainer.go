package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/namespace"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/sqlengine"
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
		Description: fmt.Sprintf("commits (transaction file, staged Lance manifest, CreateTableVersion) over %d tables on MinIO, in alternating rounds with and without the maintainer cleaning up those tables "+
			"(passes back to back; retention older_than 1ms, retain_versions %d): p50/p99 of each and p99 with ÷ without (target ≤ %.1f), at each --clients level up to 8",
			maintainerTables, maintainerRetain, maintainerTarget),
		Run:   runCommitMaintainer,
		Steps: func(cfg Config) int { return 3 * len(cfg.clientsUpTo(8)) },
	}
}

func runCommitMaintainer(ctx context.Context, cfg Config, rep *Report) error {
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
	log := &requestLog{}
	proxy.Trace = log.add
	objs, err := objstore.Open(ctx, proxy.URI("bench", ""))
	if err != nil {
		return err
	}
	defer func() { _ = objs.Close() }()
	// The maintainer's own loop never ticks here (an hour apart): the
	// rounds with it run its passes themselves, back to back, and the
	// rounds without run none. Each table may be cleaned up at every pass
	// (CleanupEvery), as often as its head moves.
	svc, err := namespace.Open(ctx, namespace.Config{Objects: objs, Redis: rdb, Catalog: "bench-maintain", Logger: quietLogger(),
		Engine: sqlengine.Config{MemoryLimit: "1GB"}, CleanupGrace: cleanupGrace,
		Maintain: &namespace.MaintainConfig{Interval: time.Hour, CleanupEvery: time.Millisecond}})
	if err != nil {
		return err
	}
	defer func() { _ = svc.Close() }()

	levels := cfg.clientsUpTo(8)
	n := max(maintainerTables, slices.Max(levels))
	props := namespace.Properties{namespace.PropCleanupOlderThan: "1ms", namespace.PropCleanupRetainVersions: strconv.Itoa(maintainerRetain)}
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
		if err := maintainerLevel(ctx, cfg, rep, svc, t, log, clients); err != nil {
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
	overrun                 time.Duration // passes running on past their rounds
	firstError              string
}

func maintainerLevel(ctx context.Context, cfg Config, rep *Report, svc *namespace.Service, t *lanceTables, log *requestLog, clients int) error {
	var with, without commitPhase
	// Writer c commits to tables c, c+clients, c+2·clients, … in turn.
	cursor := make([]int, clients)
	tablesOf := func(c int) int { return (len(t.ids) - c + clients - 1) / clients }
	for round := range cfg.Rounds {
		order := []bool{false, true}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, on := range order {
			// What the last round left to the materializer and the
			// sweeper is not this round's work.
			if err := settle(ctx, svc); err != nil {
				return err
			}
			time.Sleep(stagingSwept)
			ph := &without
			if on {
				ph = &with
			}
			var stopPasses func() passStats
			if on {
				stopPasses = runPasses(ctx, svc)
			}
			log.reset()
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
			if on {
				ps := stopPasses()
				ph.passes += len(ps.took)
				ph.passTook = append(ph.passTook, ps.took...)
				ph.cleanups, ph.pruned, ph.deleted, ph.failed = ph.cleanups+ps.cleanups, ph.pruned+ps.pruned, ph.deleted+ps.deleted, ph.failed+ps.failed
				ph.overrun += time.Since(end)
				if ph.firstError == "" {
					ph.firstError = ps.firstError
				}
			}
			ph.requests += len(log.between(start, end))
			for _, l := range lat {
				ph.lat = append(ph.lat, l...)
			}
			ph.ops, ph.conflicts, ph.errs, ph.seconds = ph.ops+r.Ops, ph.conflicts+r.Conflicts, ph.errs+r.Errors, ph.seconds+r.Seconds
			ph.roundP99s, ph.roundRates = append(ph.roundP99s, r.P99Ms), append(ph.roundRates, r.OpsPerSec)
		}
	}
	wo, wi := without.result(clients, "commit-maintainer-s3/without"), with.result(clients, "commit-maintainer-s3/with")
	wo.Note = fmt.Sprintf("commits with no maintainer pass running, over %d tables (writer c on tables c, c+%d, …); %d rounds of %s alternating with the rounds with it; per round p99 %s ms, commits/s %s; "+
		"S3 requests %.1f per commit (everyone's: the writers' uploads, the commits, the catalog's segments)",
		len(t.ids), clients, cfg.Rounds, cfg.Duration, floats(without.roundP99s, 1), floats(without.roundRates, 0), without.perCommit())
	wi.Ceiling = "p99 over commit-maintainer-s3/without's (same run, alternating rounds)"
	if wo.P99Ms > 0 {
		wi.Ratio = wi.P99Ms / wo.P99Ms
	}
	p50, rate := 0.0, 0.0
	if wo.P50Ms > 0 && wo.OpsPerSec > 0 {
		p50, rate = wi.P50Ms/wo.P50Ms, wi.OpsPerSec/wo.OpsPerSec
	}
	wi.Note = fmt.Sprintf("commits while the maintainer's passes ran back to back, cleaning up every table whose head moved (retention older_than 1ms, retain_versions %d); "+
		"p99 %.2f× without (target ≤ %.1f), p50 %.2f×, commits/s %.2f×; per round p99 %s ms, commits/s %s; S3 requests %.1f per commit (the maintainer's included); "+
		"the maintainer meanwhile: %d passes, %d cleanups, %d versions pruned, %d objects deleted (pruned manifests: files are younger than the %s grace period)",
		maintainerRetain, wi.Ratio, maintainerTarget, p50, rate, floats(with.roundP99s, 1), floats(with.roundRates, 0), with.perCommit(),
		with.passes, with.cleanups, with.pruned, with.deleted, cleanupGrace)
	m := with.maintainer(clients)
	cfg.add(rep, wo)
	cfg.add(rep, wi)
	cfg.add(rep, m)
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
func (p *commitPhase) maintainer(clients int) Result {
	sorted := slices.Clone(p.passTook)
	slices.Sort(sorted)
	r := Result{Scenario: "commit-maintainer-s3/maintainer", Backend: "minio", Clients: clients, Ops: int64(p.pruned), Errors: int64(p.failed),
		Seconds: p.seconds, P50Ms: pct(sorted, 0.50), P95Ms: pct(sorted, 0.95), P99Ms: pct(sorted, 0.99), FirstError: p.firstError}
	if p.seconds > 0 {
		r.OpsPerSec = float64(p.pruned) / p.seconds
	}
	var busy time.Duration
	for _, d := range p.passTook {
		busy += d
	}
	r.Note = fmt.Sprintf("the maintainer in the rounds with it: versions pruned per second of those rounds; p50/p95/p99 are its passes' durations; %d passes (the last of each round ran on %.2f s in all past its end, untimed), "+
		"busy %.0f%% of the time; %d cleanups, %d failed; %d versions pruned, %d objects deleted",
		p.passes, p.overrun.Seconds(), 100*busy.Seconds()/max(p.seconds+p.overrun.Seconds(), 1e-9), p.cleanups, p.failed, p.pruned, p.deleted)
	return r
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
	cleanups, pruned, deleted, failed int
	firstError                        string
}

// runPasses runs maintainer passes back to back until stop, which waits
// for the pass in progress and returns what they did.
func runPasses(ctx context.Context, svc *namespace.Service) (stop func() passStats) {
	quit, done := make(chan struct{}), make(chan struct{})
	var st passStats
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			t0 := time.Now()
			r, err := svc.MaintainPass(ctx)
			st.took = append(st.took, time.Since(t0))
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

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/nserror"
)

// Config selects what a run measures.
type Config struct {
	// Scenarios to run, by name; empty runs all.
	Scenarios []string
	// Clients lists the concurrency levels (default 1, 8, 32 and 128).
	Clients []int
	// Duration of each measurement.
	Duration time.Duration
	// Progress receives one line per finished measurement (may be nil).
	Progress io.Writer
	// ProgressBar draws a progress bar at the foot of Progress, with the
	// finished measurements' lines scrolling above it. Set it only when
	// Progress is a terminal.
	ProgressBar bool
	// Quick makes a short smoke run: unless set explicitly, 1 and 8
	// clients, 500 ms per measurement, the object-store, commit and
	// namespace scenarios, and 100,000 __manifest rows.
	Quick bool
	// TxnTables lists the table counts of the multi-table transactions
	// (default 2, 4 and 16).
	TxnTables []int
	// Backends limits the object-store backends measured ("mem", "file",
	// "s3"); empty means all that a scenario supports.
	Backends []string
	// ManifestRows lists the __manifest sizes the manifest and flight
	// scenarios measure (default 1,000,000).
	ManifestRows []int
	// RedisPersistence of the Redis servers the benchmarks start: "none"
	// (default), "everysec" or "always".
	RedisPersistence string
	// Processes lists the LanceDB writer processes of the lance and
	// lance-s3 scenarios (default 1 and 4).
	Processes []int
	// Rounds is how many alternating rounds the lance scenarios run of
	// each workload, reporting the median (default 3).
	Rounds int

	// run is the state shared by the scenarios of one Run: the ceilings
	// measured so far and the progress display.
	run *runState
}

// EnsureDefaults fills in what cfg leaves unset.
func (cfg *Config) EnsureDefaults() {
	if len(cfg.Clients) == 0 {
		cfg.Clients = []int{1, 8, 32, 128}
		if cfg.Quick {
			cfg.Clients = []int{1, 8}
		}
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
		if cfg.Quick {
			cfg.Duration = 500 * time.Millisecond
		}
	}
	if len(cfg.Scenarios) == 0 && cfg.Quick {
		cfg.Scenarios = []string{"objstore-put", "commit-many-tables", "commit-hot-table", "commit-multi-table", "namespace"}
	}
	if len(cfg.ManifestRows) == 0 {
		cfg.ManifestRows = []int{1_000_000}
		if cfg.Quick {
			cfg.ManifestRows = []int{100_000}
		}
	}
	if len(cfg.TxnTables) == 0 {
		cfg.TxnTables = []int{2, 4, 16}
	}
	if len(cfg.Processes) == 0 {
		cfg.Processes = []int{1, lanceProcesses}
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 3
	}
}

// Validate refuses what a run cannot measure: an unknown scenario or
// Redis persistence, a multi-table transaction of fewer than 2 tables.
func (cfg *Config) Validate() error {
	switch cfg.RedisPersistence {
	case "", "none", "everysec", "always":
	default:
		return fmt.Errorf("bench: Redis persistence %q is not none, everysec or always", cfg.RedisPersistence)
	}
	for _, k := range cfg.TxnTables {
		if k < 2 {
			return fmt.Errorf("bench: a multi-table transaction of %d tables", k)
		}
	}
	known := map[string]bool{}
	for _, s := range Scenarios() {
		known[s.Name] = true
	}
	for _, name := range cfg.Scenarios {
		if !known[name] {
			return fmt.Errorf("bench: unknown scenario %q", name)
		}
	}
	return nil
}

// clientsUpTo is cfg.Clients without the levels above limit (all of them
// if none is at or below it): for scenarios where more callers only queue
// on the two cores.
func (cfg Config) clientsUpTo(limit int) []int {
	var out []int
	for _, c := range cfg.Clients {
		if c <= limit {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return cfg.Clients
	}
	return out
}

func (cfg Config) persistence() redisproc.Persistence {
	switch cfg.RedisPersistence {
	case "everysec":
		return redisproc.AOFEverySec
	case "always":
		return redisproc.AOFAlways
	}
	return redisproc.None
}

// wants reports whether backend b is to be measured.
func (cfg Config) wants(b string) bool {
	return len(cfg.Backends) == 0 || slices.Contains(cfg.Backends, b)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Result is one measurement: a scenario on a backend at a concurrency.
type Result struct {
	Scenario  string  `json:"scenario"`
	Backend   string  `json:"backend,omitempty"`
	Clients   int     `json:"clients"`
	Ops       int64   `json:"ops"`
	Errors    int64   `json:"errors"`
	Conflicts int64   `json:"conflicts"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P95Ms     float64 `json:"p95_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// Ceiling names the raw measurement this result is compared with, and
	// Ratio is OpsPerSec divided by the ceiling's (for a few latency
	// comparisons, which Ceiling says, a ratio of p50 latencies).
	Ceiling string  `json:"ceiling,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
	// PeerRatios compares OpsPerSec with other references measured in
	// the same rounds, beside the ceiling: each is OpsPerSec divided by
	// the named result's (lance-s3: flightns against Lance's directory
	// namespace with managed versioning, lance-s3:dir-managed, and Lance
	// with its DynamoDB commit store, lance-s3:ddb).
	PeerRatios map[string]float64 `json:"peer_ratios,omitempty"`
	// ClaimRatio and StoreRatio compare the work done (table versions per
	// second) with the two raw ceilings at the same concurrency, measured
	// in the same run: scripted claims on Redis, and create-only puts on
	// the same object-store backend. Ratio repeats the one whose ceiling
	// is lower, the one that binds.
	ClaimRatio float64 `json:"claim_ratio,omitempty"`
	StoreRatio float64 `json:"store_ratio,omitempty"`
	// Precision is, for a plan, the share of the leaves it returned that
	// hold a row matching the filter (1: no leaf read in vain).
	Precision float64 `json:"precision,omitempty"`
	// ServerP50Ms is the server's own time of a request (commit-steps),
	// and StepsP50Ms its parts by step.
	ServerP50Ms float64            `json:"server_p50_ms,omitempty"`
	StepsP50Ms  map[string]float64 `json:"steps_p50_ms,omitempty"`
	// ServerCPUMs and RedisCPUMs are the CPU time the server (flightns in
	// the benchmark's process) and its Redis spent per operation while
	// the clients ran (lance), in milliseconds.
	ServerCPUMs float64 `json:"server_cpu_ms_per_op,omitempty"`
	RedisCPUMs  float64 `json:"redis_cpu_ms_per_op,omitempty"`
	// S3PerOp is the S3 requests per operation, counted at a proxy in
	// front of the S3 server (everyone's: flightns's and the engine's);
	// DynamoPerOp the DynamoDB requests per operation, counted at a proxy
	// in front of DynamoDB (lance-s3: Lance's DynamoDB commit store); and
	// S3Sequential the median of the longest chain of requests, S3 and
	// DynamoDB together, one operation waited for one after another
	// (lance-s3, one process).
	S3PerOp      float64 `json:"s3_requests_per_op,omitempty"`
	DynamoPerOp  float64 `json:"dynamodb_requests_per_op,omitempty"`
	S3Sequential float64 `json:"s3_sequential_per_op,omitempty"`
	// FirstError is the first failed operation's error, where some
	// failed (Errors) and the run went on (lance, lance-s3: an add Lance
	// gave up on).
	FirstError string `json:"first_error,omitempty"`
	// Subscribers is how many change feed subscribers followed the
	// commits (feed-latency, feed-commits); Undelivered counts the
	// acknowledged versions that never reached one of them (a run with
	// any fails); TargetPerSec is the rate commits were paced at
	// (feed-latency; OpsPerSec is the rate achieved).
	Subscribers  int     `json:"subscribers,omitempty"`
	Undelivered  int64   `json:"undelivered,omitempty"`
	TargetPerSec float64 `json:"target_per_sec,omitempty"`
	Note         string  `json:"note,omitempty"`
}

// Report is the JSON document of one run.
type Report struct {
	StartedAt time.Time `json:"started_at"`
	GoVersion string    `json:"go_version"`
	GOOS      string    `json:"goos"`
	GOARCH    string    `json:"goarch"`
	NumCPU    int       `json:"num_cpu"`
	Hostname  string    `json:"hostname"`
	Config    struct {
		Clients          []int    `json:"clients"`
		Duration         string   `json:"duration"`
		Scenarios        []string `json:"scenarios,omitempty"`
		Backends         []string `json:"backends,omitempty"`
		RedisPersistence string   `json:"redis_persistence"`
		Quick            bool     `json:"quick,omitempty"`
	} `json:"config"`
	Results []Result `json:"results"`
}

// Scenario is a named measurement.
type Scenario struct {
	Name        string
	Description string
	Run         func(ctx context.Context, cfg Config, rep *Report) error
	// Steps estimates how many results Run adds under cfg, ceilings
	// apart, for the progress bar (nil: one).
	Steps func(cfg Config) int
}

// Scenarios lists every scenario in the order a full run executes them.
func Scenarios() []Scenario {
	return append(append([]Scenario{objstoreScenario()}, commitScenarios()...), manifestScenario(), flightScenario(), namespaceScenario(), commitStepsScenario(), commitS3LatencyScenario(), commitReplicaScenario(), lanceScenario(), lanceS3Scenario(), planScenario(), consoleScenario(), hostileScenario(), replicasScenario(), cleanupS3Scenario(), commitMaintainerScenario(), feedLatencyScenario(), feedCommitsScenario(), commitCPUScenario())
}

// Run executes the configured scenarios and returns the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{StartedAt: time.Now().UTC(), GoVersion: runtime.Version(), GOOS: runtime.GOOS,
		GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU()}
	rep.Hostname, _ = os.Hostname()
	rep.Config.Clients = cfg.Clients
	rep.Config.Duration = cfg.Duration.String()
	rep.Config.Scenarios, rep.Config.Backends, rep.Config.Quick = cfg.Scenarios, cfg.Backends, cfg.Quick
	rep.Config.RedisPersistence = cfg.persistence().String()
	var selected []Scenario
	for _, s := range Scenarios() {
		if len(cfg.Scenarios) == 0 || slices.Contains(cfg.Scenarios, s.Name) {
			selected = append(selected, s)
		}
	}
	cfg.run = newRunState(cfg, selected)
	defer cfg.run.close()
	for i, s := range selected {
		cfg.run.tracker.start(i, s.Name)
		if err := s.Run(ctx, cfg, rep); err != nil {
			return rep, fmt.Errorf("bench: %s: %w", s.Name, err)
		}
	}
	cfg.run.tracker.finish()
	return rep, nil
}

// WriteJSON writes the report, indented.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Outcome classifies one operation.
type Outcome int

// The outcomes.
const (
	OK Outcome = iota
	Conflict
	Failed
)

// Op runs one operation of client c; its outcome is counted and its
// latency recorded.
type Op func(ctx context.Context, client int) Outcome

// Measure runs op in a closed loop from clients goroutines for d (or until
// done, if given, reports true) and summarizes throughput and latency. On a
// machine so loaded that no operation has succeeded within d, it runs on
// until one does (up to 4×d if only failures and conflicts finish, or until
// ctx ends): a result does not report a rate over nothing.
func Measure(ctx context.Context, clients int, d time.Duration, op Op, done ...func() bool) Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ops, errs, conflicts atomic.Int64
	go func() {
		deadline := time.Now().Add(d)
		for ctx.Err() == nil {
			if len(done) > 0 && done[0]() {
				break
			}
			now := time.Now()
			if now.After(deadline) && ops.Load() > 0 ||
				now.After(deadline.Add(3*d)) && errs.Load()+conflicts.Load() > 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				out := op(ctx, c)
				if ctx.Err() != nil && out == Failed {
					return // cut by the end of the measurement
				}
				lat[c] = append(lat[c], time.Since(t0))
				switch out {
				case OK:
					ops.Add(1)
				case Conflict:
					conflicts.Add(1)
				case Failed:
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return Result{
		Clients: clients, Ops: ops.Load(), Errors: errs.Load(), Conflicts: conflicts.Load(),
		Seconds: elapsed, OpsPerSec: float64(ops.Load()) / elapsed,
		P50Ms: pct(all, 0.50), P95Ms: pct(all, 0.95), P99Ms: pct(all, 0.99),
	}
}

// outcomeOf classifies an operation's error: conflicts apart.
func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case nserror.CodeOf(err) == nserror.ConcurrentModification:
		return Conflict
	}
	return Failed
}

func pct(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}

// add appends r to the report and shows it.
func (cfg Config) add(rep *Report, r Result) {
	rep.Results = append(rep.Results, r)
	cfg.progress(r)
}

// progress shows a finished measurement.
func (cfg Config) progress(r Result) {
	if cfg.run != nil {
		cfg.run.tracker.done(r)
		return
	}
	if cfg.Progress != nil {
		_, _ = fmt.Fprintln(cfg.Progress, r.line())
	}
}

// line is r on one line, as progress shows it.
func (r Result) line() string {
	s := fmt.Sprintf("%-30s %-6s clients=%-4d %9.0f ops/s  p50=%.2fms p95=%.2fms p99=%.2fms errors=%d conflicts=%d",
		r.Scenario, r.Backend, r.Clients, r.OpsPerSec, r.P50Ms, r.P95Ms, r.P99Ms, r.Errors, r.Conflicts)
	if r.Ratio > 0 {
		s += fmt.Sprintf(" ratio=%.2f", r.Ratio)
	}
	for _, peer := range slices.Sorted(maps.Keys(r.PeerRatios)) {
		s += fmt.Sprintf(" ratio-to-%s=%.2f", peer, r.PeerRatios[peer])
	}
	if r.S3PerOp > 0 {
		s += fmt.Sprintf(" s3/op=%.2f", r.S3PerOp)
	}
	if r.DynamoPerOp > 0 {
		s += fmt.Sprintf(" dynamodb/op=%.2f", r.DynamoPerOp)
	}
	if r.S3Sequential > 0 {
		s += fmt.Sprintf(" s3-sequential=%.0f", r.S3Sequential)
	}
	return s
}

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	// Clients lists the concurrency levels.
	Clients []int
	// Duration of each measurement.
	Duration time.Duration
	// Progress receives one line per finished measurement (may be nil).
	Progress io.Writer
	// Backends limits the object-store backends measured ("mem", "file",
	// "s3"); empty means all that a scenario supports.
	Backends []string
	// ManifestRows lists the __manifest sizes the manifest scenario
	// measures (default 1,000,000).
	ManifestRows []int
	// RedisPersistence of the Redis servers the benchmarks start: "none"
	// (default), "everysec" or "always".
	RedisPersistence string
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
	// Ratio is OpsPerSec divided by the ceiling's.
	Ceiling string  `json:"ceiling,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
	Note    string  `json:"note,omitempty"`
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
		Clients  []int  `json:"clients"`
		Duration string `json:"duration"`
	} `json:"config"`
	Results []Result `json:"results"`
}

// Scenario is a named measurement.
type Scenario struct {
	Name        string
	Description string
	Run         func(ctx context.Context, cfg Config, rep *Report) error
}

// Scenarios lists every scenario in the order a full run executes them.
func Scenarios() []Scenario {
	return append(append([]Scenario{objstoreScenario()}, commitScenarios()...), manifestScenario(), flightScenario(), namespaceScenario(), lanceScenario(), planScenario())
}

// Run executes the configured scenarios and returns the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if len(cfg.Clients) == 0 {
		cfg.Clients = []int{1, 8, 16, 32}
	}
	switch cfg.RedisPersistence {
	case "", "none", "everysec", "always":
	default:
		return nil, fmt.Errorf("bench: Redis persistence %q is not none, everysec or always", cfg.RedisPersistence)
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	rep := &Report{StartedAt: time.Now().UTC(), GoVersion: runtime.Version(), GOOS: runtime.GOOS,
		GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU()}
	rep.Hostname, _ = os.Hostname()
	rep.Config.Clients = cfg.Clients
	rep.Config.Duration = cfg.Duration.String()
	known := map[string]bool{}
	for _, s := range Scenarios() {
		known[s.Name] = true
	}
	for _, name := range cfg.Scenarios {
		if !known[name] {
			return nil, fmt.Errorf("bench: unknown scenario %q", name)
		}
	}
	for _, s := range Scenarios() {
		if len(cfg.Scenarios) > 0 && !slices.Contains(cfg.Scenarios, s.Name) {
			continue
		}
		if err := s.Run(ctx, cfg, rep); err != nil {
			return rep, fmt.Errorf("bench: %s: %w", s.Name, err)
		}
	}
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
// done, if given, reports true) and summarizes throughput and latency.
func Measure(ctx context.Context, clients int, d time.Duration, op Op, done ...func() bool) Result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if len(done) > 0 {
		go func() {
			for ctx.Err() == nil && !done[0]() {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
	}
	var ops, errs, conflicts atomic.Int64
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

func (cfg Config) progress(r Result) {
	if cfg.Progress == nil {
		return
	}
	_, _ = fmt.Fprintf(cfg.Progress, "%-24s %-6s clients=%-4d %10.0f ops/s  p50=%.2fms p99=%.2fms errors=%d conflicts=%d\n",
		r.Scenario, r.Backend, r.Clients, r.OpsPerSec, r.P50Ms, r.P99Ms, r.Errors, r.Conflicts)
}

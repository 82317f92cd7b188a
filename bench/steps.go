package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// commitStepsScenario shows where a lone writer's commit spends its time
// on the path `flightns serve` takes by default: REST over loopback, the
// namespace service, a private Redis on a Unix socket with its
// append-only file fsynced at every write, and the catalog root on tmpfs
// (where fsync is free, so what is left is coordination) and on disk.
func commitStepsScenario() Scenario {
	return Scenario{
		Name: "commit-steps",
		Description: "a lone writer's CreateTableVersion over REST, as `flightns serve` runs it by default (private Redis on a Unix socket, AOF fsynced always), " +
			"on tmpfs and on disk: client and server p50, and the server's time split into validate, claim, promote, confirm and reply",
		Run:   runCommitSteps,
		Steps: func(Config) int { return 2 },
	}
}

// commitStep names the parts of one commit's server time, in order.
var commitSteps = []string{"validate", "claim", "promote", "confirm", "reply"}

func runCommitSteps(ctx context.Context, cfg Config, rep *Report) error {
	type base struct{ backend, parent string }
	var bases []base
	if cfg.wants("file") {
		bases = append(bases, base{"file", ""})
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && cfg.wants("tmpfs") {
		bases = append(bases, base{"tmpfs", "/dev/shm"})
	}
	if len(cfg.Backends) > 0 && cfg.wants("s3") {
		bases = append(bases, base{"s3", ""})
	}
	for _, b := range bases {
		r, err := commitStepsOn(ctx, cfg, b.parent, b.backend == "s3")
		if err != nil {
			return fmt.Errorf("commit-steps on %s: %w", b.backend, err)
		}
		r.Backend = b.backend
		cfg.add(rep, r)
	}
	return nil
}

// stepClock times the parts of the one commit in flight (the writer is
// alone, so there is one at a time) and keeps each part's samples.
type stepClock struct {
	mu                                   sync.Mutex
	start, claimed, finalized, confirmed time.Time
	claimTook                            time.Duration
	server                               []time.Duration
	parts                                map[string][]time.Duration
}

func (c *stepClock) begin() {
	c.mu.Lock()
	c.start, c.claimed, c.finalized, c.confirmed, c.claimTook = time.Now(), time.Time{}, time.Time{}, time.Time{}, 0
	c.mu.Unlock()
}

func (c *stepClock) step(_ context.Context, step redisclaim.Step, _ string, _ uint64) error {
	now := time.Now()
	c.mu.Lock()
	switch step {
	case redisclaim.StepClaimed:
		c.claimed = now
	case redisclaim.StepFinalized:
		c.finalized = now
	case redisclaim.StepConfirmed:
		c.confirmed = now
	}
	c.mu.Unlock()
	return nil
}

func (c *stepClock) claim(_ int, took time.Duration, _ error) {
	c.mu.Lock()
	c.claimTook = took
	c.mu.Unlock()
}

// end closes the commit begun last; one that missed a step (a conflict,
// a failure) counts in the server time only.
func (c *stepClock) end() {
	end := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.server = append(c.server, end.Sub(c.start))
	if c.claimed.IsZero() || c.finalized.IsZero() || c.confirmed.IsZero() {
		return
	}
	claimStart := c.claimed.Add(-c.claimTook)
	for i, d := range []time.Duration{claimStart.Sub(c.start), c.claimTook, c.finalized.Sub(c.claimed), c.confirmed.Sub(c.finalized), end.Sub(c.confirmed)} {
		c.parts[commitSteps[i]] = append(c.parts[commitSteps[i]], d)
	}
}

// median is the p50 of d, as Measure reports it.
func median(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return pct(s, 0.50)
}

// commitStepsOn measures a lone writer with Redis's files in a fresh
// directory under parent ("" is the temp directory) and the root there
// too, or on a MinIO server of its own if onS3.
func commitStepsOn(ctx context.Context, cfg Config, parent string, onS3 bool) (Result, error) {
	dir, err := os.MkdirTemp(parent, "flightns-bench-steps-")
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	rs, err := redisproc.Start(ctx, redisproc.Config{Dir: filepath.Join(dir, "redis"), Unix: filepath.Join(dir, "redis.sock"), Persistence: redisproc.AOFAlways})
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = rs.Kill() }()
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: rs.Addr()})
	defer func() { _ = rdb.Close() }()
	var objs *objstore.Store
	if onS3 {
		s, cleanup, err := openBackend(ctx, "s3")
		if err != nil {
			return Result{}, err
		}
		defer cleanup()
		objs = s
	} else {
		s, err := objstore.Open(ctx, "file://"+filepath.Join(dir, "root"))
		if err != nil {
			return Result{}, err
		}
		defer func() { _ = s.Close() }()
		objs = s
	}
	clk := &stepClock{parts: map[string][]time.Duration{}}
	svc, err := namespace.Open(ctx, namespace.Config{Objects: objs, Redis: rdb, Catalog: "bench", Logger: quietLogger(), Claims: redisclaim.Config{Step: clk.step, Observer: &redisclaim.Observer{Claim: clk.claim}}, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = svc.Close() }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, err
	}
	h := restserver.New(svc, restserver.Options{Logger: quietLogger()})
	var timed atomic.Bool
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !timed.Load() || !strings.HasSuffix(r.URL.Path, "/version/create") {
			h.ServeHTTP(w, r)
			return
		}
		clk.begin()
		h.ServeHTTP(w, r)
		clk.end()
	})}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	rc := newRESTClient(ln.Addr().String())
	w := &replicaWriter{rcs: []*restClient{rc}, objs: objs, payload: make([]byte, 1024), served: make([]atomic.Int64, 1)}
	if err := w.setupTables(ctx, 1); err != nil {
		return Result{}, err
	}
	for range 50 { // warm up: connections, the engine's first rows
		if w.commitTable(ctx, 0, 0) != OK {
			return Result{}, fmt.Errorf("a warm-up commit failed")
		}
	}
	timed.Store(true)
	r := Measure(ctx, 1, cfg.Duration, func(ctx context.Context, _ int) Outcome { return w.commitTable(ctx, 0, 0) })
	timed.Store(false)

	clk.mu.Lock()
	defer clk.mu.Unlock()
	r.Scenario = "commit-steps"
	r.ServerP50Ms = median(clk.server)
	r.StepsP50Ms = map[string]float64{}
	var parts []string
	for _, s := range commitSteps {
		r.StepsP50Ms[s] = median(clk.parts[s])
		parts = append(parts, fmt.Sprintf("%s %.3f", s, r.StepsP50Ms[s]))
	}
	r.Note = fmt.Sprintf("server p50 %.3f ms (target ≤ 0.4 on tmpfs), client p50 %.3f ms; server p50 by step (ms): %s; staging written without fsync as Lance's writers do",
		r.ServerP50Ms, r.P50Ms, strings.Join(parts, ", "))
	return r, nil
}

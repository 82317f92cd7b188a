package bench

import (
	"context"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/s3proxy"
	"github.com/flightns/flightns/objstore"
)

//go:embed ceiling.lua
var ceilingLua string

// The raw ceilings every result is compared with. Each is measured once
// per run and concurrency, on first use, and added to the report where it
// is first needed:
//
//   - ceiling:scripted-claim — redis-benchmark running ceiling.lua (the
//     Redis work of one successful claim) by EVALSHA on a private Redis
//     with the run's persistence, at the same number of connections: the
//     most claims per second Redis can linearize here.
//   - objstore-put — create-only 1 KiB puts to fresh keys on a fresh store
//     of the backend (file://, mem://, s3:// on a MinIO server):
//     the durable write under every commit and every catalog mutation.
//
// A result's ratio is its rate of work over the lower of the ceilings it
// depends on (see Result.ClaimRatio and Result.StoreRatio).
type ceilings struct {
	mu     sync.Mutex
	dir    string
	rs     *redisproc.Server
	rdb    *redis.Client
	sha    string
	claims map[int]Result    // by clients
	puts   map[string]Result // by backend/clients
}

func newCeilings() *ceilings {
	return &ceilings{claims: map[int]Result{}, puts: map[string]Result{}}
}

func (c *ceilings) close() {
	if c.rdb != nil {
		_ = c.rdb.Close()
	}
	if c.rs != nil {
		_ = c.rs.Kill()
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// claim returns the scripted-claim ceiling at clients connections,
// measuring it (and adding it to rep) the first time.
func (c *ceilings) claim(ctx context.Context, cfg Config, rep *Report, clients int) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.claims[clients]; ok {
		return r, nil
	}
	if c.rs == nil {
		dir, err := os.MkdirTemp("", "flightns-bench-ceiling-")
		if err != nil {
			return Result{}, err
		}
		c.dir = dir
		if c.rs, err = redisproc.Start(ctx, redisproc.Config{Dir: filepath.Join(dir, "redis"), Persistence: cfg.persistence()}); err != nil {
			return Result{}, err
		}
		c.rdb = redis.NewClient(&redis.Options{Addr: c.rs.Addr()})
		if c.sha, err = c.rdb.ScriptLoad(ctx, ceilingLua).Result(); err != nil {
			return Result{}, err
		}
	}
	r, err := scriptedClaimCeiling(ctx, c.rs, c.sha, clients, cfg.Duration)
	if err != nil {
		return Result{}, err
	}
	r.Note = fmt.Sprintf("redis-benchmark EVALSHA of the claim write path (ceiling.lua), Redis persistence %s", cfg.persistence())
	c.claims[clients] = r
	cfg.add(rep, r)
	return r, nil
}

// put returns the create-only put ceiling of backend at clients writers,
// measuring it (and adding it to rep) the first time.
func (c *ceilings) put(ctx context.Context, cfg Config, rep *Report, backend string, clients int) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := fmt.Sprintf("%s/%d", backend, clients)
	if r, ok := c.puts[key]; ok {
		return r, nil
	}
	store, cleanup, err := openBackend(ctx, backend)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	payload := make([]byte, 1024)
	var seq atomic.Int64
	r := Measure(ctx, clients, cfg.Duration, func(ctx context.Context, _ int) Outcome {
		k := fmt.Sprintf("bench/%012d.manifest", seq.Add(1))
		if err := store.PutIfAbsent(ctx, k, payload); err != nil {
			return Failed
		}
		return OK
	})
	r.Scenario, r.Backend = "objstore-put", backend
	r.Note = "create-only 1 KiB puts to fresh keys, each durable before the next"
	c.puts[key] = r
	cfg.add(rep, r)
	return r, nil
}

// compare sets r's ratios to the ceilings at its concurrency: claim (if
// the work goes through Redis claims) and the backend's puts (if it writes
// to the object store). perOp is the table versions or catalog changes
// one operation carries.
func (c *ceilings) compare(ctx context.Context, cfg Config, rep *Report, r *Result, claims, puts bool, perOp int) error {
	work := r.OpsPerSec * float64(perOp)
	var claimR, putR Result
	var err error
	if claims {
		if claimR, err = c.claim(ctx, cfg, rep, r.Clients); err != nil {
			return err
		}
		if claimR.OpsPerSec > 0 {
			r.ClaimRatio = work / claimR.OpsPerSec
		}
	}
	if puts {
		if putR, err = c.put(ctx, cfg, rep, r.Backend, r.Clients); err != nil {
			return err
		}
		if putR.OpsPerSec > 0 {
			r.StoreRatio = work / putR.OpsPerSec
		}
	}
	what := "table versions/s"
	if perOp == 1 {
		what = "ops/s"
	}
	switch {
	case claims && (!puts || claimR.OpsPerSec <= putR.OpsPerSec):
		r.Ceiling, r.Ratio = fmt.Sprintf("%s, %d clients (%s over its ops/s)", claimR.Scenario, r.Clients, what), r.ClaimRatio
	case puts:
		r.Ceiling, r.Ratio = fmt.Sprintf("%s %s, %d clients (%s over its ops/s)", putR.Scenario, putR.Backend, r.Clients, what), r.StoreRatio
	}
	return nil
}

// backends are the object stores a scenario can run on, in report order.
var backends = []string{"mem", "file", "s3"}

// openBackend opens a fresh, empty store of the named backend: memory, a
// temporary directory, or a bucket on a MinIO server of its own.
// cleanup closes it and removes what it holds.
func openBackend(ctx context.Context, name string) (*objstore.Store, func(), error) {
	switch name {
	case "mem":
		s, err := objstore.Open(ctx, "mem://")
		if err != nil {
			return nil, nil, err
		}
		return s, func() { _ = s.Close() }, nil
	case "file":
		dir, err := os.MkdirTemp("", "flightns-bench-store-")
		if err != nil {
			return nil, nil, err
		}
		s, err := objstore.Open(ctx, "file://"+dir)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, nil, err
		}
		return s, func() { _ = s.Close(); _ = os.RemoveAll(dir) }, nil
	case "s3":
		url, stop, err := startS3(ctx)
		if err != nil {
			return nil, nil, err
		}
		s, err := openS3(ctx, url)
		if err != nil {
			stop()
			return nil, nil, err
		}
		return s, func() { _ = s.Close(); stop() }, nil
	}
	return nil, nil, fmt.Errorf("unknown object-store backend %q (mem, file or s3)", name)
}

// startS3 starts a fresh MinIO server (internal/minioproc: the pinned
// release, its own process, data in a new temporary directory on disk)
// with an empty bucket "bench", and returns its URL.
func startS3(ctx context.Context) (string, func(), error) {
	dir, err := os.MkdirTemp("", "flightns-bench-minio-")
	if err != nil {
		return "", nil, err
	}
	m, err := minioproc.Start(ctx, minioproc.Config{Dir: dir, Buckets: []string{"bench"}})
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	for k, v := range minioproc.Env() {
		_ = os.Setenv(k, v)
	}
	return m.URL, func() { _ = m.Stop(); _ = os.RemoveAll(dir) }, nil
}

// startS3Proxy starts a fresh MinIO server (startS3) and an s3proxy in
// front of it, and returns the proxy and how to stop both.
func startS3Proxy(ctx context.Context) (*s3proxy.Proxy, func(), error) {
	url, stopS3, err := startS3(ctx)
	if err != nil {
		return nil, nil, err
	}
	proxy, err := s3proxy.Start(url)
	if err != nil {
		stopS3()
		return nil, nil, err
	}
	return proxy, func() { proxy.Close(); stopS3() }, nil
}

// openS3 opens the bucket "bench" of the S3 server at endpoint.
func openS3(ctx context.Context, endpoint string) (*objstore.Store, error) {
	return objstore.Open(ctx, objstore.S3URI(endpoint, "bench", ""))
}

// scriptedClaimCeiling runs redis-benchmark with the ceiling script at
// clients connections for about d: the most claims per second this Redis
// can do.
func scriptedClaimCeiling(ctx context.Context, rs *redisproc.Server, sha string, clients int, d time.Duration) (Result, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return Result{}, errors.New("redis-benchmark is not installed (apt-get install redis-tools)")
	}
	// Aim at about the measurement's duration: calibrate with short runs.
	n := 5000
	for {
		start := time.Now()
		res, err := redisBenchmark(ctx, bin, rs, sha, clients, n)
		if err != nil {
			return Result{}, err
		}
		elapsed := time.Since(start)
		if elapsed >= d/2 || n >= 5_000_000 {
			res.Scenario, res.Backend, res.Clients, res.Ops, res.Seconds = "ceiling:scripted-claim", "redis", clients, int64(n), elapsed.Seconds()
			return res, nil
		}
		n = int(float64(n) * float64(d) / float64(elapsed+time.Millisecond))
		n = max(n, 5000)
	}
}

func redisBenchmark(ctx context.Context, bin string, rs *redisproc.Server, sha string, clients, n int) (Result, error) {
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(rs.Port()), "-c", strconv.Itoa(clients), "-n", strconv.Itoa(n),
		"-r", "64", "--csv", "EVALSHA", sha, "5",
		"{ceil}:heads", "{ceil}:seq", "{ceil}:log", "{ceil}:v:t__rand_int__", "{ceil}:z:t__rand_int__", "t__rand_int__"}
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		return Result{}, fmt.Errorf("redis-benchmark: %w", err)
	}
	recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(recs) < 2 || len(recs[1]) < 8 {
		return Result{}, fmt.Errorf("redis-benchmark printed %q", out)
	}
	// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	f := func(i int) float64 { v, _ := strconv.ParseFloat(recs[1][i], 64); return v }
	return Result{OpsPerSec: f(1), P50Ms: f(4), P95Ms: f(5), P99Ms: f(6)}, nil
}

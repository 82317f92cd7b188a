package bench

import (
	"context"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

//go:embed ceiling.lua
var ceilingLua string

// commitScenarios measure the claim protocol end to end: a writer stages a
// 1 KiB manifest (without fsync, as Lance's writers do) and commits it with
// Put or BatchPut. Each runs on mem:// and file:// against a private Redis,
// next to redis-benchmark running the equivalent claim script on the same
// server (the ceiling).
func commitScenarios() []Scenario {
	return []Scenario{
		{
			Name:        "commit-many-tables",
			Description: "single-table commits to 64 tables (random table per commit; a conflict retries with the head it reports)",
			Run: func(ctx context.Context, cfg Config, rep *Report) error {
				return runCommits(ctx, cfg, rep, "commit-many-tables", 64, 1)
			},
		},
		{
			Name:        "commit-hot-table",
			Description: "single-table commits all to one table: successful commits/s and conflicts",
			Run: func(ctx context.Context, cfg Config, rep *Report) error {
				return runCommits(ctx, cfg, rep, "commit-hot-table", 1, 1)
			},
		},
		{
			Name:        "commit-multi-table",
			Description: "atomic commits of 4 tables at once (BatchPut) over 64 tables",
			Run: func(ctx context.Context, cfg Config, rep *Report) error {
				return runCommits(ctx, cfg, rep, "commit-multi-table", 64, 4)
			},
		},
	}
}

func runCommits(ctx context.Context, cfg Config, rep *Report, name string, tables, perTxn int) error {
	dir, err := os.MkdirTemp("", "flightns-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	rs, err := redisproc.Start(ctx, redisproc.Config{Dir: dir + "/redis", Persistence: cfg.persistence()})
	if err != nil {
		return err
	}
	defer func() { _ = rs.Kill() }()
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), PoolSize: 256})
	defer func() { _ = rdb.Close() }()

	for _, clients := range cfg.Clients {
		ceiling, err := scriptedClaimCeiling(ctx, rdb, rs, clients, cfg.Duration)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, ceiling)
		cfg.progress(ceiling)
		for _, backend := range []string{"mem", "file"} {
			if !cfg.wants(backend) {
				continue
			}
			uri := "mem://"
			if backend == "file" {
				uri = "file://" + fmt.Sprintf("%s/root-%s-%d", dir, name, clients)
			}
			objs, err := objstore.Open(ctx, uri)
			if err != nil {
				return err
			}
			catalog := fmt.Sprintf("bench-%s-%d", backend, clients)
			s, err := redisclaim.New(ctx, redisclaim.Config{Redis: rdb, Objects: objs, Catalog: catalog, Logger: quietLogger()})
			if err != nil {
				return err
			}
			if err := s.Recover(ctx); err != nil {
				return err
			}
			w := &committer{s: s, objs: objs, tables: tables, perTxn: perTxn, heads: make([]atomic.Uint64, tables)}
			r := Measure(ctx, clients, cfg.Duration, w.commit)
			r.Scenario, r.Backend = name, backend
			r.Ceiling = ceiling.Scenario
			if ceiling.OpsPerSec > 0 {
				r.Ratio = r.OpsPerSec / ceiling.OpsPerSec
			}
			if perTxn > 1 {
				r.Note = fmt.Sprintf("%d tables per commit; ops are transactions", perTxn)
			}
			rep.Results = append(rep.Results, r)
			cfg.progress(r)
			_ = s.Close()
			_ = objs.Close()
		}
	}
	return nil
}

// committer is the writers of one measurement. heads caches each table's
// last known head, as a client would: a conflict reports the real head.
type committer struct {
	s       *redisclaim.Store
	objs    *objstore.Store
	tables  int
	perTxn  int
	heads   []atomic.Uint64
	payload [1024]byte
}

func (w *committer) table(i int) string { return fmt.Sprintf("tbl%03d", i) }

func (w *committer) commit(ctx context.Context, _ int) Outcome {
	if w.perTxn == 1 {
		i := rand.IntN(w.tables)
		tbl := w.table(i)
		v := w.heads[i].Load() + 1
		staging := redisclaim.StagingPath(redisclaim.ManifestPath(tbl, redisclaim.V2, v))
		if err := w.objs.Put(ctx, staging, w.payload[:], objstore.NoSync()); err != nil {
			return Failed
		}
		_, err := w.s.Put(ctx, tbl, v, staging, int64(len(w.payload)), "")
		return w.outcome(ctx, err, i, v)
	}
	idx := rand.Perm(w.tables)[:w.perTxn]
	var es []redisclaim.Entry
	for _, i := range idx {
		tbl := w.table(i)
		v := w.heads[i].Load() + 1
		staging := redisclaim.StagingPath(redisclaim.ManifestPath(tbl, redisclaim.V2, v))
		if err := w.objs.Put(ctx, staging, w.payload[:], objstore.NoSync()); err != nil {
			return Failed
		}
		es = append(es, redisclaim.Entry{Table: tbl, Version: v, StagingPath: staging, Size: int64(len(w.payload))})
	}
	_, err := w.s.BatchPut(ctx, es)
	if err == nil {
		for k, i := range idx {
			raise(&w.heads[i], es[k].Version)
		}
		return OK
	}
	var ce *redisclaim.ConflictError
	if errors.As(err, &ce) || nserror.CodeOf(err) == nserror.InvalidInput {
		// Refresh every member's head at once, as a client would.
		tables := make([]string, len(es))
		for k := range es {
			tables[k] = es[k].Table
		}
		if heads, _, err := w.s.LatestVersions(ctx, tables); err == nil {
			for k, i := range idx {
				raise(&w.heads[i], heads[k])
			}
		}
		return Conflict
	}
	return Failed
}

func (w *committer) outcome(ctx context.Context, err error, i int, v uint64) Outcome {
	var ce *redisclaim.ConflictError
	switch {
	case err == nil:
		raise(&w.heads[i], v)
		return OK
	case errors.As(err, &ce):
		raise(&w.heads[i], ce.Head)
		return Conflict
	case nserror.CodeOf(err) == nserror.InvalidInput:
		// A stale cache far behind (a gap): resynchronize.
		if h, _, _, err := w.s.GetLatestVersion(ctx, w.table(i)); err == nil {
			raise(&w.heads[i], h)
		}
		return Conflict
	}
	return Failed
}

func raise(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// scriptedClaimCeiling runs redis-benchmark with the ceiling script at the
// same concurrency: the most claims per second this Redis can do.
func scriptedClaimCeiling(ctx context.Context, rdb *redis.Client, rs *redisproc.Server, clients int, d time.Duration) (Result, error) {
	sha, err := rdb.ScriptLoad(ctx, ceilingLua).Result()
	if err != nil {
		return Result{}, err
	}
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return Result{}, errors.New("redis-benchmark is not installed (apt-get install redis-tools)")
	}
	// Aim at about the measurement's duration: calibrate with a short run.
	n := 20000
	for {
		start := time.Now()
		rate, p50, p99, err := redisBenchmark(ctx, bin, rs, sha, clients, n)
		if err != nil {
			return Result{}, err
		}
		elapsed := time.Since(start)
		if elapsed >= d/2 || n >= 5_000_000 {
			return Result{Scenario: "ceiling:scripted-claim", Backend: "redis", Clients: clients, Ops: int64(n),
				Seconds: elapsed.Seconds(), OpsPerSec: rate, P50Ms: p50, P99Ms: p99,
				Note: "redis-benchmark EVALSHA of the claim write path, same server"}, nil
		}
		n = int(float64(n) * float64(d) / float64(elapsed+time.Millisecond))
		n = max(n, 20000)
	}
}

var benchMu sync.Mutex

func redisBenchmark(ctx context.Context, bin string, rs *redisproc.Server, sha string, clients, n int) (rate, p50, p99 float64, err error) {
	benchMu.Lock()
	defer benchMu.Unlock()
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(rs.Port()), "-c", strconv.Itoa(clients), "-n", strconv.Itoa(n),
		"-r", "64", "--csv", "EVALSHA", sha, "5",
		"{ceil}:heads", "{ceil}:seq", "{ceil}:log", "{ceil}:v:t__rand_int__", "{ceil}:z:t__rand_int__", "t__rand_int__"}
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("redis-benchmark: %w", err)
	}
	recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(recs) < 2 || len(recs[1]) < 8 {
		return 0, 0, 0, fmt.Errorf("redis-benchmark printed %q", out)
	}
	// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	rate, _ = strconv.ParseFloat(recs[1][1], 64)
	p50, _ = strconv.ParseFloat(recs[1][4], 64)
	p99, _ = strconv.ParseFloat(recs[1][6], 64)
	return rate, p50, p99, nil
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// commitTables is the number of tables the many-tables and multi-table
// scenarios spread their commits over.
const commitTables = 1024

// commitScenarios measure the claim protocol end to end: a writer stages a
// 1 KiB manifest (without fsync, as Lance's writers do) and commits it with
// Put or BatchPut. Each runs on mem://, file:// and s3:// (an in-process
// S3 server) against a private Redis with the run's persistence, and is
// compared with the scripted-claim and object-store ceilings at the same
// concurrency.
func commitScenarios() []Scenario {
	steps := func(cfg Config) int { return len(cfg.Clients) * cfg.backendCount() }
	return []Scenario{
		{
			Name:        "commit-many-tables",
			Description: "single-table commits spread over 1,024 tables (random table per commit; a conflict retries with the head it reports)",
			Run: func(ctx context.Context, cfg Config, rep *Report) error {
				return runCommits(ctx, cfg, rep, "commit-many-tables", commitTables, 1)
			},
			Steps: steps,
		},
		{
			Name:        "commit-hot-table",
			Description: "single-table commits all to one table: successful commits/s and conflicts",
			Run: func(ctx context.Context, cfg Config, rep *Report) error {
				return runCommits(ctx, cfg, rep, "commit-hot-table", 1, 1)
			},
			Steps: steps,
		},
		{
			Name:        "commit-multi-table",
			Description: "atomic commits of 2, 4 and 16 tables at once (BatchPut, --txn-tables) over 1,024 tables",
			Run: func(ctx context.Context, cfg Config, rep *Report) error {
				for _, k := range cfg.TxnTables {
					if err := runCommits(ctx, cfg, rep, fmt.Sprintf("commit-multi-table:%d", k), commitTables, k); err != nil {
						return err
					}
				}
				return nil
			},
			Steps: func(cfg Config) int { return len(cfg.TxnTables) * steps(cfg) },
		},
	}
}

// backendCount is how many of the object-store backends cfg measures.
func (cfg Config) backendCount() int {
	n := 0
	for _, b := range backends {
		if cfg.wants(b) {
			n++
		}
	}
	return n
}

// scenarioRedis starts a private Redis with the run's persistence in a
// fresh temporary directory, and a client of it; stop kills it and
// removes the directory.
func scenarioRedis(ctx context.Context, cfg Config) (rdb *redis.Client, stop func(), err error) {
	dir, err := os.MkdirTemp("", "flightns-bench-")
	if err != nil {
		return nil, nil, err
	}
	rs, err := redisproc.Start(ctx, redisproc.Config{Dir: dir + "/redis", Persistence: cfg.persistence()})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	rdb = redis.NewClient(&redis.Options{Addr: rs.Addr(), PoolSize: 256})
	return rdb, func() { _ = rdb.Close(); _ = rs.Kill(); _ = os.RemoveAll(dir) }, nil
}

func runCommits(ctx context.Context, cfg Config, rep *Report, name string, tables, perTxn int) error {
	rdb, stop, err := scenarioRedis(ctx, cfg)
	if err != nil {
		return err
	}
	defer stop()

	// One catalog and store per backend, kept across the concurrency
	// levels: each level commits on top of the last, as a catalog in use.
	writers := map[string]*committer{}
	defer func() {
		for _, w := range writers {
			w.close()
		}
	}()
	for _, clients := range cfg.Clients {
		for _, backend := range backends {
			if !cfg.wants(backend) {
				continue
			}
			// The ceilings first, so the commits run on a quiet machine.
			if _, err := cfg.run.ceil.claim(ctx, cfg, rep, clients); err != nil {
				return err
			}
			if _, err := cfg.run.ceil.put(ctx, cfg, rep, backend, clients); err != nil {
				return err
			}
			w := writers[backend]
			if w == nil {
				if w, err = newCommitter(ctx, rdb, backend, "bench-"+backend, tables, perTxn); err != nil {
					return err
				}
				writers[backend] = w
			}
			r := Measure(ctx, clients, cfg.Duration, w.commit)
			r.Scenario, r.Backend = name, backend
			if perTxn > 1 {
				r.Note = fmt.Sprintf("%d tables per transaction over %d tables; ops are transactions, ratios count table versions", perTxn, tables)
			} else {
				r.Note = fmt.Sprintf("over %d table(s)", tables)
			}
			if r.Ops+r.Conflicts+r.Errors == 0 {
				r.Note += fmt.Sprintf("; no operation finished within %s", cfg.Duration)
			}
			if err := cfg.run.ceil.compare(ctx, cfg, rep, &r, true, true, perTxn); err != nil {
				return err
			}
			cfg.add(rep, r)
		}
	}
	return nil
}

// newCommitter opens a fresh store of backend and a claim store on it
// under catalog, and commits version 1 of every table (in parallel
// batches), so that the measurements see tables in use rather than first
// look-ups.
func newCommitter(ctx context.Context, rdb *redis.Client, backend, catalog string, tables, perTxn int) (*committer, error) {
	objs, cleanup, err := openBackend(ctx, backend)
	if err != nil {
		return nil, err
	}
	return newCommitterOn(ctx, rdb, objs, cleanup, backend, catalog, tables, perTxn, nil)
}

// newCommitterOn is newCommitter on an open store (named backend in
// errors), which cleanup closes; acks is redisclaim.Config.ReplicaAcks.
func newCommitterOn(ctx context.Context, rdb *redis.Client, objs *objstore.Store, cleanup func(), backend, catalog string, tables, perTxn int, acks *int) (*committer, error) {
	s, err := redisclaim.New(ctx, redisclaim.Config{Redis: rdb, Objects: objs, Catalog: catalog, Logger: quietLogger(), ReplicaAcks: acks})
	if err != nil {
		cleanup()
		return nil, err
	}
	w := &committer{s: s, objs: objs, tables: tables, perTxn: perTxn, heads: make([]atomic.Uint64, tables), cleanup: cleanup}
	if err := s.Recover(ctx); err != nil {
		w.close()
		return nil, err
	}
	// Batches of 8: a claim seeds never-seen tables one round trip at a
	// time and gives up after ten.
	idx := make([]int, tables)
	for i := range idx {
		idx[i] = i
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	sem := make(chan struct{}, 8)
	for chunk := range slices.Chunk(idx, 8) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if w.commitTables(ctx, chunk) != OK {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		w.close()
		return nil, fmt.Errorf("warming %s up: %d batches of first versions failed", backend, n)
	}
	return w, nil
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
	cleanup func()
	// onPut, if set, learns when each single-table Put ran.
	onPut func(table string, start, end time.Time)
}

func (w *committer) close() {
	_ = w.s.Close()
	w.cleanup()
}

func (w *committer) table(i int) string { return fmt.Sprintf("tbl%03d", i) }

func (w *committer) commit(ctx context.Context, _ int) Outcome {
	if w.perTxn == 1 {
		i := rand.IntN(w.tables)
		tbl := w.table(i)
		v := w.heads[i].Load() + 1
		staging := lancemanifest.StagingPath(lancemanifest.Dir(tbl).Manifest(lancemanifest.V2, v))
		if err := w.objs.PutWith(ctx, staging, w.payload[:], objstore.WriteOptions{NoSync: true}); err != nil {
			return Failed
		}
		start := time.Now()
		_, err := w.s.Put(ctx, tbl, v, staging, int64(len(w.payload)), "")
		if w.onPut != nil {
			w.onPut(tbl, start, time.Now())
		}
		return w.outcome(ctx, err, i, v)
	}
	return w.commitTables(ctx, w.pick())
}

// commitTables commits the next version of the tables idx at once.
func (w *committer) commitTables(ctx context.Context, idx []int) Outcome {
	var es []redisclaim.Entry
	for _, i := range idx {
		tbl := w.table(i)
		v := w.heads[i].Load() + 1
		staging := lancemanifest.StagingPath(lancemanifest.Dir(tbl).Manifest(lancemanifest.V2, v))
		if err := w.objs.PutWith(ctx, staging, w.payload[:], objstore.WriteOptions{NoSync: true}); err != nil {
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

// pick chooses perTxn distinct tables at random.
func (w *committer) pick() []int {
	idx := make([]int, 0, w.perTxn)
	for len(idx) < w.perTxn {
		if i := rand.IntN(w.tables); !slices.Contains(idx, i) {
			idx = append(idx, i)
		}
	}
	return idx
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

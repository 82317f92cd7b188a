package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// manifestScenario measures __manifest at ManifestRows rows (default 1M):
// load time and memory, point look-ups through the index and through SQL,
// a listing of 1,000 versions, and group-commit throughput with 64
// producers on file://. The same look-ups run in the same run on a plain
// DuckDB reading the snapshot's Parquet file directly, for a ratio.
func manifestScenario() Scenario {
	return Scenario{
		Name:        "manifest",
		Description: "__manifest at 1M rows (--manifest-rows): load, RSS, point look-ups via index and SQL vs DuckDB on the Parquet file, 1,000-version listing, group commit with 64 producers",
		Run:         runManifest,
		Steps:       func(cfg Config) int { return 7 * len(cfg.ManifestRows) },
	}
}

func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func runManifest(ctx context.Context, cfg Config, rep *Report) error {
	for _, n := range cfg.ManifestRows {
		if err := manifestAt(ctx, cfg, rep, n); err != nil {
			return err
		}
	}
	return nil
}

// A generated catalog: 1% namespaces and tables, the rest versions, 1,000
// per table of the first ten tables (for the listing) and 100 per table of
// the others, in commit order: every table's version 1, then every table's
// version 2, and so on, as a catalog whose tables are written side by side
// grows. A table's versions are spread over the whole table, so only an
// index finds them without a scan.
func genRows(n int, emit func([]Row) error) (tables []string, err error) {
	const batch = 64 * 1024
	buf := make([]Row, 0, batch)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		err := emit(buf)
		buf = buf[:0]
		return err
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nTables := max(n/101, 1)
	for i := 0; i < nTables; i++ {
		id := fmt.Sprintf("ns%03d$table%07d", i%100, i)
		tables = append(tables, id)
		buf = append(buf, Row{ObjectType: manifesttable.TypeTable, ObjectID: id, Location: fmt.Sprintf("%08x_%s", i, id),
			Metadata: `{"owner":"bench"}`, CommittedAt: at})
		if len(buf) == batch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	for i := 0; i < 100 && i < nTables; i++ {
		buf = append(buf, Row{ObjectType: manifesttable.TypeNamespace, ObjectID: fmt.Sprintf("ns%03d", i)})
	}
	remaining := n - nTables - min(100, nTables)
	for v := 1; v <= 1000 && remaining > 0; v++ {
		for t, id := range tables {
			if v > 100 && t >= 10 {
				break
			}
			buf = append(buf, Row{ObjectType: manifesttable.TypeTableVersion, ObjectID: id, TableVersion: uint64(v),
				ManifestPath: fmt.Sprintf("%08x_%s/_versions/%020d.manifest", t, id, ^uint64(0)-uint64(v)), ManifestSize: 4096 + uint64(v),
				CommittedAt: at.Add(time.Duration(v) * time.Second)})
			if remaining--; remaining == 0 {
				break
			}
			if len(buf) == batch {
				if err := flush(); err != nil {
					return nil, err
				}
			}
		}
	}
	return tables, flush()
}

// Row is a __manifest row, as the manifest scenarios generate them.
type Row = manifesttable.Row

func manifestAt(ctx context.Context, cfg Config, rep *Report, n int) error {
	e, err := newEnv(ctx, "flightns-bench-manifest-", redisproc.None, 128)
	if err != nil {
		return err
	}
	defer e.close()
	dir, objs, rdb := e.dir, e.objs, e.rdb
	catalog := "bench"
	label := label(n)

	// Generate the catalog as one snapshot.
	tables, genSecs, err := importGenerated(ctx, objs, catalog, n)
	if err != nil {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	if err := rdb.Set(ctx, string(redisstate.KeysOf(catalog).Epoch()), "bench", 0).Err(); err != nil {
		return err
	}

	// Load.
	rssBefore := rssBytes()
	start := time.Now()
	tb, err := manifesttable.Open(ctx, manifesttable.Config{Objects: objs, Redis: rdb, Catalog: catalog, Logger: quietLogger(),
		CompactAfter: -1, Engine: sqlengine.Config{MemoryLimit: "6GB"}})
	if err != nil {
		return err
	}
	defer func() { _ = tb.Close() }()
	load := time.Since(start)
	runtime.GC()
	rss := rssBytes()
	add := func(r Result) {
		r.Scenario = "manifest:" + r.Scenario
		r.Backend = "file"
		rep.Results = append(rep.Results, r)
		cfg.progress(r)
	}
	add(Result{Scenario: "load", Clients: 1, Ops: int64(n), Seconds: load.Seconds(), OpsPerSec: float64(n) / load.Seconds(),
		Note: fmt.Sprintf("%s: loaded in %.2fs (generated in %.1fs); RSS %.0f MiB after load (%.0f MiB before); target ≤ 3 GiB at 10M rows",
			label, load.Seconds(), genSecs, float64(rss)/(1<<20), float64(rssBefore)/(1<<20))})

	// Point look-ups.
	pick := func() string { return tables[rand.IntN(len(tables))] }
	var sink uint64
	ix := measureN(2000, func() error {
		sink += tb.HighestVersion(pick())
		return nil
	})
	ix.Scenario, ix.Note = "point-lookup-index", label+": highest version of a random table from the in-memory index"
	add(ix)
	const pointSQL = `SELECT MAX(table_version) FROM __manifest WHERE object_id = ? AND object_type = 'table_version'`
	sqlR := measureN(500, func() error { return drain(ctx, tb, pointSQL, pick()) })
	sqlR.Scenario, sqlR.Note = "point-lookup-sql", label+": "+pointSQL+"; target p50 ≤ 2 ms at 1M rows"

	// The same question to DuckDB reading the Parquet file directly.
	direct, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer func() { _ = direct.Close() }()
	snap := filepath.Join(dir, "root", "__manifest", "_snapshots", fmt.Sprintf("%020d.parquet", 1))
	directSQL := fmt.Sprintf(`SELECT MAX(table_version) FROM read_parquet('%s') WHERE object_id = ? AND object_type = 'table_version'`, snap)
	dr := measureN(50, func() error {
		var v sql.NullInt64
		return direct.QueryRowContext(ctx, directSQL, pick()).Scan(&v)
	})
	dr.Scenario, dr.Note = "point-lookup-duckdb-parquet", label+": the same query, DuckDB on the snapshot Parquet file"
	if dr.P50Ms > 0 {
		sqlR.Ceiling, sqlR.Ratio = "manifest:point-lookup-duckdb-parquet (p50 latency ratio, lower is better)", sqlR.P50Ms/dr.P50Ms
	}
	add(sqlR)
	add(dr)

	const listSQL = `SELECT version, manifest_path, manifest_size, committed_at FROM table_versions WHERE table_id = ? ORDER BY version DESC LIMIT 1000`
	lr := measureN(100, func() error { return drain(ctx, tb, listSQL, tables[rand.IntN(10)]) })
	lr.Scenario, lr.Note = "list-1000-versions", label+": "+listSQL
	add(lr)

	// Group commit: 64 producers, each appending one change and waiting
	// until it is durable.
	var entries atomic.Int64
	segsBefore := countSegments(ctx, objs)
	gc := Measure(ctx, 64, cfg.Duration, func(ctx context.Context, c int) Outcome {
		seq, err := tb.Append(ctx, []manifesttable.Change{{Row: Row{ObjectType: manifesttable.TypeNamespace,
			ObjectID: fmt.Sprintf("p%02d$n%d", c, entries.Add(1))}}})
		if err != nil {
			return Failed
		}
		if err := tb.WaitDurable(ctx, seq); err != nil {
			return Failed
		}
		return OK
	})
	segs := countSegments(ctx, objs) - segsBefore
	gc.Scenario, gc.Backend = "group-commit-acked", "file"
	if err := cfg.run.ceil.compare(ctx, cfg, rep, &gc, false, true, 1); err != nil {
		return err
	}
	gc.Note = fmt.Sprintf("%s: 64 producers, each waiting until its change is durable before the next; %d segments (%.0f/s, %.1f changes per segment)",
		label, segs, float64(segs)/gc.Seconds, float64(gc.Ops)/float64(max(segs, 1)))
	add(gc)

	// Materializer capacity: with nobody materializing, 64 producers fill
	// the log; then a materializer starts and the rate is how fast the
	// backlog becomes durable.
	if err := tb.Close(); err != nil {
		return err
	}
	ro, err := manifesttable.Open(ctx, manifesttable.Config{Objects: objs, Redis: rdb, Catalog: catalog, Logger: quietLogger(),
		CompactAfter: -1, ReadOnly: true, Engine: sqlengine.Config{MemoryLimit: "6GB"}})
	if err != nil {
		return err
	}
	var last atomic.Uint64
	const backlog = 200_000
	var appended atomic.Int64
	fill := Measure(ctx, 64, time.Minute, func(ctx context.Context, c int) Outcome {
		if appended.Add(1) > backlog {
			<-ctx.Done()
			return Failed
		}
		seq, err := ro.Append(ctx, []manifesttable.Change{{Row: Row{ObjectType: manifesttable.TypeNamespace,
			ObjectID: fmt.Sprintf("q%02d$n%d", c, entries.Add(1))}}})
		if err != nil {
			return Failed
		}
		for {
			cur := last.Load()
			if seq <= cur || last.CompareAndSwap(cur, seq) {
				break
			}
		}
		if appended.Load() >= backlog {
			return OK
		}
		return OK
	}, func() bool { return appended.Load() >= backlog })
	_ = ro.Close()
	segsBefore = countSegments(ctx, objs)
	tb, err = manifesttable.Open(ctx, manifesttable.Config{Objects: objs, Redis: rdb, Catalog: catalog, Logger: quietLogger(),
		CompactAfter: -1, Engine: sqlengine.Config{MemoryLimit: "6GB"}})
	if err != nil {
		return err
	}
	start = time.Now()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	err = tb.WaitDurable(wctx, last.Load())
	cancel()
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	segs = countSegments(ctx, objs) - segsBefore
	add(Result{Scenario: "group-commit-throughput", Clients: 64, Ops: fill.Ops, Seconds: secs, OpsPerSec: float64(fill.Ops) / secs,
		Note: fmt.Sprintf("%s: a backlog of %d entries (appended by 64 producers at %.0f/s) made durable by one materializer in %.2fs: %d segments (%.0f/s, %.0f entries each); target ≥ 20,000 entries/s",
			label, fill.Ops, fill.OpsPerSec, secs, segs, float64(segs)/secs, float64(fill.Ops)/float64(max(segs, 1)))})
	return nil
}

// importGenerated writes a generated catalog of n rows (genRows) as the
// first snapshot of catalog in objs, and returns its tables and the
// seconds it took.
func importGenerated(ctx context.Context, objs *objstore.Store, catalog string, n int) ([]string, float64, error) {
	start := time.Now()
	var batches [][]Row
	var mu sync.Mutex
	tables, err := genRows(n, func(rows []Row) error {
		mu.Lock()
		batches = append(batches, append([]Row(nil), rows...))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	i := 0
	err = manifesttable.ImportSnapshot(ctx, objs, catalog, 1, nil, func() ([]Row, error) {
		if i >= len(batches) {
			return nil, nil
		}
		i++
		return batches[i-1], nil
	})
	return tables, time.Since(start).Seconds(), err
}

// label names a catalog size: "1M rows", "100k rows".
func label(n int) string {
	if n < 1_000_000 {
		return fmt.Sprintf("%dk rows", n/1000)
	}
	return fmt.Sprintf("%dM rows", n/1_000_000)
}

func countSegments(ctx context.Context, objs *objstore.Store) int {
	all, _ := objs.ListAll(ctx, "__manifest/_log/")
	return len(all)
}

func drain(ctx context.Context, tb *manifesttable.Table, q string, args ...any) error {
	res, err := tb.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer res.Release()
	for res.Next() {
	}
	return res.Err()
}

// measureN runs op n times in a row and summarizes the latencies.
func measureN(n int, op func() error) Result {
	lat := make([]time.Duration, 0, n)
	var errs int64
	start := time.Now()
	for range n {
		t0 := time.Now()
		if err := op(); err != nil {
			errs++
		}
		lat = append(lat, time.Since(t0))
	}
	secs := time.Since(start).Seconds()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return Result{Clients: 1, Ops: int64(n) - errs, Errors: errs, Seconds: secs, OpsPerSec: float64(n) / secs,
		P50Ms: pct(lat, 0.5), P95Ms: pct(lat, 0.95), P99Ms: pct(lat, 0.99)}
}

var _ = duckdb.NewConnector

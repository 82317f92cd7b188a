package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// The Lance workload: processes × adds one-row appends to one table, each
// its own commit, from separate Node processes running LanceDB.
const (
	lanceProcesses = 4
	lanceAdds      = 50
)

// lanceScenario runs the same LanceDB workload against flightns (REST,
// managed versioning: every commit a CreateTableVersion through the claim
// protocol) and against Lance's own directory namespace, plain and with
// managed versioning (dirManagedProperties), in one run, and reports the
// commit rate of each and flightns's ratios to them.
//
// Lance's DynamoDB commit store, lance-s3's other peer, has no place
// here: LanceDB 0.39 has it only for s3+ddb:// URIs. A file+ddb:// URI
// is refused ("No object store provider found for scheme: 'file+ddb'"),
// and ?ddbTableName on a local path is part of the directory's name, no
// DynamoDB request made.
func lanceScenario() Scenario {
	return Scenario{
		Name: "lance",
		Description: fmt.Sprintf("LanceDB (Node) appends, %d processes × %d one-row adds to one table, and one client's createNamespace and createTable, %d of each in a row: "+
			"flightns REST with managed versioning vs connectNamespace(\"dir\") (appends: plain and with table_version_tracking_enabled)",
			lanceProcesses, lanceAdds, lanceCatalogOps),
		Run:   runLance,
		Steps: func(Config) int { return 20 },
	}
}

// The workload runs on the local disk ("file", the stated comparison) and,
// where /dev/shm is there, on tmpfs ("tmpfs"): flightns makes every final
// manifest durable (fsync) before it acknowledges, Lance's local commit does
// not, and on tmpfs an fsync costs nothing, which leaves the cost of the
// coordination itself.
func runLance(ctx context.Context, cfg Config, rep *Report) error {
	dir, err := lanceDir()
	if err != nil {
		return err
	}
	bases := []struct{ backend, parent string }{{"file", ""}}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && cfg.wants("tmpfs") {
		bases = append(bases, struct{ backend, parent string }{"tmpfs", "/dev/shm"})
	}
	for _, b := range bases {
		if b.backend == "file" && !cfg.wants("file") {
			continue
		}
		if err := runLanceOn(ctx, cfg, rep, dir, b.backend, b.parent); err != nil {
			return fmt.Errorf("%s: %w", b.backend, err)
		}
	}
	return nil
}

// runLanceOn measures Lance's directory namespace, then flightns, with
// their data in a fresh directory under parent ("" is the temp directory):
// one process alone (the cost of a commit), then lanceProcesses at once on
// one table (the stated workload, where commits contend).
func runLanceOn(ctx context.Context, cfg Config, rep *Report, dir, backend, parent string) error {
	for _, procs := range cfg.Processes {
		if err := runLanceAt(ctx, cfg, rep, dir, backend, parent, procs); err != nil {
			return err
		}
	}
	return runLanceCatalog(ctx, cfg, rep, dir, backend, parent)
}

// lanceCatalogOps is how many namespaces, then tables, one LanceDB client
// creates in a round of the catalog measurement.
const lanceCatalogOps = 50

// catalogReport is what interop/lancedb/catalog.mjs prints.
type catalogReport struct {
	OK          bool      `json:"ok"`
	Errors      []string  `json:"errors"`
	NamespaceMs []float64 `json:"namespaceMs"`
	TableMs     []float64 `json:"tableMs"`
}

// runLanceCatalog measures one LanceDB client's catalog operations, one
// after another: createNamespace, and createTable with a one-row batch
// (the table and its first version), through flightns and through Lance's
// directory namespace, alternating for lanceRounds rounds; each is
// reported from the round with the median rate.
func runLanceCatalog(ctx context.Context, cfg Config, rep *Report, dir, backend, parent string) error {
	ops := []struct {
		name string
		lat  func(catalogReport) []float64
	}{
		{"create-namespace", func(r catalogReport) []float64 { return r.NamespaceMs }},
		{"create-table", func(r catalogReport) []float64 { return r.TableMs }},
	}
	runs := map[string][]Result{}
	for round := range cfg.Rounds {
		tmp, err := os.MkdirTemp(parent, "flightns-bench-lance-catalog-")
		if err != nil {
			return err
		}
		uri, _, stop, err := startFlightnsREST(ctx, cfg, filepath.Join(tmp, "flightns"), "")
		if err != nil {
			_ = os.RemoveAll(tmp)
			return err
		}
		for _, impl := range []string{"dir", "rest"} {
			c := map[string]any{"impl": impl, "root": filepath.Join(tmp, "dir"), "uri": uri, "namespace": []string{"bench"},
				"prefix": fmt.Sprintf("r%d", round), "count": lanceCatalogOps}
			var out catalogReport
			err := runNode(ctx, dir, "catalog.mjs", c, &out)
			if err == nil && !out.OK {
				err = scriptFailed("catalog.mjs", out.Errors)
			}
			if err != nil {
				stop()
				_ = os.RemoveAll(tmp)
				return fmt.Errorf("catalog operations (%s): %w", impl, err)
			}
			for _, op := range ops {
				runs[impl+op.name] = append(runs[impl+op.name], sequentialResult(op.lat(out)))
			}
		}
		stop()
		_ = os.RemoveAll(tmp)
	}
	for _, op := range ops {
		d, f := medianRun(runs["dir"+op.name]), medianRun(runs["rest"+op.name])
		d.Scenario, d.Backend = "lance-catalog:"+op.name+":dir", backend
		d.Note = fmt.Sprintf(`one LanceDB client, %d in a row, connectNamespace("dir"); median of %d rounds: %s/s`, lanceCatalogOps, cfg.Rounds, rates(runs["dir"+op.name]))
		f.Scenario, f.Backend, f.Ceiling = "lance-catalog:"+op.name+":flightns", backend, d.Scenario
		if d.OpsPerSec > 0 {
			f.Ratio = f.OpsPerSec / d.OpsPerSec
		}
		f.Note = fmt.Sprintf(`one LanceDB client, %d in a row, through flightns REST (acknowledged once durable); median of %d rounds: %s/s; %.2f× of Lance's own (target ≥ 1.0×)`,
			lanceCatalogOps, cfg.Rounds, rates(runs["rest"+op.name]), f.Ratio)
		cfg.add(rep, d)
		cfg.add(rep, f)
	}
	return nil
}

// sequentialResult is the result of operations made one after another,
// from their latencies in milliseconds.
func sequentialResult(latMs []float64) Result {
	r := Result{Clients: 1, Ops: int64(len(latMs))}
	lat := make([]time.Duration, len(latMs))
	for i, ms := range latMs {
		lat[i] = time.Duration(ms * float64(time.Millisecond))
		r.Seconds += ms / 1000
	}
	slices.Sort(lat)
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	r.P50Ms, r.P95Ms, r.P99Ms = pct(lat, 0.50), pct(lat, 0.95), pct(lat, 0.99)
	return r
}

// Each workload runs cfg.Rounds times, alternating between the three
// namespaces so that drift in the machine's load hits all alike; the
// median round of each is reported.

func runLanceAt(ctx context.Context, cfg Config, rep *Report, dir, backend, parent string, procs int) error {
	var dirRuns, mgdRuns, flRuns []Result
	for range cfg.Rounds {
		d, m, f, err := lanceRound(ctx, cfg, dir, parent, procs)
		if err != nil {
			return err
		}
		dirRuns, mgdRuns, flRuns = append(dirRuns, d), append(mgdRuns, m), append(flRuns, f)
	}
	dirRes, mgdRes, flRes := medianRun(dirRuns), medianRun(mgdRuns), medianRun(flRuns)
	dirRes.Scenario, dirRes.Backend = "lance:dir", backend
	dirRes.Note = fmt.Sprintf(`connectNamespace("dir"): Lance commits to the directory itself (no fsync); median of %d rounds: %s commits/s`,
		cfg.Rounds, rates(dirRuns))
	rep.Results = append(rep.Results, dirRes)
	cfg.progress(dirRes)
	var vsAlone string
	mgdRes.Scenario, mgdRes.Backend, mgdRes.Ceiling = "lance:dir-managed", backend, dirRes.Scenario
	mgdRes.Ratio, vsAlone = versus(mgdRes, dirRes, "Lance alone")
	mgdRes.Note = fmt.Sprintf(`connectNamespace("dir", table_version_tracking_enabled): every commit a CreateTableVersion of Lance's namespace in LanceDB's process (a staging manifest, then its link to the final name; no fsync); median of %d rounds: %s commits/s; %s`,
		cfg.Rounds, rates(mgdRuns), vsAlone)
	rep.Results = append(rep.Results, mgdRes)
	cfg.progress(mgdRes)
	flRes.Scenario, flRes.Backend = "lance:flightns", backend
	flRes.Ceiling = dirRes.Scenario
	if dirRes.OpsPerSec > 0 {
		flRes.Ratio = flRes.OpsPerSec / dirRes.OpsPerSec
	}
	toManaged, vsManaged := versus(flRes, mgdRes, "Lance's managed directory")
	flRes.PeerRatios = map[string]float64{mgdRes.Scenario: toManaged}
	flRes.Note = fmt.Sprintf("connectNamespace(\"rest\") with managed versioning: every commit claimed in Redis and made durable (fsync) by flightns; median of %d rounds: %s commits/s; %.0f vs %.0f commits/s = %.2f× of Lance's own (target ≥ 0.9×); %s; CPU per commit in that round: flightns %.2f ms, Redis %.2f ms",
		cfg.Rounds, rates(flRuns), flRes.OpsPerSec, dirRes.OpsPerSec, flRes.Ratio, vsManaged, flRes.ServerCPUMs, flRes.RedisCPUMs)
	rep.Results = append(rep.Results, flRes)
	cfg.progress(flRes)
	if cfg.Progress != nil {
		_, _ = fmt.Fprintf(cfg.Progress, "lance (%s, %d processes × %d adds): flightns %.1f commits/s, Lance dir %.1f commits/s, ratio %.2f; Lance's managed dir %.1f commits/s, ratio %.2f; CPU per commit: flightns %.2f ms, Redis %.2f ms\n",
			backend, procs, lanceAdds, flRes.OpsPerSec, dirRes.OpsPerSec, flRes.Ratio, mgdRes.OpsPerSec, toManaged, flRes.ServerCPUMs, flRes.RedisCPUMs)
	}
	return nil
}

// lanceRound runs the workload once on Lance's directory namespace,
// plain and with managed versioning, and once on flightns, each in a
// fresh directory under parent ("" is the temp directory).
func lanceRound(ctx context.Context, cfg Config, dir, parent string, procs int) (dirRes, mgdRes, flRes Result, err error) {
	tmp, err := os.MkdirTemp(parent, "flightns-bench-lance-")
	if err != nil {
		return dirRes, mgdRes, flRes, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()

	// Lance's own directory namespace: commits straight to the directory.
	dirCfg := map[string]any{"impl": "dir", "root": filepath.Join(tmp, "dir"), "namespace": []string{}, "table": "log"}
	if dirRes, _, err = lanceWorkload(ctx, dir, dirCfg, procs, 0); err != nil {
		return dirRes, mgdRes, flRes, fmt.Errorf("the directory namespace of Lance: %w", err)
	}

	// The same with managed versioning: every commit through the
	// namespace's CreateTableVersion, in the writer's process.
	mgdCfg := map[string]any{"impl": "dir", "root": filepath.Join(tmp, "dir-managed"), "properties": dirManagedProperties, "namespace": []string{}, "table": "log"}
	if mgdRes, _, err = lanceWorkload(ctx, dir, mgdCfg, procs, 0); err != nil {
		return dirRes, mgdRes, flRes, fmt.Errorf("the directory namespace of Lance with managed versioning: %w", err)
	}

	// flightns: REST, managed versioning, a file:// root and its own Redis.
	uri, redisPid, stop, err := startFlightnsREST(ctx, cfg, filepath.Join(tmp, "flightns"), "")
	if err != nil {
		return dirRes, mgdRes, flRes, err
	}
	defer stop()
	flCfg := map[string]any{"impl": "rest", "uri": uri, "namespace": []string{"bench"}, "table": "log"}
	if flRes, _, err = lanceWorkload(ctx, dir, flCfg, procs, redisPid); err != nil {
		return dirRes, mgdRes, flRes, fmt.Errorf("flightns: %w", err)
	}
	return dirRes, mgdRes, flRes, nil
}

// medianRun is the run with the median commit rate.
func medianRun(runs []Result) Result {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b Result) int { return cmp.Compare(a.OpsPerSec, b.OpsPerSec) })
	return sorted[len(sorted)/2]
}

// rates lists the commit rates of runs, in order.
func rates(runs []Result) string {
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = fmt.Sprintf("%.0f", r.OpsPerSec)
	}
	return strings.Join(parts, ", ")
}

// lanceDir finds interop/lancedb with LanceDB installed: $FLIGHTNS_LANCEDB_DIR,
// or the first interop/lancedb above the working directory.
func lanceDir() (string, error) {
	dir := os.Getenv("FLIGHTNS_LANCEDB_DIR")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "interop", "lancedb", "append.mjs")); err == nil {
				dir = filepath.Join(d, "interop", "lancedb")
				break
			}
			if filepath.Dir(d) == d {
				return "", errors.New("the lance benchmark needs interop/lancedb: run it from the flightns repository or set FLIGHTNS_LANCEDB_DIR")
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lancedb", "lancedb")); err != nil {
		return "", fmt.Errorf("LanceDB is not installed in %s: run `make lancedb` (npm install from its lockfile)", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("the lance benchmark needs Node.js: %w", err)
	}
	return dir, nil
}

// startFlightnsREST serves a namespace service over REST on a loopback
// port, with its Redis in dir and its catalog at root (default: a
// file:// root in dir), and returns its URI and how to stop it.
func startFlightnsREST(ctx context.Context, cfg Config, dir, root string) (uri string, redisPid int, stop func(), err error) {
	var cleanup []func()
	stop = func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	fail := func(err error) (string, int, func(), error) { stop(); return "", 0, nil, err }
	rs, err := redisproc.Start(ctx, redisproc.Config{Dir: filepath.Join(dir, "redis"), Persistence: cfg.persistence()})
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { _ = rs.Kill() })
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), PoolSize: 64})
	cleanup = append(cleanup, func() { _ = rdb.Close() })
	if root == "" {
		root = "file://" + filepath.Join(dir, "root")
	}
	objs, err := objstore.Open(ctx, root)
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { _ = objs.Close() })
	svc, err := namespace.Open(ctx, namespace.Config{Objects: objs, Redis: rdb, Catalog: "bench", Logger: quietLogger(), Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { _ = svc.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	srv := &http.Server{Handler: restserver.New(svc, restserver.Options{Logger: quietLogger()}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	cleanup = append(cleanup, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	return "http://" + ln.Addr().String(), rs.Pid(), stop, nil
}

// appendReport is what interop/lancedb/append.mjs prints.
type appendReport struct {
	OK      bool      `json:"ok"`
	Added   int       `json:"added"`
	Errors  []string  `json:"errors"`
	StartMs int64     `json:"startMs"`
	EndMs   int64     `json:"endMs"`
	LatMs   []float64 `json:"latMs"`
	// Spans are the adds' [start, end], in fractional milliseconds since
	// the epoch.
	Spans [][2]float64 `json:"spans"`
}

// lanceWorkload creates the table, then runs procs appenders, started at
// one instant, and measures from the first add to the last; it returns
// the appenders' reports too.
//
// With redisPid, the CPU time of this process (where flightns serves) and
// of that Redis from the adds' start to their end is reported per add.
func lanceWorkload(ctx context.Context, dir string, base map[string]any, procs, redisPid int) (Result, []appendReport, error) {
	setup := map[string]any{"setup": true}
	for k, v := range base {
		setup[k] = v
	}
	if _, err := runAppend(ctx, dir, setup); err != nil {
		return Result{}, nil, fmt.Errorf("creating the table: %w", err)
	}
	startAt := time.Now().Add(3 * time.Second) // after every process has loaded LanceDB
	start := startAt.UnixMilli()
	cpuAtStart := make(chan [2]time.Duration, 1)
	go func() {
		time.Sleep(time.Until(startAt))
		cpuAtStart <- [2]time.Duration{procCPU(os.Getpid()), procCPU(redisPid)}
	}()
	reps := make([]appendReport, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for w := range procs {
		c := map[string]any{"worker": w + 1, "count": lanceAdds, "startAt": start}
		for k, v := range base {
			c[k] = v
		}
		wg.Go(func() { reps[w], errs[w] = runAppendAdds(ctx, dir, c) })
	}
	wg.Wait()
	cpuAtEnd := [2]time.Duration{procCPU(os.Getpid()), procCPU(redisPid)}
	if err := errors.Join(errs...); err != nil {
		return Result{}, nil, err
	}
	r := Result{Clients: procs}
	first, last := reps[0].StartMs, reps[0].EndMs
	var lat []time.Duration
	for _, p := range reps {
		r.Ops += int64(p.Added)
		r.Errors += int64(len(p.Errors))
		if r.FirstError == "" && len(p.Errors) > 0 {
			r.FirstError = p.Errors[0]
		}
		first, last = min(first, p.StartMs), max(last, p.EndMs)
		for _, ms := range p.LatMs {
			lat = append(lat, time.Duration(ms*float64(time.Millisecond)))
		}
	}
	slices.Sort(lat)
	r.Seconds = float64(last-first) / 1000
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	r.P50Ms, r.P95Ms, r.P99Ms = pct(lat, 0.50), pct(lat, 0.95), pct(lat, 0.99)
	if c := <-cpuAtStart; redisPid != 0 && r.Ops > 0 {
		r.ServerCPUMs = float64(cpuAtEnd[0]-c[0]) / float64(time.Millisecond) / float64(r.Ops)
		r.RedisCPUMs = float64(cpuAtEnd[1]-c[1]) / float64(time.Millisecond) / float64(r.Ops)
	}
	return r, reps, nil
}

func runAppend(ctx context.Context, dir string, cfg map[string]any) (appendReport, error) {
	var rep appendReport
	if err := runNode(ctx, dir, "append.mjs", cfg, &rep); err != nil {
		return rep, err
	}
	if !rep.OK {
		return rep, scriptFailed("append.mjs", rep.Errors)
	}
	return rep, nil
}

// runAppendAdds runs an appender whose adds may fail one by one (Lance
// gives up on a commit it lost too many times within its retry timeout):
// those are the measurement's errors, counted in its result. Only a
// script that could not run its adds at all is an error here.
func runAppendAdds(ctx context.Context, dir string, cfg map[string]any) (appendReport, error) {
	var rep appendReport
	if err := runNode(ctx, dir, "append.mjs", cfg, &rep); err != nil {
		return rep, err
	}
	if !rep.OK && (rep.StartMs == 0 || rep.EndMs == 0) {
		return rep, scriptFailed("append.mjs", rep.Errors)
	}
	return rep, nil
}

// scriptFailed is the error of an interop script whose report lists errs.
func scriptFailed(script string, errs []string) error {
	return fmt.Errorf("node %s: %d errors, the first: %s", script, len(errs), strings.Join(errs[:min(1, len(errs))], ""))
}

// runNode runs one of the interop scripts in dir with its JSON config and
// decodes the report it prints last into out; the caller reads whether
// the report says it succeeded.
func runNode(ctx context.Context, dir, script string, cfg map[string]any, out any) error {
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "node", script, string(b))
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("node %s: %w: %s", script, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		return fmt.Errorf("node %s printed no report (%w): %s", script, err, stdout)
	}
	return nil
}

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// The replicas scenario: several `flightns serve` processes serving one
// catalog (one Redis, one root, the same --catalog), as docs/operations.md
// allows. Does a second and a third replica add throughput, or cost it?
//
// For each replica count, a fresh Redis (the run's persistence), a fresh
// file:// root shared by the replicas, and the replicas themselves (this
// executable's `serve`, each with its own data directory, loopback ports
// and SQL worker; the first one started holds the materializer lease).
// Then, at each --clients level, the same closed-loop clients, client c
// talking to replica c mod n, measure:
//
//   - commits: REST CreateTableVersion of the next version of a random one
//     of 1,024 tables, the writer's 1 KiB staging upload (no fsync, as a
//     Lance writer does) included; a conflict learns the head and retries;
//   - catalog mutations: REST CreateNamespace of a new namespace, each
//     acknowledged once the lease holder's __manifest segment holding it
//     is durable.
//
// Each result's ratio is its rate over one replica's at the same clients.
//
// The file is built without the duckdb_arrow tag as well (the scenario
// only starts processes and speaks REST), so it carries its own small
// process and REST helpers.

// replicaCounts are the numbers of replicas measured, in order; the first
// is the reference of the ratios.
var replicaCounts = []int{1, 2, 3}

// replicaTables is how many tables the commits spread over (tests use
// fewer).
var replicaTables = 1024

func replicasScenario() Scenario {
	return Scenario{
		Name: "replicas",
		Description: fmt.Sprintf("commits (REST CreateTableVersion, %d tables) and catalog mutations (REST CreateNamespace) with %v `flightns serve` replicas on one Redis and one file:// root, the same clients spread over the replicas; ratios to one replica",
			replicaTables, replicaCounts),
		Run:   runReplicas,
		Steps: func(cfg Config) int { return 2 * len(replicaCounts) * len(cfg.Clients) },
	}
}

func runReplicas(ctx context.Context, cfg Config, rep *Report) error {
	bin, err := servingBinary("replicas")
	if err != nil {
		return err
	}
	one := map[string]float64{} // one replica's ops/s by scenario kind and clients
	for _, n := range replicaCounts {
		if err := replicasAt(ctx, cfg, rep, bin, n, one); err != nil {
			return fmt.Errorf("%d replicas: %w", n, err)
		}
	}
	return nil
}

// replicasAt measures n replicas on a Redis and a root of their own.
func replicasAt(ctx context.Context, cfg Config, rep *Report, bin string, n int, one map[string]float64) error {
	tmp, err := os.MkdirTemp("", "flightns-bench-replicas-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	rs, err := redisproc.Start(ctx, redisproc.Config{Dir: filepath.Join(tmp, "redis"), Persistence: cfg.persistence()})
	if err != nil {
		return err
	}
	defer func() { _ = rs.Kill() }()
	objs, err := objstore.Open(ctx, "file://"+filepath.Join(tmp, "root"))
	if err != nil {
		return err
	}
	defer func() { _ = objs.Close() }()

	var procs []*replicaProc
	defer func() {
		for _, p := range procs {
			_ = p.stop(30 * time.Second)
		}
	}()
	for i := range n {
		p, err := startReplicaProc(ctx, bin, tmp, "--data", filepath.Join(tmp, fmt.Sprintf("replica%d", i)),
			"--root", objs.URI(), "--redis", rs.URL(), "--log-format", "text",
			"--flight-addr", "127.0.0.1:0", "--rest-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--console-addr", "")
		if err != nil {
			return fmt.Errorf("replica %d: %w", i, err)
		}
		procs = append(procs, p)
	}
	w := &replicaWriter{objs: objs, payload: bytes.Repeat([]byte("m"), 1024), served: make([]atomic.Int64, n)}
	for _, p := range procs {
		w.rcs = append(w.rcs, newRESTClient(p.rest))
	}
	if err := w.setup(ctx); err != nil {
		return err
	}

	backend := "file"
	for _, clients := range cfg.Clients {
		for _, kind := range []string{"commits", "create-namespace"} {
			for i := range w.served {
				w.served[i].Store(0)
			}
			cpu0 := sampleReplicaCPU(procs, rs.Pid())
			var r Result
			if kind == "commits" {
				r = Measure(ctx, clients, cfg.Duration, func(ctx context.Context, c int) Outcome { return w.commit(ctx, c%n) })
			} else {
				r = Measure(ctx, clients, cfg.Duration, func(ctx context.Context, c int) Outcome { return w.createNamespace(ctx, c%n) })
			}
			cpu := sampleReplicaCPU(procs, rs.Pid()).minus(cpu0)
			r.Scenario, r.Backend = fmt.Sprintf("replicas:%s:%d", kind, n), backend
			key := fmt.Sprintf("%s/%d", kind, clients)
			if n == replicaCounts[0] {
				one[key] = r.OpsPerSec
			}
			if base := one[key]; base > 0 {
				r.Ceiling, r.Ratio = fmt.Sprintf("replicas:%s:%d", kind, replicaCounts[0]), r.OpsPerSec/base
			}
			what := fmt.Sprintf("REST CreateTableVersion of a random one of %d tables (the writer's 1 KiB staging upload included; a conflict learns the head and retries)", replicaTables)
			if kind == "create-namespace" {
				what = "REST CreateNamespace of a new namespace, acknowledged once durable in the lease holder's __manifest segment (replica 0 holds the lease)"
			}
			served := make([]string, n)
			for i := range w.served {
				served[i] = fmt.Sprint(w.served[i].Load())
			}
			r.Note = fmt.Sprintf("%s; %d `flightns serve` replica(s) on one Redis (persistence %s) and one file:// root shared by them, client c → replica c mod %d; answers by replica %s; ratio = ops/s ÷ one replica's at %d clients; %s",
				what, n, cfg.persistence(), n, strings.Join(served, "/"), clients, cpu.busy(r.Seconds))
			cfg.add(rep, r)
		}
	}
	var stopErrs []error
	for i, p := range procs {
		if err := p.stop(30 * time.Second); err != nil {
			stopErrs = append(stopErrs, fmt.Errorf("replica %d: %w", i, err))
		}
	}
	return errors.Join(stopErrs...)
}

// replicaWriter commits and creates namespaces over REST through the
// replicas, staging each manifest straight into the shared root as a
// Lance writer would.
type replicaWriter struct {
	rcs     []*restClient
	objs    *objstore.Store
	payload []byte
	keys    []string        // table directories under the root
	heads   []atomic.Uint64 // newest version known, by table
	nsSeq   atomic.Int64
	served  []atomic.Int64 // answers (conflicts included) by replica
	// lance makes each commit LanceDB-shaped (stageLance) instead of
	// staging payload.
	lance bool
}

// rootBase is the URI of the root at objs as the catalog's locations
// and manifest paths start with it: an s3:// root's options (its
// endpoint, region) are not part of them.
func rootBase(objs *objstore.Store) string {
	b, _, _ := strings.Cut(objs.URI(), "?")
	return b
}

// tableKey is the key, under the root at objs, of a table location the
// catalog answered.
func tableKey(objs *objstore.Store, table, location string) (string, error) {
	key, ok := strings.CutPrefix(strings.TrimSuffix(location, "/"), rootBase(objs)+"/")
	if !ok {
		return "", fmt.Errorf("table %s at %q is not under the root %s", table, location, rootBase(objs))
	}
	return key, nil
}

func replicaTable(k int) string { return fmt.Sprintf("bench$t%d", k) }

// setup creates the namespace and the tables, and commits version 1 of
// every table (a table's first commit costs more than the steady state),
// spread over the replicas.
func (w *replicaWriter) setup(ctx context.Context) error { return w.setupTables(ctx, replicaTables) }

// setupTables is setup with n tables.
func (w *replicaWriter) setupTables(ctx context.Context, n int) error {
	if err := w.rcs[0].post(ctx, "/v1/namespace/bench/create", map[string]any{"mode": "ExistOk"}, nil); err != nil {
		return fmt.Errorf("creating namespace bench: %w", err)
	}
	w.keys, w.heads = make([]string, n), make([]atomic.Uint64, n)
	var next atomic.Int64
	errs := make([]error, 32)
	var wg sync.WaitGroup
	for g := range errs {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < n; k = int(next.Add(1) - 1) {
				rc := w.rcs[k%len(w.rcs)]
				var d struct {
					Location string `json:"location"`
				}
				if err := rc.post(ctx, "/v1/table/"+replicaTable(k)+"/declare", map[string]any{}, &d); err != nil {
					errs[g] = fmt.Errorf("declaring %s: %w", replicaTable(k), err)
					return
				}
				key, err := tableKey(w.objs, replicaTable(k), d.Location)
				if err != nil {
					errs[g] = err
					return
				}
				w.keys[k] = key
				if out := w.commitTable(ctx, k%len(w.rcs), k); out != OK {
					errs[g] = fmt.Errorf("the first commit of %s failed", replicaTable(k))
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// commit commits the next version of a random table through replica r.
func (w *replicaWriter) commit(ctx context.Context, r int) Outcome {
	return w.commitTable(ctx, r, rand.IntN(replicaTables))
}

func (w *replicaWriter) commitTable(ctx context.Context, r, k int) Outcome {
	v := w.heads[k].Load() + 1
	key := lancemanifest.StagingPath(lancemanifest.Dir(w.keys[k]).Manifest(lancemanifest.V2, v))
	payload := w.payload
	if w.lance {
		var err error
		if payload, err = stageLance(ctx, w.objs, w.keys[k], v); err != nil {
			return Failed
		}
	}
	if err := w.objs.PutWith(ctx, key, payload, objstore.WriteOptions{NoSync: true}); err != nil {
		return Failed
	}
	err := w.rcs[r].post(ctx, "/v1/table/"+replicaTable(k)+"/version/create", map[string]any{
		"version": v, "manifest_path": rootBase(w.objs) + "/" + key, "manifest_size": len(payload)}, nil)
	var re *restError
	if err == nil || errors.As(err, &re) {
		w.served[r].Add(1)
	}
	if err == nil {
		raise(&w.heads[k], v)
		return OK
	}
	// Learn the head (a conflict, or a commit cut short that may have
	// landed), without the measurement's deadline.
	var d struct {
		Version *uint64 `json:"version"`
	}
	if herr := w.rcs[r].post(context.WithoutCancel(ctx), "/v1/table/"+replicaTable(k)+"/describe", map[string]any{}, &d); herr == nil && d.Version != nil {
		raise(&w.heads[k], *d.Version)
	}
	if errors.As(err, &re) && re.code == int(nserror.ConcurrentModification) {
		return Conflict
	}
	return Failed
}

// createNamespace creates a new namespace through replica r.
func (w *replicaWriter) createNamespace(ctx context.Context, r int) Outcome {
	ns := fmt.Sprintf("bench$n%d", w.nsSeq.Add(1))
	err := w.rcs[r].post(ctx, "/v1/namespace/"+ns+"/create", map[string]any{}, nil)
	var re *restError
	if err == nil || errors.As(err, &re) {
		w.served[r].Add(1)
	}
	if err != nil {
		return Failed
	}
	return OK
}

// replicaCPU is CPU time in clock ticks (1/100 s): of the replicas'
// server processes, of their children (the SQL workers), of Redis, of
// this process (the clients), and of the whole machine (everything not
// idle, other work included).
type replicaCPU struct{ servers, workers, redis, clients, machine int64 }

func sampleReplicaCPU(procs []*replicaProc, redisPid int) replicaCPU {
	var c replicaCPU
	for _, p := range procs {
		pid := p.cmd.Process.Pid
		c.servers += procTicks(pid)
		for _, k := range replicaChildren(pid) {
			c.workers += procTicks(k)
		}
	}
	c.redis = procTicks(redisPid)
	c.clients = procTicks(os.Getpid())
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		// cpu user nice system idle iowait irq softirq steal …
		line, _, _ := strings.Cut(string(b), "\n")
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseInt(f, 10, 64)
			if i != 3 && i != 4 && i < 8 {
				c.machine += v
			}
		}
	}
	return c
}

func (c replicaCPU) minus(o replicaCPU) replicaCPU {
	return replicaCPU{c.servers - o.servers, c.workers - o.workers, c.redis - o.redis, c.clients - o.clients, c.machine - o.machine}
}

// busy says how many cores each part kept busy on average over seconds.
func (c replicaCPU) busy(seconds float64) string {
	if seconds <= 0 {
		return ""
	}
	f := func(t int64) float64 { return float64(t) / 100 / seconds }
	return fmt.Sprintf("cores busy on average: servers %.2f, their SQL workers %.2f, Redis %.2f, the clients (this process) %.2f, the whole machine %.2f of %d",
		f(c.servers), f(c.workers), f(c.redis), f(c.clients), f(c.machine), runtime.NumCPU())
}

// replicaChildren lists a process's children.
func replicaChildren(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// --- the replica processes and their REST surface -----------------------

// replicaProc is a `flightns serve` child process.
type replicaProc struct {
	childProc        // (its log keeps the last 10,000 lines)
	rest      string // its REST address
}

var reRESTAddr = regexp.MustCompile(`REST listening"? "?addr"?[=:]"?([0-9.]+:\d+)`)

// startReplicaProc runs `bin serve args...` in dir with this process's
// environment less the FLIGHTNS_ variables that would point it elsewhere
// (the SQL engine's FLIGHTNS_SQL_* and FLIGHTNS_MAX_* pass), and waits
// until it logs "flightns ready".
func startReplicaProc(ctx context.Context, bin, dir string, args ...string) (*replicaProc, error) {
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLIGHTNS_") || strings.HasPrefix(kv, "FLIGHTNS_SQL_") || strings.HasPrefix(kv, "FLIGHTNS_MAX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &replicaProc{childProc: newChildProc(cmd)}
	if err := p.follow(ctx, stderr, 10_000, func(l string) {
		if p.rest == "" {
			if m := reRESTAddr.FindStringSubmatch(l); m != nil {
				p.rest = m[1]
			}
		}
	}); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rest == "" {
		go func() { _ = p.stop(5 * time.Second) }()
		return nil, fmt.Errorf("flightns serve logged no REST address:\n%s", strings.Join(p.lines, "\n"))
	}
	return p, nil
}

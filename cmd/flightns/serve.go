package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/flightns/flightns/auth"
	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/privateredis"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/redisurl"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/namespace"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/obs"
	"github.com/flightns/flightns/planner"
	"github.com/flightns/flightns/redisclaim"
	"github.com/flightns/flightns/restserver"
	"github.com/flightns/flightns/sqlworker"
)

// serveConfig is what the serve flags configure.
type serveConfig struct {
	store       storeFlags
	flightAddr  string
	restAddr    string
	metricsAddr string
	authFile    string
	tlsCert     string
	tlsKey      string
	logFormat   string
	logLevel    string
	shutdown    time.Duration
	limits      flightserver.Limits
	maxBody     int64
	sqlMemory   string
	sqlThreads  int
	sqlIsolate  string
	sqlSpillDir string
	sqlSpill    string
	sqlWorkerMB string
	sqlGrace    time.Duration
	sqlCPUs     int
	unmanaged   bool
}

// storeFlags are the flags of every command that opens the catalog itself
// (serve and the admin commands): where its data and its Redis are.
type storeFlags struct {
	dataDir  string
	rootURI  string
	redisURL string
	catalog  string
}

func (c *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dataDir, "data", envOr("FLIGHTNS_DATA", "./flightns-data"),
		"local data directory: the catalog root (unless --root) and the private Redis's files (unless --redis) [$FLIGHTNS_DATA]")
	fs.StringVar(&c.rootURI, "root", os.Getenv("FLIGHTNS_ROOT"),
		"catalog root URI: file:///abs/dir, or s3://bucket/prefix?region=…[&endpoint=…&use_path_style=true] with credentials from the standard AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE, …) (default: <data>/root) [$FLIGHTNS_ROOT]")
	fs.StringVar(&c.redisURL, "redis", os.Getenv("FLIGHTNS_REDIS"),
		"Redis URL: redis://[user:pass@]host:port[/db] (standalone; rediss:// for TLS), unix:///path/redis.sock, redis+sentinel://host:port?master_name=NAME&addr=host2:port (Sentinel), redis+cluster://host:port?addr=host2:port (Cluster); default: a private redis-server child with an fsynced append-only file in <data>/redis [$FLIGHTNS_REDIS]")
	fs.StringVar(&c.catalog, "catalog", envOr("FLIGHTNS_CATALOG", "flightns"),
		"catalog name: its Redis keys share the hash tag {catalog}, so one Redis (or Cluster) can hold many catalogs [$FLIGHTNS_CATALOG]")
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		_, _ = fmt.Fprint(stderr, "Usage: flightns serve [flags]\n\nRuns the catalog: Flight SQL, Lance Namespace REST, metrics and health.\nWith no flags: data in ./flightns-data and a private redis-server.\nEvery flag can also be set by the environment variable in brackets.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	cfg.store.register(fs)
	fs.StringVar(&cfg.flightAddr, "flight-addr", envOr("FLIGHTNS_FLIGHT_ADDR", "127.0.0.1:31337"),
		"Arrow Flight SQL listen address, also serving the gRPC health service (empty: no Flight) [$FLIGHTNS_FLIGHT_ADDR]")
	fs.StringVar(&cfg.restAddr, "rest-addr", envOr("FLIGHTNS_REST_ADDR", "127.0.0.1:31338"),
		"Lance Namespace REST listen address (empty: no REST) [$FLIGHTNS_REST_ADDR]")
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", envOr("FLIGHTNS_METRICS_ADDR", "127.0.0.1:31339"),
		"HTTP listen address of /metrics (Prometheus), /healthz and /readyz (empty: none) [$FLIGHTNS_METRICS_ADDR]")
	fs.StringVar(&cfg.authFile, "auth-file", os.Getenv("FLIGHTNS_AUTH_FILE"),
		`JSON file of tokens and users with roles read, write or admin ({"tokens":[{"token","name","role"}],"users":[{"name","password","role"}]}); none: no authentication [$FLIGHTNS_AUTH_FILE]`)
	fs.StringVar(&cfg.tlsCert, "tls-cert", os.Getenv("FLIGHTNS_TLS_CERT"), "TLS certificate file (PEM) for Flight and REST; with --tls-key [$FLIGHTNS_TLS_CERT]")
	fs.StringVar(&cfg.tlsKey, "tls-key", os.Getenv("FLIGHTNS_TLS_KEY"), "TLS private key file (PEM) [$FLIGHTNS_TLS_KEY]")
	fs.StringVar(&cfg.logFormat, "log-format", envOr("FLIGHTNS_LOG_FORMAT", "text"), "log format: text or json [$FLIGHTNS_LOG_FORMAT]")
	fs.StringVar(&cfg.logLevel, "log-level", envOr("FLIGHTNS_LOG_LEVEL", "info"), "log level: debug (every request), info, warn or error [$FLIGHTNS_LOG_LEVEL]")
	fs.DurationVar(&cfg.shutdown, "shutdown-timeout", envDuration("FLIGHTNS_SHUTDOWN_TIMEOUT", 30*time.Second),
		"on SIGTERM/SIGINT, how long running requests may take to finish before they are cut off (a second signal exits at once) [$FLIGHTNS_SHUTDOWN_TIMEOUT]")
	fs.Int64Var(&cfg.maxBody, "max-body-bytes", envInt("FLIGHTNS_MAX_BODY_BYTES", restserver.DefaultMaxBodyBytes), "largest REST request body [$FLIGHTNS_MAX_BODY_BYTES]")
	fs.IntVar(&cfg.limits.MaxMessageBytes, "max-message-bytes", int(envInt("FLIGHTNS_MAX_MESSAGE_BYTES", 16<<20)), "largest gRPC message either way [$FLIGHTNS_MAX_MESSAGE_BYTES]")
	fs.Int64Var(&cfg.limits.MaxResultRows, "max-result-rows", envInt("FLIGHTNS_MAX_RESULT_ROWS", 10_000_000), "most rows of one query result [$FLIGHTNS_MAX_RESULT_ROWS]")
	fs.Int64Var(&cfg.limits.MaxResultBytes, "max-result-bytes", envInt("FLIGHTNS_MAX_RESULT_BYTES", 2<<30), "most bytes of one query result [$FLIGHTNS_MAX_RESULT_BYTES]")
	fs.DurationVar(&cfg.limits.QueryTimeout, "query-timeout", envDuration("FLIGHTNS_QUERY_TIMEOUT", time.Minute), "longest run of one query, streaming included [$FLIGHTNS_QUERY_TIMEOUT]")
	fs.IntVar(&cfg.limits.MaxConcurrentQueries, "max-concurrent-queries", int(envInt("FLIGHTNS_MAX_CONCURRENT_QUERIES", 32)), "queries running at once; one more fails at once [$FLIGHTNS_MAX_CONCURRENT_QUERIES]")
	fs.StringVar(&cfg.sqlMemory, "sql-memory", envOr("FLIGHTNS_SQL_MEMORY", "4GB"), "memory limit of the embedded SQL engine (the __manifest data and every query) [$FLIGHTNS_SQL_MEMORY]")
	fs.IntVar(&cfg.sqlThreads, "sql-threads", int(envInt("FLIGHTNS_SQL_THREADS", 2)), "threads of the embedded SQL engine [$FLIGHTNS_SQL_THREADS]")
	fs.StringVar(&cfg.sqlIsolate, "sql-isolation", envOr("FLIGHTNS_SQL_ISOLATION", "process"),
		"where SQL runs: process (a supervised worker process of its own, under SCHED_IDLE off one CPU, with capped memory: no query can slow or stop a commit) or none (in this process; for tests and measurements) [$FLIGHTNS_SQL_ISOLATION]")
	fs.StringVar(&cfg.sqlSpillDir, "sql-spill-dir", os.Getenv("FLIGHTNS_SQL_SPILL_DIR"),
		"where queries may spill what does not fit in --sql-memory (default: <data>/sql-spill) [$FLIGHTNS_SQL_SPILL_DIR]")
	fs.StringVar(&cfg.sqlSpill, "sql-spill-limit", envOr("FLIGHTNS_SQL_SPILL_LIMIT", "1GiB"),
		"most bytes queries may spill, all together; 0B turns spilling off [$FLIGHTNS_SQL_SPILL_LIMIT]")
	fs.StringVar(&cfg.sqlWorkerMB, "sql-worker-memory", os.Getenv("FLIGHTNS_SQL_WORKER_MEMORY"),
		"cap of the SQL worker process's memory (its data segment; a query past it fails, and the worker is restarted if its resident set passes it) (default: --sql-memory + 512MiB) [$FLIGHTNS_SQL_WORKER_MEMORY]")
	fs.DurationVar(&cfg.sqlGrace, "sql-stop-grace", envDuration("FLIGHTNS_SQL_STOP_GRACE", 2*time.Second),
		"how long a stopped query (past its time limit, or its client gone) may take to end before the SQL worker is restarted [$FLIGHTNS_SQL_STOP_GRACE]")
	fs.IntVar(&cfg.sqlCPUs, "sql-cpus", int(envInt("FLIGHTNS_SQL_CPUS", 0)),
		"how many CPUs the SQL worker may run on (the last of this process's); 0: all but one, so that commits always have a core no query can take [$FLIGHTNS_SQL_CPUS]")
	fs.BoolVar(&cfg.unmanaged, "unmanaged", envOr("FLIGHTNS_UNMANAGED", "") == "true",
		"unmanaged tables: Lance commits versions itself and the catalog only names and places tables; every process of a catalog must agree [$FLIGHTNS_UNMANAGED]")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "flightns serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	log, err := obs.NewLogger(stderr, cfg.logFormat, cfg.logLevel)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns serve: %v\n", err)
		return 2
	}
	if err := runServer(ctx, cfg, log); err != nil {
		log.Error("flightns stopped", "err", err)
		return 1
	}
	return 0
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int64) int64 {
	var n int64
	if _, err := fmt.Sscan(os.Getenv(name), &n); err == nil {
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

// catalogDeps is an opened catalog's connections: its object store, its
// Redis client, and the private redis-server when this process runs one.
type catalogDeps struct {
	store    *objstore.Store
	redis    redis.UniversalClient
	redisURL string                // what redis was opened from
	private  *privateredis.Private // nil with --redis
	addr     string                // Redis address(es), for logs
}

// openDeps opens the object store and connects to Redis. Without a URL it
// starts the private redis-server of the data directory; when another
// process (a running server) already runs it, share says whether to use
// that one (admin commands) or to fail (a second server). close releases
// everything, the private Redis last.
func openDeps(ctx context.Context, c storeFlags, log *slog.Logger, share bool, storeOpts ...objstore.Option) (*catalogDeps, error) {
	redis.SetLogger(redisLogger{log})
	data, err := filepath.Abs(c.dataDir)
	if err != nil {
		return nil, err
	}
	root := c.rootURI
	if root == "" {
		root = "file://" + filepath.Join(data, "root")
	}
	d := &catalogDeps{}
	// The storage client's own lines (the AWS SDK's) go to this log, in
	// its format and at its level.
	storeOpts = append([]objstore.Option{objstore.WithLogger(log)}, storeOpts...)
	if d.store, err = objstore.Open(ctx, root, storeOpts...); err != nil {
		return nil, fmt.Errorf("--root: %w", err)
	}
	redisURL := c.redisURL
	if redisURL == "" {
		if d.private, err = privateredis.Open(ctx, data, share, log); err != nil {
			d.close(log)
			return nil, err
		}
		redisURL = d.private.URL()
	}
	d.redisURL = redisURL
	if d.redis, d.addr, err = redisurl.Client(redisURL); err != nil {
		d.close(log)
		return nil, fmt.Errorf("--redis: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.redis.Ping(pctx).Err(); err != nil {
		d.close(log)
		return nil, fmt.Errorf("redis at %s does not answer: %w", d.addr, err)
	}
	return d, nil
}

// ownRedis is the redis-server this process runs, to be supervised; nil
// with --redis or when it shares a running server's.
func (d *catalogDeps) ownRedis() *redisproc.Server {
	if d.private == nil {
		return nil
	}
	return d.private.Server()
}

// close releases everything, the private Redis after the client that
// talks to it.
func (d *catalogDeps) close(log *slog.Logger) {
	if d.redis != nil {
		_ = d.redis.Close()
	}
	if d.private != nil {
		if err := d.private.Close(); err != nil {
			log.Warn("stopping the private redis-server", "err", err)
		}
	}
	if d.store != nil {
		_ = d.store.Close()
	}
}

// debugStepDelay is a test seam: FLIGHTNS_DEBUG_STEP_DELAY=<step>=<duration>
// holds every commit that long at one step of the commit protocol (a
// redisclaim.Step: claimed, txn-recorded, finalized, confirmed, flipping,
// flipped), so a test can signal or kill the server while commits wait
// there.
func debugStepDelay(log *slog.Logger) (redisclaim.StepFunc, error) {
	spec := os.Getenv("FLIGHTNS_DEBUG_STEP_DELAY")
	if spec == "" {
		return nil, nil
	}
	name, dur, _ := strings.Cut(spec, "=")
	step := redisclaim.Step(name)
	d, err := time.ParseDuration(dur)
	if !slices.Contains(redisclaim.Steps(), step) || err != nil || d <= 0 {
		return nil, fmt.Errorf("FLIGHTNS_DEBUG_STEP_DELAY=%q: want <step>=<duration>, a step one of %v", spec, redisclaim.Steps())
	}
	log.Warn("FLIGHTNS_DEBUG_STEP_DELAY is set: every commit is held at a protocol step (a testing aid)", "step", step, "delay", d)
	return func(ctx context.Context, at redisclaim.Step, table string, version uint64) error {
		if at == step {
			log.Info("commit held at a protocol step", "step", step, "table", table, "version", version, "delay", d)
			time.Sleep(d)
		}
		return nil
	}, nil
}

// runServer runs the server until ctx ends, then shuts it down in order:
// not ready; stop accepting and let running requests (commits) finish;
// flush the materializer; close the catalog; stop the private Redis last.
func runServer(ctx context.Context, cfg serveConfig, log *slog.Logger) error {
	authn, err := loadAuth(cfg.authFile)
	if err != nil {
		return err
	}
	if tokens, users := authn.Principals(); authn.Enabled() {
		log.Info("authentication on", "file", cfg.authFile, "tokens", tokens, "users", users)
	} else {
		log.Warn("authentication off: every caller may do everything (give --auth-file to require credentials)")
	}
	// The listeners are bound before anything else may take a port (a
	// restart after kill -9 once found its --flight-addr taken by the
	// private Redis, which then listened on a free TCP port; it now listens
	// on a Unix socket only).
	metricsL, err := listen(cfg.metricsAddr, "--metrics-addr")
	if err != nil {
		return err
	}
	flightL, err := listen(cfg.flightAddr, "--flight-addr")
	if err != nil {
		closeAll(metricsL)
		return err
	}
	restL, err := listen(cfg.restAddr, "--rest-addr")
	if err != nil {
		closeAll(metricsL, flightL)
		return err
	}
	// Each server closes its listener when it stops; closing again is
	// harmless, and closes those of servers that never started.
	defer closeAll(metricsL, flightL, restL)
	metrics := obs.NewMetrics()
	deps, err := openDeps(ctx, cfg.store, log, false, objstore.WithObserver(metrics.StoreObserver()))
	if err != nil {
		return err
	}
	defer deps.close(log)
	deps.redis.AddHook(metrics.RedisHook())

	health := obs.NewHealth(func(ctx context.Context) error { return deps.redis.Ping(ctx).Err() }, metrics, log)

	// Metrics and health answer from the start: not ready until recovered.
	var metricsSrv *http.Server
	if l := metricsL; l != nil {
		metricsSrv = &http.Server{Handler: obs.Mux(metrics, health), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = metricsSrv.Serve(l) }()
		defer func() { _ = metricsSrv.Close() }()
		log.Info("metrics and health listening", "addr", l.Addr().String(), "paths", "/metrics /healthz /readyz")
	}

	log.Info("opening the catalog (recovering Redis state from storage if it was lost)", "root", deps.store.URI(), "redis", deps.addr, "catalog", cfg.store.catalog)
	start := time.Now()
	engine, err := cfg.engine()
	if err != nil {
		return err
	}
	held, err := debugStepDelay(log)
	if err != nil {
		return err
	}
	isolated := cfg.sqlIsolate == "process"
	if !isolated && cfg.sqlIsolate != "none" {
		return fmt.Errorf("--sql-isolation %q: want process or none", cfg.sqlIsolate)
	}
	svc, err := namespace.Open(ctx, namespace.Config{Objects: deps.store, Redis: deps.redis, Catalog: cfg.store.catalog, Logger: log,
		Engine: engine, NoSQL: isolated,
		Unmanaged: cfg.unmanaged, ClaimStep: held, ClaimObserver: metrics.ClaimObserver()})
	if err != nil {
		return fmt.Errorf("opening the catalog: %w", err)
	}
	closeSvc := sync.OnceFunc(func() {
		if err := svc.Close(); err != nil {
			log.Warn("closing the catalog", "err", err)
		}
	})
	defer closeSvc()
	// Background work (the supervisor, the health checks) ends before the
	// catalog closes and the private Redis stops: this runs first.
	var bg sync.WaitGroup
	bgCtx, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopBg(); bg.Wait() }()
	log.Info("catalog open", "took", time.Since(start).Round(time.Millisecond), "objects", len(svc.Table().Objects()), "catalog_seq", svc.Table().Visible())
	if rs := deps.ownRedis(); rs != nil {
		bg.Add(1)
		go func() {
			defer bg.Done()
			rs.Supervise(bgCtx, log, redisproc.Watch{
				Died: func() { health.SetDown("the private redis-server died; restarting it") },
				Restarted: func(ctx context.Context) {
					metrics.RedisRestarted()
					health.SetDown("the private redis-server restarted; recovering")
					for attempt := 1; ctx.Err() == nil; attempt++ {
						err := svc.Recover(ctx)
						if err == nil {
							break
						}
						log.Error("recovery after the redis-server restart failed; retrying", "attempt", attempt, "err", err)
						select {
						case <-ctx.Done():
						case <-time.After(time.Second):
						}
					}
					log.Info("catalog state in Redis checked after the restart (recovered from storage if it was lost)")
					health.SetDown("")
					health.Check(ctx)
				},
			})
		}()
	}

	var sql flightserver.SQL // nil: in this process
	if isolated && cfg.flightAddr != "" {
		sup, stop, err := startSQLWorker(cfg, engine, deps, metrics, log)
		if err != nil {
			return err
		}
		defer stop()
		sql = sup
	}

	uInt, sInt := obs.Interceptors(metrics, log)
	plan := planner.New(svc) // one planner (and its cache) for both surfaces
	var stops []func(context.Context)
	errc := make(chan error, 2)
	if cfg.flightAddr != "" {
		fsrv, err := flightserver.New(flightserver.Config{Service: svc, Planner: plan, SQL: sql, Auth: authn, TLSCertFile: cfg.tlsCert, TLSKeyFile: cfg.tlsKey,
			Logger: log, Version: version, Limits: cfg.limits, Health: health.GRPC(),
			UnaryInterceptors: []grpc.UnaryServerInterceptor{uInt}, StreamInterceptors: []grpc.StreamServerInterceptor{sInt}})
		if err != nil {
			return err
		}
		l := flightL
		go func() { errc <- fsrv.Serve(l) }()
		stops = append(stops, func(ctx context.Context) {
			done := make(chan struct{})
			go func() { fsrv.GracefulStop(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				log.Warn("Flight calls still running at the shutdown timeout are cut off")
				fsrv.Stop()
				<-done
			}
		})
		log.Info("Flight SQL listening", "addr", l.Addr().String())
	}
	if l := restL; l != nil {
		h := restserver.New(svc, restserver.Options{Auth: authn, Logger: log, MaxBodyBytes: cfg.maxBody, Planner: plan})
		hs := &http.Server{Handler: obs.HTTPMiddleware(h, restserver.OpName, metrics, log), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if cfg.tlsCert != "" {
				errc <- hs.ServeTLS(l, cfg.tlsCert, cfg.tlsKey)
			} else {
				errc <- hs.Serve(l)
			}
		}()
		stops = append(stops, func(ctx context.Context) {
			if err := hs.Shutdown(ctx); err != nil {
				log.Warn("REST requests still running at the shutdown timeout are cut off", "err", err)
				_ = hs.Close()
			}
		})
		log.Info("Lance Namespace REST listening", "addr", l.Addr().String())
	}
	// __manifest that cannot make progress (a full disk, a store refusing
	// writes) makes the process not ready, with the reason.
	health.AddCheck(func() string {
		reason, _ := svc.Table().Stalled(stallReady)
		return reason
	})
	health.SetRecovered()
	bg.Add(1)
	go func() { defer bg.Done(); health.Run(bgCtx, 500*time.Millisecond) }()
	log.Info("flightns ready", "version", version, "root", deps.store.URI(), "redis", deps.addr, "catalog", cfg.store.catalog)
	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("a listener failed; shutting down", "err", err)
		}
	}

	log.Info("flightns stopping: no new requests; running ones finish", "timeout", cfg.shutdown)
	health.SetStopping()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdown)
	defer cancel()
	var wg sync.WaitGroup
	for _, stop := range stops {
		wg.Add(1)
		go func() { defer wg.Done(); stop(sctx) }()
	}
	wg.Wait()
	log.Info("requests drained; flushing __manifest")
	if err := svc.Table().WaitCaughtUp(sctx); err != nil {
		log.Warn("__manifest not flushed before the shutdown timeout; the next start materializes the rest from the commit log", "err", err)
	}
	stopBg() // the supervisor and the health checks end before the catalog closes
	bg.Wait()
	closeSvc()
	log.Info("flightns stopped")
	return nil
}

// engine is the SQL engine's configuration: memory, threads, as many
// queries at once as Flight admits, spill under the data directory.
func (c serveConfig) engine() (manifesttable.EngineConfig, error) {
	spill := c.sqlSpillDir
	if spill == "" {
		data, err := filepath.Abs(c.store.dataDir)
		if err != nil {
			return manifesttable.EngineConfig{}, err
		}
		spill = filepath.Join(data, "sql-spill")
	}
	if n, err := sqlworker.ParseSize(c.sqlSpill); err != nil {
		return manifesttable.EngineConfig{}, fmt.Errorf("--sql-spill-limit: %w", err)
	} else if n == 0 {
		spill = ""
	}
	if _, err := sqlworker.ParseSize(c.sqlMemory); err != nil {
		return manifesttable.EngineConfig{}, fmt.Errorf("--sql-memory: %w", err)
	}
	return manifesttable.EngineConfig{MemoryLimit: c.sqlMemory, Threads: c.sqlThreads, MaxQueries: c.limits.MaxConcurrentQueries,
		SpillDir: spill, SpillLimit: c.sqlSpill}, nil
}

// startSQLWorker starts the supervised SQL worker process.
func startSQLWorker(cfg serveConfig, engine manifesttable.EngineConfig, deps *catalogDeps, metrics *obs.Metrics, log *slog.Logger) (*sqlworker.Supervisor, func(), error) {
	mem, _ := sqlworker.ParseSize(cfg.sqlMemory)
	limit := mem + 512<<20
	if cfg.sqlWorkerMB != "" {
		n, err := sqlworker.ParseSize(cfg.sqlWorkerMB)
		if err != nil {
			return nil, nil, fmt.Errorf("--sql-worker-memory: %w", err)
		}
		if n < mem {
			return nil, nil, fmt.Errorf("--sql-worker-memory %s is below --sql-memory %s", cfg.sqlWorkerMB, cfg.sqlMemory)
		}
		limit = n
	}
	cpus, err := sqlworker.WorkerCPUs(cfg.sqlCPUs)
	if err != nil {
		return nil, nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	if engine.SpillDir != "" {
		if err := os.MkdirAll(engine.SpillDir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("the SQL spill directory: %w", err)
		}
	}
	// A private directory per server process for the worker's socket, in
	// the temporary directory: a socket's path must be short (108 bytes).
	dir, err := os.MkdirTemp("", "flightns-sql-")
	if err != nil {
		return nil, nil, err
	}
	sup, err := sqlworker.StartSupervisor(sqlworker.SupervisorConfig{
		Command: []string{self, "sql-worker"},
		Spec: sqlworker.Spec{Root: deps.store.URI(), Redis: deps.redisURL, Catalog: cfg.store.catalog, Engine: engine,
			DataLimit: limit, Idle: true, CPUs: cpus, StopGrace: cfg.sqlGrace, LogFormat: cfg.logFormat, LogLevel: cfg.logLevel},
		Dir: dir, RSSLimit: limit, Logger: log, Restarted: metrics.SQLWorkerRestarted,
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	log.Info("SQL runs in a worker process", "memory", cfg.sqlMemory, "worker_memory_cap", limit, "threads", engine.Threads, "cpus", cpuList(cpus),
		"max_queries", engine.MaxQueries, "spill_dir", engine.SpillDir, "spill_limit", engine.SpillLimit)
	return sup, func() {
		_ = sup.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

// cpuList names the SQL worker's CPUs for the log.
func cpuList(cpus []int) string {
	if len(cpus) == 0 {
		return "all"
	}
	return strings.Trim(fmt.Sprint(cpus), "[]")
}

// stallReady is how long __manifest may fail to make progress before the
// process reports itself not ready.
const stallReady = 2 * time.Second

// listen binds a flag's TCP address; none for an empty one.
func listen(addr, flag string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return l, nil
}

// closeAll closes the listeners that are there.
func closeAll(ls ...net.Listener) {
	for _, l := range ls {
		if l != nil {
			_ = l.Close()
		}
	}
}

// redisLogger sends go-redis's own messages ("failed to dial", pool
// notes) through the structured log, at warn: they say Redis misbehaves,
// which the server's health and errors say too.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}

// loadAuth reads the credentials file; none means no authentication.
func loadAuth(path string) (*auth.Authenticator, error) {
	if path == "" {
		return auth.New(auth.Config{})
	}
	c, err := auth.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--auth-file: %w", err)
	}
	return auth.New(c)
}

package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/audit"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/idempotency"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/redisurl"
	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/internal/sqlworker"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/planner"
	"github.com/flightns/flightns/redisclaim"
)

// Server is a running flightns server.
type Server struct {
	cfg     Config
	log     *slog.Logger
	deps    *Deps
	state   *redisstate.Catalog // the catalog's Redis state: the catalog's, the sessions' and the idempotency records'
	svc     *namespace.Service
	metrics *obs.Metrics
	health  *obs.Health
	audit   *audit.Log

	flightL, restL, metricsL, consoleL net.Listener

	// stops drain the surfaces (run at once, bounded by the shutdown
	// timeout); undo releases what Start built, last built first.
	stops []func(context.Context)
	undo  []func()

	failed chan error // a listener that stopped serving
	bg     sync.WaitGroup
	stopBg context.CancelFunc

	closeOnce sync.Once
}

// Start runs a server and returns once it is ready (recovered, serving).
// ctx bounds the start only. On an error nothing is left running.
func Start(ctx context.Context, cfg Config) (_ *Server, err error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, failed: make(chan error, 2)}
	defer func() {
		if err != nil {
			s.release()
		}
	}()
	authCfg, err := loadAuth(cfg.AuthFile)
	if err != nil {
		return nil, err
	}
	if err := s.listen(); err != nil {
		return nil, err
	}
	s.metrics = obs.NewMetrics()
	if s.deps, err = OpenDeps(ctx, cfg.Store, s.log, false, storeObserver(s.metrics)); err != nil {
		return nil, err
	}
	s.push(func() { s.deps.Close(s.log) })
	// One Redis state for the catalog: its pipeliner and its replica
	// waiter serve the sessions, the idempotency records and the catalog.
	s.state = redisstate.New(s.deps.Redis, s.deps.Catalog, 0)
	s.state.ConfirmOn(redisstate.NewReplicas(s.deps.Redis, s.state.Keys, cfg.ReplicaAcks, cfg.ReplicaTimeout))
	s.push(s.state.Close)
	s.deps.Redis.AddHook(redisurl.ErrorHook(s.metrics.RedisError))
	s.health = obs.NewHealth(func(ctx context.Context) error { return s.deps.Redis.Ping(ctx).Err() }, s.metrics, s.log)
	s.probeConditionalCopy(ctx)
	s.serveMetrics()
	authn, err := s.authenticator(ctx, authCfg)
	if err != nil {
		return nil, err
	}
	if s.audit, err = s.openAudit(); err != nil {
		return nil, err
	}

	s.log.Info("opening the catalog (recovering Redis state from storage if it was lost)", "root", s.deps.Store.URI(), "redis", s.deps.Addr, "catalog", cfg.Store.Catalog)
	start := time.Now()
	engine, err := cfg.engine()
	if err != nil {
		return nil, err
	}
	isolated := cfg.SQL.Isolation == "process"
	var vend *objstore.VendOptions
	if cfg.Vend.Enabled {
		vend = &objstore.VendOptions{RoleARN: cfg.Vend.RoleARN, Duration: cfg.Vend.Duration,
			RenewAfter: cfg.Vend.RenewAfter, RefreshOffset: cfg.Vend.RefreshOffset}
	}
	var maintain *namespace.MaintainConfig
	if cfg.MaintainInterval > 0 {
		maintain = &namespace.MaintainConfig{Interval: cfg.MaintainInterval, Observer: maintainObserver(s.metrics)}
	}
	s.svc, err = namespace.Open(ctx, namespace.Config{
		Objects: s.deps.Store, Redis: s.deps.Redis, Catalog: cfg.Store.Catalog, State: s.state, Logger: s.log,
		Claims: redisclaim.Config{ReplicaAcks: cfg.ReplicaAcks, ReplicaTimeout: cfg.ReplicaTimeout, Step: cfg.ClaimStep, Observer: claimObserver(s.metrics)},
		Table:  manifesttable.Config{Engine: engine, NoSQL: isolated, Observer: tableObserver(s.metrics), EventHistory: cfg.EventHistory},
		Vend:   vend, Unmanaged: cfg.Unmanaged, DropRetention: cfg.DropRetention, CleanupGrace: cfg.CleanupGrace, IntentGrace: cfg.IntentGrace, Maintain: maintain,
	})
	if err != nil {
		return nil, fmt.Errorf("opening the catalog: %w", err)
	}
	s.push(s.closeCatalog)
	// Background work (the supervisor, the health checks) ends before the
	// catalog closes and the private Redis stops.
	bgCtx, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	s.stopBg = stopBg
	s.push(s.stopBackground)
	s.log.Info("catalog open", "took", time.Since(start).Round(time.Millisecond), "objects", len(s.svc.Table().Objects()), "catalog_seq", s.svc.Table().Visible())
	s.superviseRedis(bgCtx)

	var sql flightserver.SQL // nil: in this process
	if isolated && (s.flightL != nil || s.consoleL != nil) {
		sup, stop, err := s.startSQLWorker(engine)
		if err != nil {
			return nil, err
		}
		s.push(stop)
		sql = sup
	}
	if err := s.serveSurfaces(bgCtx, authn, sql); err != nil {
		return nil, err
	}
	// __manifest that cannot make progress (a full disk, a store refusing
	// writes) makes the process not ready, with the reason.
	s.health.AddCheck(func() string {
		reason, _ := s.svc.Table().Stalled(stallReady)
		return reason
	})
	s.health.SetRecovered()
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.health.Run(bgCtx, 500*time.Millisecond) }()
	s.log.Info("flightns ready", "version", cfg.Version, "root", s.deps.Store.URI(), "redis", s.deps.Addr, "catalog", cfg.Store.Catalog)
	return s, nil
}

// Service is the server's catalog.
func (s *Server) Service() *namespace.Service { return s.svc }

// FlightAddr is the Flight SQL listener's address; nil when it is off.
func (s *Server) FlightAddr() net.Addr { return addrOf(s.flightL) }

// RESTAddr is the REST listener's address; nil when it is off.
func (s *Server) RESTAddr() net.Addr { return addrOf(s.restL) }

// ConsoleAddr is the web console's address; nil when it is off.
func (s *Server) ConsoleAddr() net.Addr { return addrOf(s.consoleL) }

// MetricsAddr is the metrics and health listener's address; nil when it
// is off.
func (s *Server) MetricsAddr() net.Addr { return addrOf(s.metricsL) }

// Failed delivers the error of a listener that stopped serving; the
// server should then be closed.
func (s *Server) Failed() <-chan error { return s.failed }

// Close stops the server in order: not ready; no new requests, running
// ones (commits) finish within the shutdown timeout; __manifest flushed;
// the catalog closed; the private Redis stopped last. Calling it again
// does nothing.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.log.Info("flightns stopping: no new requests; running ones finish", "timeout", s.cfg.ShutdownTimeout)
		s.health.SetStopping()
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		var wg sync.WaitGroup
		for _, stop := range s.stops {
			wg.Add(1)
			go func() { defer wg.Done(); stop(sctx) }()
		}
		wg.Wait()
		s.log.Info("requests drained; flushing __manifest")
		if err := s.svc.Table().WaitCaughtUp(sctx); err != nil {
			s.log.Warn("__manifest not flushed before the shutdown timeout; the next start materializes the rest from the commit log", "err", err)
		}
		s.release()
		s.log.Info("flightns stopped")
	})
	return nil
}

// push adds a step to undo on Close or on a failed Start.
func (s *Server) push(f func()) { s.undo = append(s.undo, f) }

// release undoes what Start built, last built first, then closes the
// listeners (a server closes its own when it stops; closing again is
// harmless, and closes those of servers that never started).
func (s *Server) release() {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
	s.undo = nil
	for _, l := range []net.Listener{s.metricsL, s.flightL, s.restL, s.consoleL} {
		if l != nil {
			_ = l.Close()
		}
	}
}

func (s *Server) closeCatalog() {
	if err := s.svc.Close(); err != nil {
		s.log.Warn("closing the catalog", "err", err)
	}
}

func (s *Server) stopBackground() {
	s.stopBg()
	s.bg.Wait()
}

// listen binds the listeners before anything else may take a port.
func (s *Server) listen() error {
	var err error
	if s.metricsL, err = listen(s.cfg.MetricsAddr, "metrics address (--metrics-addr)"); err != nil {
		return err
	}
	if s.flightL, err = listen(s.cfg.FlightAddr, "Flight address (--flight-addr)"); err != nil {
		return err
	}
	if s.restL, err = listen(s.cfg.RESTAddr, "REST address (--rest-addr)"); err != nil {
		return err
	}
	s.consoleL, err = listen(s.cfg.ConsoleAddr, "console address (--console-addr)")
	return err
}

// serveMetrics serves metrics and health from the start: not ready until
// recovered.
func (s *Server) serveMetrics() {
	l := s.metricsL
	if l == nil {
		return
	}
	srv := s.httpServer(obs.Mux(s.metrics, s.health), "metrics")
	go func() { _ = srv.Serve(l) }()
	s.push(func() { _ = srv.Close() })
	s.log.Info("metrics and health listening", "addr", l.Addr().String(), "paths", "/metrics /healthz /readyz")
}

// superviseRedis restarts the private redis-server when it dies, and
// recovers the catalog's state after a restart.
func (s *Server) superviseRedis(ctx context.Context) {
	rs := s.deps.ownRedis()
	if rs == nil {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		rs.Supervise(ctx, s.log, redisproc.Watch{
			Died:      func() { s.health.SetDown("the private redis-server died; restarting it") },
			Restarted: s.recoverAfterRestart,
		})
	}()
}

func (s *Server) recoverAfterRestart(ctx context.Context) {
	s.metrics.RedisRestarted()
	s.health.SetDown("the private redis-server restarted; recovering")
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := s.svc.Recover(ctx)
		if err == nil {
			break
		}
		s.log.Error("recovery after the redis-server restart failed; retrying", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	s.log.Info("catalog state in Redis checked after the restart (recovered from storage if it was lost)")
	s.health.SetDown("")
	s.health.Check(ctx)
}

// serveSurfaces starts Flight SQL, REST and the console on their
// listeners; ctx bounds the console's background sampling.
func (s *Server) serveSurfaces(ctx context.Context, authn *auth.Authenticator, sql flightserver.SQL) error {
	uInt, sInt := obs.Interceptors(s.metrics, s.log)
	plan := planner.New(s.svc) // one planner (and its cache) for every surface
	idem := idempotency.New(s.state, s.cfg.IdempotencyWindow)
	var fsrv *flightserver.Server
	if s.flightL != nil || s.consoleL != nil { // the console's SQL runs through its gate
		var err error
		fsrv, err = flightserver.New(flightserver.Config{Service: s.svc, Planner: plan, SQL: sql, Auth: authn, TLSCertFile: s.cfg.TLSCert, TLSKeyFile: s.cfg.TLSKey, TLSClientCAFile: s.cfg.TLSClientCA, Audit: s.audit, Idempotency: idem,
			Logger: s.log, Version: s.cfg.Version, Limits: s.cfg.Limits, Health: s.health.GRPC(),
			UnaryInterceptors: []grpc.UnaryServerInterceptor{uInt}, StreamInterceptors: []grpc.StreamServerInterceptor{sInt},
			Panicked: func() { s.metrics.PanicRecovered("flight") }})
		if err != nil {
			return err
		}
		s.push(fsrv.Stop) // after a failed start, or once drained: nothing left to stop
	}
	if l := s.flightL; l != nil {
		go func() { s.fail(fsrv.Serve(l)) }()
		s.stops = append(s.stops, func(ctx context.Context) {
			done := make(chan struct{})
			go func() { fsrv.GracefulStop(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				s.log.Warn("Flight calls still running at the shutdown timeout are cut off")
				fsrv.Stop()
				<-done
			}
		})
		s.log.Info("Flight SQL listening", "addr", l.Addr().String())
	}
	closing := make(chan struct{}) // closed as the drain begins: the change feed's streams end
	s.stops = append(s.stops, func(context.Context) { close(closing) })
	rest := obs.HTTPMiddleware(restserver.New(s.svc, restserver.Options{Auth: authn, Logger: s.log, MaxBodyBytes: s.cfg.MaxBodyBytes, Planner: plan, Audit: s.audit, Idempotency: idem,
		Panicked: func() { s.metrics.PanicRecovered("rest") }, Closing: closing, StalledFeedTimeout: s.cfg.Limits.StalledResultTimeout}),
		restserver.OpName, s.metrics, s.log)
	if l := s.restL; l != nil {
		if err := s.serveHTTP(l, rest, "REST"); err != nil {
			return err
		}
		s.log.Info("Lance Namespace REST listening", "addr", l.Addr().String())
	}
	if l := s.consoleL; l != nil {
		if err := s.serveConsole(ctx, l, authn, fsrv, plan, rest); err != nil {
			return err
		}
	}
	return nil
}

// httpServer is the server of one HTTP listener: its handler recovers
// from panics (obs.RecoverHTTP: 500, logged with the stack, counted under
// surface), and its connections are bounded (Config.HTTP).
func (s *Server) httpServer(h http.Handler, surface string) *http.Server {
	hc := s.cfg.HTTP
	return &http.Server{
		Handler:           obs.RecoverHTTP(h, s.log, surface, func() { s.metrics.PanicRecovered(surface) }),
		ReadHeaderTimeout: hc.ReadHeaderTimeout, IdleTimeout: hc.IdleTimeout, MaxHeaderBytes: hc.MaxHeaderBytes,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug), // a refused TLS handshake, say
	}
}

// serveHTTP serves h on l (with TLS when configured) until Close; what
// names the surface in the log.
func (s *Server) serveHTTP(l net.Listener, h http.Handler, what string) error {
	hs := s.httpServer(h, strings.ToLower(what))
	if s.cfg.TLSCert != "" {
		tc, err := auth.TLSConfig(s.cfg.TLSCert, s.cfg.TLSKey, s.cfg.TLSClientCA)
		if err != nil {
			return err
		}
		hs.TLSConfig = tc
	}
	go func() {
		if s.cfg.TLSCert != "" {
			s.fail(hs.ServeTLS(l, "", ""))
		} else {
			s.fail(hs.Serve(l))
		}
	}()
	s.stops = append(s.stops, func(ctx context.Context) {
		if err := hs.Shutdown(ctx); err != nil {
			s.log.Warn(what+" requests still running at the shutdown timeout are cut off", "err", err)
			_ = hs.Close()
		}
	})
	s.push(func() { _ = hs.Close() })
	return nil
}

// fail reports a listener that stopped serving for another reason than
// Close.
func (s *Server) fail(err error) {
	if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) {
		return
	}
	select {
	case s.failed <- err:
	default:
	}
}

// startSQLWorker starts the supervised SQL worker process.
func (s *Server) startSQLWorker(engine sqlengine.Config) (*sqlworker.Supervisor, func(), error) {
	sc := s.cfg.SQL
	mem, _ := sqlengine.ParseSize(sc.Memory)
	limit := mem + 512<<20
	if sc.WorkerMemory != "" {
		limit, _ = sqlengine.ParseSize(sc.WorkerMemory)
	}
	cpus, err := sqlworker.WorkerCPUs(sc.CPUs)
	if err != nil {
		return nil, nil, err
	}
	command := sc.WorkerCommand
	if len(command) == 0 {
		self, err := os.Executable()
		if err != nil {
			return nil, nil, err
		}
		command = []string{self, "sql-worker"}
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
		Command: command,
		Spec: sqlworker.Spec{Root: s.deps.Store.URI(), Redis: s.deps.RedisURL, Catalog: s.cfg.Store.Catalog, Engine: engine,
			DataLimit: limit, Idle: true, CPUs: cpus, StopGrace: sc.StopGrace, LogFormat: s.cfg.LogFormat, LogLevel: s.cfg.LogLevel},
		Dir: dir, RSSLimit: limit, Logger: s.log, Restarted: s.metrics.SQLWorkerRestarted,
		Panicked: func() { s.metrics.PanicRecovered("sql-worker") },
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	s.log.Info("SQL runs in a worker process", "memory", sc.Memory, "worker_memory_cap", limit, "threads", engine.Threads, "cpus", cpuList(cpus),
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

// listen binds a TCP address; none for an empty one.
func listen(addr, what string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return l, nil
}

func addrOf(l net.Listener) net.Addr {
	if l == nil {
		return nil
	}
	return l.Addr()
}

// loadAuth reads and checks the credentials file; none means no
// authentication.
func loadAuth(path string) (auth.Config, error) {
	if path == "" {
		return auth.Config{}, nil
	}
	c, err := auth.LoadFile(path)
	if err != nil {
		return auth.Config{}, fmt.Errorf("auth file (--auth-file): %w", err)
	}
	if _, err := auth.New(c); err != nil {
		return auth.Config{}, fmt.Errorf("auth file (--auth-file): %w", err)
	}
	return c, nil
}

// openAudit opens where audit events go: AuditFile (JSON lines,
// appended, readable by the server's user alone) or the server's log.
func (s *Server) openAudit() (*audit.Log, error) {
	if s.cfg.AuditFile == "" {
		return audit.New(s.log), nil
	}
	f, err := os.OpenFile(s.cfg.AuditFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit file (--audit-file): %w", err)
	}
	s.push(func() { _ = f.Close() })
	return audit.New(slog.New(slog.NewJSONHandler(f, nil))), nil
}

// authenticator builds the server's authenticator from c: its sessions
// are signed with the catalog's session key and revoked through its
// Redis, so every server of the catalog, and this one after a restart,
// accepts them until they expire or are revoked.
func (s *Server) authenticator(ctx context.Context, c auth.Config) (*auth.Authenticator, error) {
	c.SessionTTL = s.cfg.SessionTTL
	if o := s.cfg.OIDC; o.Issuer != "" {
		roles, _ := auth.ParseRoleMap(o.Roles) // checked by Validate
		c.OIDC = &auth.OIDCConfig{Issuer: o.Issuer, Audience: o.Audience, NameClaim: o.NameClaim, RoleClaim: o.RoleClaim, Roles: roles}
	}
	if len(c.Tokens)+len(c.Users) > 0 {
		key, err := sessionKey(ctx, s.deps.Store)
		if err != nil {
			return nil, err
		}
		c.SessionKey, c.Revocations = key, s.state
	}
	a, err := auth.New(c)
	if err != nil {
		return nil, err
	}
	if tokens, users := a.Principals(); a.Enabled() {
		s.log.Info("authentication on", "file", s.cfg.AuthFile, "tokens", tokens, "users", users, "oidc_issuer", s.cfg.OIDC.Issuer, "session_ttl", a.SessionTTL())
		for name, how := range a.WeakPasswords() {
			s.log.Warn("the auth file holds a password as "+how+": whoever reads the file can log in as its user; put the bcrypt hash `flightns hash-password` prints instead", "user", name)
		}
	} else {
		s.log.Warn("authentication off: every caller may do everything (give --auth-file to require credentials)")
	}
	return a, nil
}

// probeConditionalCopy asks the catalog's store, once, whether it refuses
// a conditional CopyObject onto an existing object (objstore's
// ProbeConditionalCopy) and turns server-side promotions on only when it
// does; the answer is logged once, and shown in /readyz and the
// flightns_storage_conditional_copy gauge. A probe that cannot run leaves
// the GET and the conditional PUT, which every store honours.
func (s *Server) probeConditionalCopy(ctx context.Context) {
	// Bounded: a store too slow to answer keeps the GET and the PUT
	// rather than holding the start.
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	on, how, err := s.deps.Store.ProbeConditionalCopy(pctx)
	if err != nil {
		on, how = false, "could not be probed: "+err.Error()
	}
	s.deps.Store.SetConditionalCopy(on)
	s.metrics.SetConditionalCopy(on)
	path := s.deps.Store.Promotions()
	s.health.SetDetail("promotions", fmt.Sprintf("%s (the store %s)", path, how))
	s.log.Info("storage: promotions of staging manifests not read", "conditional_copy", on, "how", path, "store", how)
}

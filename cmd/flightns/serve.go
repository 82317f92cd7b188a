package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/redisclaim"
	"github.com/flightns/flightns/server"
)

// registerStore registers the flags of every command that opens the
// catalog itself (serve and the admin commands): where its data and its
// Redis are.
func registerStore(fs *flag.FlagSet, c *server.Store) {
	fs.StringVar(&c.DataDir, "data", envOr("FLIGHTNS_DATA", "./flightns-data"),
		"local data directory: the catalog root (unless --root) and the private Redis's files (unless --redis) [$FLIGHTNS_DATA]")
	fs.StringVar(&c.Root, "root", os.Getenv("FLIGHTNS_ROOT"),
		"catalog root URI: file:///abs/dir, or s3://bucket/prefix?region=…[&endpoint=…&use_path_style=true][&client_endpoint=…: the endpoint engines are told to use when they reach the store at another address than flightns] with credentials from the standard AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE, …) (default: <data>/root) [$FLIGHTNS_ROOT]")
	fs.StringVar(&c.Redis, "redis", os.Getenv("FLIGHTNS_REDIS"),
		"Redis URL: redis://[user:pass@]host:port[/db] (standalone; rediss:// for TLS), unix:///path/redis.sock, redis+sentinel://host:port?master_name=NAME&addr=host2:port (Sentinel), redis+cluster://host:port?addr=host2:port (Cluster); default: a private redis-server child with an fsynced append-only file in <data>/redis [$FLIGHTNS_REDIS]")
	fs.StringVar(&c.Catalog, "catalog", envOr("FLIGHTNS_CATALOG", "flightns"),
		"catalog name: its Redis keys share the hash tag {catalog}, so one Redis (or Cluster) can hold many catalogs [$FLIGHTNS_CATALOG]")
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg server.Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		_, _ = fmt.Fprint(stderr, "Usage: flightns serve [flags]\n\nRuns the catalog: Flight SQL, Lance Namespace REST, metrics and health.\nWith no flags: data in ./flightns-data and a private redis-server.\nEvery flag can also be set by the environment variable in brackets.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	registerStore(fs, &cfg.Store)
	fs.StringVar(&cfg.FlightAddr, "flight-addr", envOr("FLIGHTNS_FLIGHT_ADDR", "127.0.0.1:31337"),
		"Arrow Flight SQL listen address, also serving the gRPC health service (empty: no Flight) [$FLIGHTNS_FLIGHT_ADDR]")
	fs.StringVar(&cfg.RESTAddr, "rest-addr", envOr("FLIGHTNS_REST_ADDR", "127.0.0.1:31338"),
		"Lance Namespace REST listen address (empty: no REST) [$FLIGHTNS_REST_ADDR]")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", envOr("FLIGHTNS_METRICS_ADDR", "127.0.0.1:31339"),
		"HTTP listen address of /metrics (Prometheus), /healthz and /readyz (empty: none) [$FLIGHTNS_METRICS_ADDR]")
	fs.StringVar(&cfg.ConsoleAddr, "console-addr", envOr("FLIGHTNS_CONSOLE_ADDR", "127.0.0.1:31340"),
		"web console listen address: the catalog, its commits and its SQL in a browser, behind the same authentication and TLS (empty: no console) [$FLIGHTNS_CONSOLE_ADDR]")
	fs.Func("redis-replica-acks", "how many Redis replicas must have a commit's claim before it is committed and acknowledged (WAIT), so that no read after a failover returns an older version than one already returned: auto (the default) one whenever the primary has replicas, 0 none, n n [$FLIGHTNS_REDIS_REPLICA_ACKS]",
		func(v string) error { return parseReplicaAcks(v, &cfg.ReplicaAcks) })
	if v := os.Getenv("FLIGHTNS_REDIS_REPLICA_ACKS"); v != "" {
		if err := parseReplicaAcks(v, &cfg.ReplicaAcks); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns serve: FLIGHTNS_REDIS_REPLICA_ACKS: %v\n", err)
			return 2
		}
	}
	fs.DurationVar(&cfg.ReplicaTimeout, "redis-replica-timeout", envDuration("FLIGHTNS_REDIS_REPLICA_TIMEOUT", time.Second),
		"how long a commit waits for its Redis replicas; past it the commit answers ServiceUnavailable (its outcome unknown: retry it) [$FLIGHTNS_REDIS_REPLICA_TIMEOUT]")
	fs.DurationVar(&cfg.IdempotencyWindow, "idempotency-window", envDuration("FLIGHTNS_IDEMPOTENCY_WINDOW", 15*time.Minute),
		"how long the answer to a mutation that carried an Idempotency-Key (REST header, Flight metadata idempotency-key) is kept in Redis for its retries [$FLIGHTNS_IDEMPOTENCY_WINDOW]")
	fs.StringVar(&cfg.AuthFile, "auth-file", os.Getenv("FLIGHTNS_AUTH_FILE"),
		`JSON file of tokens and users with roles read, write or admin ({"tokens":[{"token","name","role"}],"users":[{"name","password","role"}]}); none: no authentication [$FLIGHTNS_AUTH_FILE]`)
	fs.DurationVar(&cfg.SessionTTL, "session-ttl", envDuration("FLIGHTNS_SESSION_TTL", 12*time.Hour),
		"how long the bearer a Flight login (user and password) answers stays good, on every server of the catalog and across restarts; a handshake with it answers a fresh one [$FLIGHTNS_SESSION_TTL]")
	fs.StringVar(&cfg.TLSCert, "tls-cert", os.Getenv("FLIGHTNS_TLS_CERT"), "TLS certificate file (PEM) for Flight and REST; with --tls-key [$FLIGHTNS_TLS_CERT]")
	fs.StringVar(&cfg.TLSKey, "tls-key", os.Getenv("FLIGHTNS_TLS_KEY"), "TLS private key file (PEM) [$FLIGHTNS_TLS_KEY]")
	fs.BoolVar(&cfg.Vend.Enabled, "vend-credentials", envOr("FLIGHTNS_VEND_CREDENTIALS", "") == "true",
		"DescribeTable and DeclareTable answer temporary storage credentials (STS AssumeRole) that reach only that table's directory, read-only for readers; needs an s3:// root [$FLIGHTNS_VEND_CREDENTIALS]")
	fs.StringVar(&cfg.Vend.RoleARN, "vend-role-arn", envOr("FLIGHTNS_VEND_ROLE_ARN", "arn:aws:iam::000000000000:role/flightns"),
		"the role the server's storage credentials assume to vend (AWS: a role that may read and write the bucket and trusts them; MinIO: any value) [$FLIGHTNS_VEND_ROLE_ARN]")
	fs.DurationVar(&cfg.Vend.Duration, "vend-duration", envDuration("FLIGHTNS_VEND_DURATION", time.Hour), "how long vended credentials live (at least 15m) [$FLIGHTNS_VEND_DURATION]")
	fs.DurationVar(&cfg.Vend.RenewAfter, "vend-renew-after", envDuration("FLIGHTNS_VEND_RENEW_AFTER", 0),
		"have clients renew vended credentials this long after they are issued (answered as their expiry; 0: when they expire) [$FLIGHTNS_VEND_RENEW_AFTER]")
	fs.DurationVar(&cfg.Vend.RefreshOffset, "vend-refresh-offset", envDuration("FLIGHTNS_VEND_REFRESH_OFFSET", 0),
		"how long before vended credentials expire clients ask for new ones (answered as refresh_offset_millis; 0: the client's default, 60s in Lance) [$FLIGHTNS_VEND_REFRESH_OFFSET]")
	fs.StringVar(&cfg.OIDC.Issuer, "oidc-issuer", os.Getenv("FLIGHTNS_OIDC_ISSUER"),
		"OpenID Connect issuer URL: bearer JWTs it signed are accepted beside --auth-file (verified against its published keys: signature, exp, nbf, iss, aud) [$FLIGHTNS_OIDC_ISSUER]")
	fs.StringVar(&cfg.OIDC.Audience, "oidc-audience", os.Getenv("FLIGHTNS_OIDC_AUDIENCE"), "the audience a token must name (aud) [$FLIGHTNS_OIDC_AUDIENCE]")
	fs.StringVar(&cfg.OIDC.NameClaim, "oidc-name-claim", envOr("FLIGHTNS_OIDC_NAME_CLAIM", "sub"), "the claim that names a token's principal [$FLIGHTNS_OIDC_NAME_CLAIM]")
	fs.StringVar(&cfg.OIDC.RoleClaim, "oidc-role-claim", envOr("FLIGHTNS_OIDC_ROLE_CLAIM", "groups"), "the claim holding a token's groups or roles [$FLIGHTNS_OIDC_ROLE_CLAIM]")
	fs.StringVar(&cfg.OIDC.Roles, "oidc-roles", os.Getenv("FLIGHTNS_OIDC_ROLES"),
		"roles of the role claim's values: group=role,… (read, write, admin; * matches every token); a token none of whose values is listed may do nothing [$FLIGHTNS_OIDC_ROLES]")
	fs.StringVar(&cfg.AuditFile, "audit-file", os.Getenv("FLIGHTNS_AUDIT_FILE"),
		"file the audit events (every mutation and every refused request: principal, surface, operation, target id, outcome) are appended to as JSON lines; none: the log, with audit=true [$FLIGHTNS_AUDIT_FILE]")
	fs.StringVar(&cfg.TLSClientCA, "tls-client-ca", os.Getenv("FLIGHTNS_TLS_CLIENT_CA"),
		"CA certificates (PEM) of client certificates: with it every Flight and REST client must present one they signed (mutual TLS); a certificate's subject may name a principal in --auth-file [$FLIGHTNS_TLS_CLIENT_CA]")
	fs.StringVar(&cfg.LogFormat, "log-format", envOr("FLIGHTNS_LOG_FORMAT", "text"), "log format: text or json [$FLIGHTNS_LOG_FORMAT]")
	fs.StringVar(&cfg.LogLevel, "log-level", envOr("FLIGHTNS_LOG_LEVEL", "info"), "log level: debug (every request), info, warn or error [$FLIGHTNS_LOG_LEVEL]")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", envDuration("FLIGHTNS_SHUTDOWN_TIMEOUT", 30*time.Second),
		"on SIGTERM/SIGINT, how long running requests may take to finish before they are cut off (a second signal exits at once) [$FLIGHTNS_SHUTDOWN_TIMEOUT]")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", envInt("FLIGHTNS_MAX_BODY_BYTES", restserver.DefaultMaxBodyBytes), "largest REST request body [$FLIGHTNS_MAX_BODY_BYTES]")
	fs.IntVar(&cfg.Limits.MaxMessageBytes, "max-message-bytes", int(envInt("FLIGHTNS_MAX_MESSAGE_BYTES", 16<<20)), "largest gRPC message either way [$FLIGHTNS_MAX_MESSAGE_BYTES]")
	fs.Int64Var(&cfg.Limits.MaxResultRows, "max-result-rows", envInt("FLIGHTNS_MAX_RESULT_ROWS", 10_000_000), "most rows of one query result [$FLIGHTNS_MAX_RESULT_ROWS]")
	fs.Int64Var(&cfg.Limits.MaxResultBytes, "max-result-bytes", envInt("FLIGHTNS_MAX_RESULT_BYTES", 2<<30), "most bytes of one query result [$FLIGHTNS_MAX_RESULT_BYTES]")
	fs.DurationVar(&cfg.Limits.QueryTimeout, "query-timeout", envDuration("FLIGHTNS_QUERY_TIMEOUT", time.Minute), "longest run of one query, streaming included [$FLIGHTNS_QUERY_TIMEOUT]")
	fs.IntVar(&cfg.SQL.MaxQueries, "max-concurrent-queries", int(envInt("FLIGHTNS_MAX_CONCURRENT_QUERIES", 32)), "queries running at once; one more fails at once [$FLIGHTNS_MAX_CONCURRENT_QUERIES]")
	fs.StringVar(&cfg.SQL.Memory, "sql-memory", envOr("FLIGHTNS_SQL_MEMORY", "4GB"), "memory limit of the embedded SQL engine (the __manifest data and every query) [$FLIGHTNS_SQL_MEMORY]")
	fs.IntVar(&cfg.SQL.Threads, "sql-threads", int(envInt("FLIGHTNS_SQL_THREADS", 2)), "threads of the embedded SQL engine [$FLIGHTNS_SQL_THREADS]")
	fs.StringVar(&cfg.SQL.Isolation, "sql-isolation", envOr("FLIGHTNS_SQL_ISOLATION", "process"),
		"where SQL runs: process (a supervised worker process of its own, under SCHED_IDLE off one CPU, with capped memory: no query can slow or stop a commit) or none (in this process; for tests and measurements) [$FLIGHTNS_SQL_ISOLATION]")
	fs.StringVar(&cfg.SQL.SpillDir, "sql-spill-dir", os.Getenv("FLIGHTNS_SQL_SPILL_DIR"),
		"where queries may spill what does not fit in --sql-memory (default: <data>/sql-spill) [$FLIGHTNS_SQL_SPILL_DIR]")
	fs.StringVar(&cfg.SQL.SpillLimit, "sql-spill-limit", envOr("FLIGHTNS_SQL_SPILL_LIMIT", "1GiB"),
		"most bytes queries may spill, all together; 0B turns spilling off [$FLIGHTNS_SQL_SPILL_LIMIT]")
	fs.StringVar(&cfg.SQL.WorkerMemory, "sql-worker-memory", os.Getenv("FLIGHTNS_SQL_WORKER_MEMORY"),
		"cap of the SQL worker process's memory (its data segment; a query past it fails, and the worker is restarted if its resident set passes it) (default: --sql-memory + 512MiB) [$FLIGHTNS_SQL_WORKER_MEMORY]")
	fs.DurationVar(&cfg.SQL.StopGrace, "sql-stop-grace", envDuration("FLIGHTNS_SQL_STOP_GRACE", 2*time.Second),
		"how long a stopped query (past its time limit, or its client gone) may take to end before the SQL worker is restarted [$FLIGHTNS_SQL_STOP_GRACE]")
	fs.IntVar(&cfg.SQL.CPUs, "sql-cpus", int(envInt("FLIGHTNS_SQL_CPUS", 0)),
		"how many CPUs the SQL worker may run on (the last of this process's); 0: all but one, so that commits always have a core no query can take [$FLIGHTNS_SQL_CPUS]")
	fs.DurationVar(&cfg.DropRetention, "drop-retention", envDuration("FLIGHTNS_DROP_RETENTION", server.DefaultDropRetention),
		"how long DropTable and DropNamespace keep what they drop recoverable (UndropTable, UndropNamespace, admin undrop) before admin gc purges it; 0: drops delete at once [$FLIGHTNS_DROP_RETENTION]")
	fs.DurationVar(&cfg.EventHistory, "event-history", envDuration("FLIGHTNS_EVENT_HISTORY", manifesttable.DefaultEventHistory),
		"how long the change feed (GET /v1/changes, flightns changes) keeps its history: compaction removes older __manifest segments [$FLIGHTNS_EVENT_HISTORY]")
	fs.DurationVar(&cfg.MaintainInterval, "maintain-interval", envDuration("FLIGHTNS_MAINTAIN_INTERVAL", server.DefaultMaintainInterval),
		"how often the maintainer (one server of the catalog at a time) follows Lance's cleanup and applies the tables' retention (flightns.cleanup.* properties); 0: no maintainer in this server [$FLIGHTNS_MAINTAIN_INTERVAL]")
	fs.DurationVar(&cfg.IntentGrace, "intent-grace", envDuration("FLIGHTNS_INTENT_GRACE", namespace.DefaultIntentGrace),
		"how old the intent of a change made in storage (a tag, a branch, a grant, a restore, a cleanup) must be before the maintainer settles it from storage: its event if the change was made [$FLIGHTNS_INTENT_GRACE]")
	fs.DurationVar(&cfg.CleanupGrace, "cleanup-grace", envDuration("FLIGHTNS_CLEANUP_GRACE", 7*24*time.Hour),
		"a cleanup never deletes a file younger than this, referenced or not (an in-flight commit may be about to reference it); at least 1h [$FLIGHTNS_CLEANUP_GRACE]")
	fs.BoolVar(&cfg.Unmanaged, "unmanaged", envOr("FLIGHTNS_UNMANAGED", "") == "true",
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
	log, err := obs.NewLogger(stderr, cfg.LogFormat, cfg.LogLevel)
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

// runServer runs the server until ctx ends or a listener fails, then
// stops it in order (server.Close).
func runServer(ctx context.Context, cfg server.Config, log *slog.Logger) error {
	held, err := debugStepDelay(log)
	if err != nil {
		return err
	}
	cfg.Logger, cfg.Version, cfg.ClaimStep = log, version, held
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		return err
	}
	if a := srv.ConsoleAddr(); a != nil {
		scheme := "http"
		if cfg.TLSCert != "" {
			scheme = "https"
		}
		_, _ = fmt.Fprintf(os.Stdout, "flightns is ready; the web console is at %s://%s/\n", scheme, a)
	}
	select {
	case <-ctx.Done():
	case err := <-srv.Failed():
		log.Error("a listener failed; shutting down", "err", err)
	}
	return srv.Close()
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

// debugStepDelay is a test seam: FLIGHTNS_DEBUG_STEP_DELAY=<step>=<duration>
// holds every commit that long at one step of the commit protocol (a
// redisclaim.Step: claimed, txn-recorded, finalized, confirmed, flipping,
// flipped), or every change made in storage at one of its own
// (namespace.StepIntended, StepChangedInStorage), so a test can signal
// or kill the server while they wait there.
func debugStepDelay(log *slog.Logger) (redisclaim.StepFunc, error) {
	spec := os.Getenv("FLIGHTNS_DEBUG_STEP_DELAY")
	if spec == "" {
		return nil, nil
	}
	name, dur, _ := strings.Cut(spec, "=")
	step := redisclaim.Step(name)
	d, err := time.ParseDuration(dur)
	steps := append(redisclaim.Steps(), namespace.StepIntended, namespace.StepChangedInStorage)
	if !slices.Contains(steps, step) || err != nil || d <= 0 {
		return nil, fmt.Errorf("FLIGHTNS_DEBUG_STEP_DELAY=%q: want <step>=<duration>, a step one of %v", spec, steps)
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

// parseReplicaAcks reads --redis-replica-acks: auto (nil) or a count.
func parseReplicaAcks(v string, dst **int) error {
	if v == "auto" {
		*dst = nil
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: want auto or a number of replicas (0: none)", v)
	}
	*dst = &n
	return nil
}

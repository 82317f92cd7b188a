// Package server is a whole flightns server as a library: Start opens the
// catalog (its object store, its Redis, recovery), binds and serves the
// Flight SQL, Lance Namespace REST, console and metrics/health listeners, and
// returns once the server is ready; Close stops it in order. The flightns
// binary and the tests both run it this way (etcd's embed.StartEtcd is the
// model).
//
// Lifecycle. Start binds the listeners first, so nothing else can take
// their ports (a restart after kill -9 once found its Flight port taken by
// the private Redis); metrics and health answer from then on, not ready;
// the private Redis starts under the data directory's lock (its socket
// only, no TCP port) unless Config.Store.Redis names one; the catalog
// opens and recovers; the supervised SQL worker starts (a process of its
// own: SCHED_IDLE, off one CPU, capped memory) unless SQL isolation is
// "none"; the surfaces serve; ready. Close makes the server not ready,
// lets running requests (commits) finish for Config.ShutdownTimeout,
// flushes __manifest, closes the catalog, and stops the private Redis
// last.
//
// Security (docs/operations.md, "Securing flightns"): the auth file, OIDC
// (Config.OIDC), client certificates (Config.TLSClientCA) and session
// tokens signed with the catalog's key (made once at
// __manifest/_auth/session.key, revoked through Redis) authenticate every
// surface alike; Config.AuditFile receives the audit events;
// Config.Vend has table descriptions vend scoped storage credentials.
// Config.ConsoleAddr serves the web console (package console) over the
// Flight SQL server's gate and the REST handler; retried mutations with
// an Idempotency-Key are answered once for all surfaces (package
// idempotency); Config.ReplicaAcks and DropRetention pass to the claim
// store and the namespace service. The catalog's Redis state (one
// pipeliner, one replica waiter: internal/redisstate) is built once and
// shared by the catalog, the session revocations and the idempotency
// records.
//
// Robustness: no request takes the process down. Every listener
// recovers a panic of its handlers (obs.RecoveryInterceptors outermost on
// Flight and on the SQL worker, obs.RecoverHTTP around REST, the console
// and metrics and health, REST's own handler through obs.Recovered),
// answers Internal, logs the stack and counts it in
// flightns_panics_recovered_total{surface}; every HTTP listener is built
// by one httpServer with the bounds of Config.HTTP (header read time,
// idle connections, header size), and Flight's call metadata is bounded
// (flightserver.Limits.MaxMetadataBytes).
//
// Configuration follows one pattern: each config struct has
// EnsureDefaults (fills what is unset) and Validate (refuses what is
// wrong, naming the field), and Start calls both.
//
// Observability: obs imports nothing it observes, so the adapters from the
// core's observer hooks (redisclaim.Observer, objstore.ObserveFunc,
// manifesttable.Observer, the maintainer's report) to obs.Metrics live
// here (observe.go), the one place that knows both sides.
//
// It must not hold semantics of its own: every behaviour lives in the
// packages it wires together (internal/namespace, flightserver,
// internal/restserver, internal/sqlworker, internal/obs,
// internal/privateredis). Example shows an embedded server answering REST.
package server

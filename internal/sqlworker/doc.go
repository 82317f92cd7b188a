// Package sqlworker runs flightns's SQL in a process of its own, so that
// no query can slow or stop a commit (docs/flight.md, "Isolation and
// bounds").
//
// The worker process (`flightns sql-worker`, started by `flightns serve`)
// follows the catalog as any other replica does: it opens the __manifest
// table read-only (snapshot, then every segment the materializer writes,
// learned from Redis) with the SQL engine, and plans plan_scan over its
// own index. It answers the server alone, over a Unix socket in a private
// directory, with a token: DoGet of a query ticket streams the result
// (Arrow IPC, the catalog sequence in a header), the action "schema"
// returns a statement's result and parameter schemas, "status" its
// applied sequence and the panics its calls recovered from. Errors carry
// their Lance code as flightserver's do; a panic is Internal (the
// recovery is its gRPC server's outermost interceptor), logged with its
// stack, and reported by the supervisor (SupervisorConfig.Panicked). A
// call's metadata is bounded (64 KiB).
//
// Bounds, each enforced where it cannot be bypassed:
//
//   - Memory: DuckDB's memory_limit (--sql-memory) bounds what its buffer
//     manager holds; the worker's data segment is capped with
//     RLIMIT_DATA (memory_limit plus an overhead), so an allocation beyond
//     it fails inside DuckDB (an out-of-memory error for that query), and
//     the supervisor kills the worker if its resident set ever passes the
//     cap anyway.
//   - Time: a query's deadline and its client's cancel interrupt DuckDB;
//     a query that has not returned StopGrace after its interrupt makes
//     the worker exit (the supervisor starts a new one), since DuckDB
//     checks for interrupts only between steps.
//   - CPU: the worker's threads run under SCHED_IDLE, so a runaway query
//     takes only the CPU nothing else on the machine wants.
//   - Concurrency: the engine runs at most MaxQueries queries at once.
//
// The Supervisor (in the server) starts the worker, restarts it when it
// dies (queries in flight fail with ServiceUnavailable; new ones wait for
// the new worker within their time limit), watches its resident memory and
// answers flightserver.SQL by calling it. With `--sql-isolation none` the
// server runs no worker: flightserver queries the catalog's own engine
// in its process (tests and measurements).
//
// It must not: write anything durable (the worker opens the catalog
// read-only: it never materializes, compacts or recovers), or serve
// anyone but its supervisor.
package sqlworker

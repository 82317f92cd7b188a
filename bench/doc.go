// Package bench measures flightns: each scenario runs closed-loop clients
// for a fixed time at each concurrency level (default 1, 8, 32 and 128)
// and reports throughput, p50/p95/p99 latency, errors and conflicts.
//
// Every result is read against a ceiling measured in the same run, never a
// number from another day: scripted Redis claims (redis-benchmark running
// ceiling.lua on a private Redis with the run's persistence) for the work
// Redis linearizes, and create-only puts on the same object-store backend
// for the work that must be durable; both at the same concurrency, each
// measured once per run on first use (ceiling.go).
//
// A run yields a Report, written as JSON (WriteJSON) and drawn as a PNG
// chart (WriteChart: throughput and latency percentiles against clients,
// per scenario). Progress is one line per finished measurement, under a
// progress bar when the caller says its writer is a terminal.
//
// The commit-steps scenario times a lone writer's CreateTableVersion on
// the path `flightns serve` takes by default and splits the server's time
// into its steps (validate, claim, promote, confirm, reply) through the
// claim store's step hook and observer (steps.go). Every s3:// scenario
// starts a MinIO server of its own (internal/minioproc: the pinned
// release, a separate process, never linked). commit-s3-latency puts an
// internal/s3proxy, delaying every request, between the claim store and
// that server, counts at the proxy the requests of each commit and how
// many of them ran one after another, and compares commits/s with
// writers ÷ the lone writer's latency (s3latency.go). The lance scenario
// runs LanceDB itself (Node, interop/lancedb): appends from 1 and 4
// processes, and one client's createNamespace and createTable, each
// through flightns and through Lance's directory namespace in alternating
// rounds (lance.go); lance-s3 runs the appends on a MinIO bucket through
// a real `flightns serve` and through its peers — Lance's directory
// namespace, plain and with managed versioning, and Lance's DynamoDB
// commit store on dynalite (its own Node process, behind a counting and
// delaying proxy: dynamo.go) — and counts everyone's S3 and DynamoDB
// requests per add, and the round trips an add waits for (lances3.go).
//
// The hostile-queries scenario serves the real flightns binary in each SQL
// isolation mode and measures REST commits quiet and beside runaway Flight
// SQL queries, each run as a SCHED_IDLE `flightns query` child so that the
// measuring process keeps its CPU (hostile.go).
//
// The replicas scenario starts 1, 2 and 3 `flightns serve` processes on
// one Redis and one root and reports commits and CreateNamespace per
// second as ratios to one replica (replicas.go); it and hostile-queries
// share one child-process runner (proc.go) and REST client (rest.go). The
// plan scenario reports each plan's precision — the share of returned
// leaves holding a matching row — next to its latency, and fails a run
// whose plan leaves out a matching leaf.
//
// commit-redis-replica compares commits with and without a Redis
// replica's confirmation, over 1,024 tables and over 8, where refusals
// dominate (redisreplica.go); console measures the web
// console's pages on 10,000 namespaces and a table of 100,000 versions
// (console.go).
//
// cleanup-s3 times flightns's own cleanup (CleanupTable) over tables of
// real Lance manifests on MinIO and counts its S3 requests at a proxy;
// commit-maintainer-s3 alternates rounds of commits without and with the
// maintainer's passes and reports p99 with ÷ without (cleanups3.go,
// maintainer.go; the tables and their commits: lancetables.go).
//
// feed-latency and feed-commits measure the change feed (feed.go): the
// time from a commit's acknowledgement to a Flight and an SSE subscriber
// at paced rates, with the materializer's linger and without (flightns
// in this process), and commits/s and the server's CPU per commit beside
// 0, 10 and 100 subscribers in alternating rounds (a `flightns serve`
// child, the subscribers in a process of their own under SCHED_IDLE,
// feedhost.go; with backend tmpfs-split the server's processes on half
// the CPUs and the writers and subscribers on the rest, internal/threads); a run fails if
// an acknowledged version never reaches a subscriber. commit-cpu reads from /proc the CPU time that LanceDB-shaped
// commits cost a `flightns serve` child, its SQL worker and Redis, all on
// tmpfs, per commit (commitcpu.go); the serving scenarios pass
// FLIGHTNS_CPU_PROFILE_DIR on to the servers, for their profiles.
//
// Benchmarks are run by `flightns bench` and `make bench`. The package's
// test runs one quick scenario end to end to check the report and the
// chart; it asserts their shape, never a speed.
package bench

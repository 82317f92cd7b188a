// Package reliability tries hard to break flightns the way Jepsen attacks
// databases, and holds nothing but tests.
//
// Every test runs the real `flightns serve` binary (built once by TestMain
// with -tags duckdb_arrow) against real redis-server processes on free
// loopback ports and a real object store (a file:// root, or a bucket of
// the pinned MinIO server, its own process, behind a fault-injecting
// proxy), and talks to it with
// real clients: net/http on the Lance Namespace REST surface and arrow-go's
// Flight client for the actions.
//
// What the suite checks, after every fault:
//
//   - linearizability: several clients create and describe table versions
//     and commit multi-table batches while faults are injected; porcupine
//     checks the history against a model holding, per table, a register of
//     the latest version and its manifest (a create succeeds only at
//     head+1; an answer that is lost or ambiguous is an operation whose
//     outcome is unknown);
//   - nothing acknowledged is lost: every acknowledged version's final
//     manifest exists with its writer's bytes, and the served head is the
//     newest final manifest in storage;
//   - no final manifest is overwritten: every final manifest holds the
//     bytes of a writer that tried that very version;
//   - multi-table transactions are all-or-nothing in storage;
//   - the change feed is exact (feed_test.go): during every run two
//     subscribers follow `GET /v1/changes` from sequence 0, reconnect
//     after every cut (one also cuts itself every second or so and, among
//     replicas, moves to the next) and resume after the last id the feed
//     sent; each must receive a final read of the whole history
//     (follow=false, after a barrier namespace is created) event for
//     event: no gap, no duplicate, sequence order. That history must hold
//     exactly one event for each namespace and table the run created and
//     for each committed version (acknowledged, or of unknown outcome and
//     final in storage), with its writer's manifest size, a batch's events
//     in one sequence under one transaction id, and no event of a version
//     storage does not hold or of a writer that did not win it; after
//     FLUSHALL and a Redis restart, a subscriber resuming after sequence N
//     gets what one that never left got (TestFeedResumesAcrossRedisLoss);
//   - the server becomes ready (/readyz) again by itself.
//
// The faults: Redis killed -9 and restarted without persistence, Redis
// FLUSHALL, a Redis Cluster master killed and its replica promoted, the
// server killed -9 during commits and restarted on the same data, S3
// errors (500, 503), replies lost after the store acted and latency, and a
// full disk (ENOSPC injected at the object store's seam). Besides faults:
// hostile input on every route and action (oversized, malformed, path
// traversal, bucket escapes, authentication bypass), fuzzers for REST
// bodies and ids, and a soak at 80 % of a measured peak that watches the
// server's memory, goroutines and file descriptors.
//
// `go test` runs a short form (a few seconds per scenario); `make
// reliability` runs the long form (`-args -long`, or FLIGHTNS_RELIABILITY=long),
// with FLIGHTNS_SOAK setting the soak's duration (10m by default there).
// The results are written up in docs/reliability.md.
//
// The package must not change product behaviour: it reaches the server
// only through its public surfaces, its process and its storage.
package reliability

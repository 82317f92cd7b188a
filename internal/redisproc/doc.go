// Package redisproc starts, stops, kills and restarts redis-server child
// processes on loopback: the private Redis that `flightns serve` runs when no
// --redis URL is given, and the servers that tests and benchmarks start for
// themselves (a node of a test's Redis Cluster is one in cluster mode:
// internal/testutil/redistest joins them).
//
// A server listens on 127.0.0.1 only, on a free port chosen at start (never
// 6379), with its data directory, log and (optionally) append-only file in a
// directory of its own. A child is bound to its parent's life: it gets
// SIGKILL when the parent dies (Pdeathsig), so a crashed test or server
// leaves no Redis behind.
//
// It must not be used to manage a Redis that flightns did not start.
package redisproc

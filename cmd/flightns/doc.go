// Command flightns runs the flightns catalog and commit service, its
// clients and its administration tools.
//
//	flightns serve     run the server (no flags needed: data under
//	                   ./flightns-data, a private redis-server child;
//	                   Flight SQL :31337, REST :31338, metrics :31339)
//	flightns query     SQL over a running server (Flight SQL)
//	flightns ns        namespaces of a running server (REST)
//	flightns table     tables of a running server (REST)
//	flightns admin     recover, compact, verify [--repair], repair, gc
//	flightns bench     measure throughput and latency (JSON report)
//	flightns sql-worker  the SQL worker serve starts (not for people)
//	flightns version   print the version
//	flightns help      print usage
//
// main only parses flags and wires packages together (obs for metrics and
// health, repair for the admin work, internal/privateredis for the private
// Redis and the data directory's lock, internal/redisproc for its
// supervisor); every behaviour lives in a package of its own. serve's
// lifecycle: the listeners bound first (so nothing else can take their
// ports), metrics and health (not ready), the private Redis
// (its socket only, no TCP port) under the data directory's lock, the
// catalog opened and recovered, the supervised SQL worker (a process of
// its own: SCHED_IDLE, off one CPU, capped memory), the listeners, ready; on SIGTERM/SIGINT
// not ready, listeners drained, __manifest flushed, the catalog closed,
// the private Redis stopped last; a second signal exits with 130.
//
// admin repair opens the store and Redis itself (a catalog whose
// __manifest files are damaged does not open) and hands the opening of the
// catalog to repair.Repair once the files form a readable chain again.
//
// It must not hold state of its own beyond one process's wiring, nor
// touch Redis keys or storage objects except through the packages.
package main

// Package bench measures flightns: each scenario runs closed-loop clients
// for a fixed time and reports throughput, latency percentiles, errors and
// conflicts as JSON, next to the raw ceiling of the part underneath measured
// in the same run (object-store put latency, scripted Redis claims), so a
// result reads as a ratio and not as a number from another day.
//
// Benchmarks are run by `flightns bench` and `make bench`, never by tests:
// tests assert outcomes, benchmarks measure speed.
package bench

// Command flightns-bench measures flightns: closed-loop clients for a
// fixed time per scenario and client count, a JSON report with
// same-run ceilings and ratios, and a PNG chart (see package bench and
// docs/benchmarks.md).
//
//	flightns-bench [--scenario a,b] [--clients 1,8] [--duration 3s] [--out report.json]
//	flightns-bench --list
//	flightns-bench --replot report.json
//
// It is a command of its own so that the server binary links none of the
// measuring machinery (the MinIO runner, the fault proxy, the plotting
// library); `flightns bench` runs this executable when it sits beside
// flightns. The serving scenarios run the flightns binary beside it, or
// $FLIGHTNS_BINARY.
//
// It must not be linked into the server: package main of cmd/flightns
// imports nothing of bench (a test holds it to that).
package main

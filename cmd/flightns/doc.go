// Command flightns runs the flightns catalog and commit service and its
// administration tools.
//
//	flightns serve     run the server (no flags needed: data under
//	                   ./flightns-data, a private redis-server child)
//	flightns bench     measure throughput and latency (JSON report)
//	flightns version   print the version
//	flightns help      print usage
//
// main only parses flags and wires packages together; every behaviour lives
// in a package of its own.
package main

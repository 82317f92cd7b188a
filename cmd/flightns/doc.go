// Command flightns runs the flightns catalog and commit service, its
// clients and its administration tools.
//
//	flightns serve     run the server (no flags needed: data under
//	                   ./flightns-data, a private redis-server child;
//	                   Flight SQL :31337, REST :31338, metrics :31339,
//	                   the web console 127.0.0.1:31340)
//	flightns query     SQL over a running server (Flight SQL)
//	flightns ns        namespaces of a running server (REST)
//	flightns table     tables of a running server (REST)
//	flightns changes   the catalog's change feed, one event per line
//	                   (REST's Server-Sent Events; --follow keeps going
//	                   across a server restart, resuming after the last
//	                   sequence printed)
//	flightns admin     recover, compact, verify [--repair], repair, gc,
//	                   dropped, undrop, revoke-sessions, grant,
//	                   revoke-grant, grants
//	flightns hash-password  the bcrypt hash of a password (stdin) for
//	                   --auth-file (auth.HashPassword)
//	flightns bench     runs flightns-bench beside it (cmd/flightns-bench)
//	flightns sql-worker  the SQL worker serve starts (not for people)
//	flightns version   print the version
//	flightns help      print usage
//
// main only parses flags and hands them to the packages: serve builds a
// server.Config and runs server.Start until SIGTERM/SIGINT, then
// Server.Close (the lifecycle is package server's; a second signal exits
// with 130); the admin commands open the catalog with server.OpenDeps and
// do their work through repair (and the grant commands through the
// namespace service, which keeps grants as catalog state); the clients
// speak Flight SQL (query) and REST (ns, table and changes, through
// package client).
// It links none of the benchmarks (cmd/flightns-bench), which a test
// checks.
//
// admin repair opens the store and Redis itself (a catalog whose
// __manifest files are damaged does not open) and hands the opening of the
// catalog to repair.Repair once the files form a readable chain again.
//
// It must not hold state of its own beyond one process's wiring, nor
// touch Redis keys or storage objects except through the packages.
package main

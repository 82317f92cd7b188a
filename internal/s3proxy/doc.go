// Package s3proxy is an HTTP reverse proxy to put in front of an S3
// server: it injects errors, lost replies and latency (Faults), and
// reports every request it passed on (Trace) — the tests cut object
// storage with it, and the benchmarks count and time a commit's requests
// with it, on the wire, whoever sent them (flightns or Lance).
//
// It serves on a loopback port and forwards to one target; it never
// alters a request or a reply it passes on, only delays, refuses or
// drops them. With HonourCopyCondition (condcopy.go) it also plays a
// store that refuses a conditional CopyObject onto an existing key (AWS
// S3 since October 2025) in front of one that overwrites (MinIO): it
// serializes each key's writes and answers 412 itself when the
// destination exists, which it asks the server, signed, with a HEAD.
package s3proxy

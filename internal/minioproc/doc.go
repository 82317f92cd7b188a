// Package minioproc runs a MinIO server — the S3 protocol server most
// self-hosted object stores are — as a child process on loopback, for the
// test suite and the benchmarks: every s3:// test and benchmark meets a
// real, out-of-process S3 implementation over real HTTP.
//
// The binary is the pinned MinIO release (Version), built with
// `go install github.com/minio/minio@<Version>` into the repository's
// bin/ (`make minio`); Binary finds it. A server gets a free loopback
// port, a data directory of its own, root credentials that exist only for
// it, and no web console; it dies with its parent (Pdeathsig), so a
// crashed test leaves no server behind.
//
// MinIO is AGPL-licensed: it is run, never linked. This package must not
// import it, and flightns itself never needs it.
package minioproc

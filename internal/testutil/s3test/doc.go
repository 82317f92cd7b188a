// Package s3test gives a test an S3 server of its own: the pinned MinIO
// server (internal/minioproc), run as a separate process on a loopback
// port, so that the s3:// backend is exercised through the real AWS SDK,
// real HTTP and a real S3 implementation's conditional writes; and a
// fault proxy (internal/s3proxy) to put in front of it.
//
// It sets the credentials the SDK needs with t.Setenv, so tests that use
// it cannot run in parallel with each other.
package s3test

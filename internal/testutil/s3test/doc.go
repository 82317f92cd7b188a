// Package s3test serves an in-process S3 protocol server (gofakes3) over
// HTTP on loopback for tests, so that the s3:// backend is exercised through
// the real AWS SDK, real HTTP and real conditional-write semantics.
//
// It sets the dummy AWS credentials the SDK needs with t.Setenv, so tests
// that use it cannot run in parallel with each other.
package s3test

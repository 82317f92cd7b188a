package s3test

import (
	"context"
	"os"
	"testing"

	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/s3proxy"
)

// Server is a running MinIO server of one test: its URL
// (http://127.0.0.1:port), URI(bucket, prefix) of a root on it, and its
// S3 Client.
type Server struct{ *minioproc.Server }

// Start starts a MinIO server of its own (data on tmpfs where the machine
// has one) with the given buckets created, sets the credentials S3
// clients need in the environment (t.Setenv), and stops the server when
// the test ends. A machine without the pinned MinIO fails the test with
// the command that installs it.
func Start(tb testing.TB, buckets ...string) *Server {
	tb.Helper()
	dir := tempDir(tb)
	m, err := minioproc.Start(context.Background(), minioproc.Config{Dir: dir, Buckets: buckets})
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	tb.Cleanup(func() { _ = m.Stop() })
	for k, v := range minioproc.Env() {
		tb.Setenv(k, v)
	}
	return &Server{m}
}

// tempDir is a directory for a server's data, removed when the test
// ends: on /dev/shm where there is one (the tests' objects need no disk),
// else the test's temporary directory.
func tempDir(tb testing.TB) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "flightns-minio-"); err == nil {
			tb.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return tb.TempDir()
}

// FaultProxy is an s3proxy.Proxy in front of a test's server.
type FaultProxy = s3proxy.Proxy

// Faults is what a FaultProxy injects.
type Faults = s3proxy.Faults

// Request is one request a FaultProxy answered (its Trace).
type Request = s3proxy.Request

// StartFaultProxy serves a proxy to target (an S3 server's URL) on a
// loopback port until the test ends; it injects nothing until Set.
func StartFaultProxy(tb testing.TB, target string) *FaultProxy {
	tb.Helper()
	p, err := s3proxy.Start(target)
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	tb.Cleanup(p.Close)
	return p
}

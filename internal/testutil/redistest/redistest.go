package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisproc"
)

// Server is a standalone redis-server owned by one test.
type Server struct {
	*redisproc.Server
	tb testing.TB
}

// Option adjusts a server's configuration.
type Option func(*redisproc.Config)

// WithPersistence sets the persistence mode (default: none).
func WithPersistence(p redisproc.Persistence) Option {
	return func(c *redisproc.Config) { c.Persistence = p }
}

// Start starts a standalone server for the test.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	cfg := redisproc.Config{Dir: tb.TempDir()}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := redisproc.Start(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() { _ = s.Kill() })
	return &Server{Server: s, tb: tb}
}

// Client returns a client that is closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := s.Server.Client()
	s.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Restart restarts the server on the same port and directory, failing the
// test if it cannot.
func (s *Server) Restart() {
	s.tb.Helper()
	if err := s.Server.Restart(context.Background()); err != nil {
		s.tb.Fatalf("redistest: restart: %v", err)
	}
}

// FlushAll erases every key, failing the test if it cannot.
func (s *Server) FlushAll() {
	s.tb.Helper()
	if err := s.Server.FlushAll(context.Background()); err != nil {
		s.tb.Fatalf("redistest: flushall: %v", err)
	}
}

// Cluster is a Redis Cluster owned by one test.
type Cluster struct {
	*redisproc.Cluster
	tb testing.TB
}

// StartCluster starts a cluster of masters with replicas each.
func StartCluster(tb testing.TB, masters, replicas int) *Cluster {
	tb.Helper()
	c, err := redisproc.StartCluster(context.Background(), redisproc.ClusterConfig{
		Dir: tb.TempDir(), Masters: masters, Replicas: replicas, NodeTimeout: time.Second,
	})
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(c.Stop)
	return &Cluster{Cluster: c, tb: tb}
}

// Client returns a cluster client that is closed when the test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	cl := c.Cluster.Client()
	c.tb.Cleanup(func() { _ = cl.Close() })
	return cl
}

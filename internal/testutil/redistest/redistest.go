package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
	*cluster
	tb testing.TB
}

// StartCluster starts a cluster of masters with replicas each.
func StartCluster(tb testing.TB, masters, replicas int) *Cluster {
	tb.Helper()
	c, err := startCluster(context.Background(), clusterConfig{
		Dir: tb.TempDir(), Masters: masters, Replicas: replicas, NodeTimeout: time.Second,
	})
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(c.Stop)
	return &Cluster{cluster: c, tb: tb}
}

// Client returns a cluster client that is closed when the test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	cl := c.cluster.Client()
	c.tb.Cleanup(func() { _ = cl.Close() })
	return cl
}

// StartReplica starts a server replicating primary, and returns once
// their link is up.
func StartReplica(tb testing.TB, primary *Server) *Server {
	tb.Helper()
	r := Start(tb)
	c := r.Client()
	host, port, _ := strings.Cut(primary.Addr(), ":")
	ctx := context.Background()
	if err := c.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		tb.Fatalf("redistest: replicaof: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: the replica of %s did not come up: %v %s", primary.Addr(), err, info)
		}
	}
	// The primary counts it once it acknowledged.
	pc := primary.Client()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := pc.Info(ctx, "replication").Result()
		if err == nil && !strings.Contains(info, "connected_slaves:0") {
			return r
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: %s does not see its replica: %v", primary.Addr(), err)
		}
	}
}

// Pause stops the server's process (SIGSTOP) until Resume: it keeps its
// connections and answers nothing.
func (s *Server) Pause() {
	s.tb.Helper()
	if err := syscall.Kill(s.Pid(), syscall.SIGSTOP); err != nil {
		s.tb.Fatalf("redistest: pause: %v", err)
	}
}

// Resume continues a paused server.
func (s *Server) Resume() {
	s.tb.Helper()
	if err := syscall.Kill(s.Pid(), syscall.SIGCONT); err != nil {
		s.tb.Fatalf("redistest: resume: %v", err)
	}
}

// StartSentinel runs a redis-server in sentinel mode watching master as
// "mymaster" (quorum 1, down after 1 s, failover within 3 s), stopped when
// the test ends, and returns its address once it knows the master.
func StartSentinel(tb testing.TB, master string) string {
	tb.Helper()
	port, err := redisproc.FreePort(false)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	host, mport, _ := strings.Cut(master, ":")
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster %s %s 1\n"+
		"sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 3000\n", port, dir, host, mport)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if a, err := c.GetMasterAddrByName(context.Background(), "mymaster").Result(); err == nil && len(a) == 2 {
			return addr
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: sentinel at %s does not know mymaster", addr)
		}
	}
}

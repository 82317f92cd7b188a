package redisproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/child"
)

// Persistence selects how the server persists its data.
type Persistence int

// The persistence modes.
const (
	// None: no RDB snapshots, no append-only file. A restart loses all data.
	None Persistence = iota
	// AOFEverySec: append-only file, fsynced once a second.
	AOFEverySec
	// AOFAlways: append-only file, fsynced before every reply.
	AOFAlways
)

func (p Persistence) String() string {
	switch p {
	case AOFEverySec:
		return "aof-everysec"
	case AOFAlways:
		return "aof-always"
	}
	return "none"
}

// Config describes a server.
type Config struct {
	// Dir holds the server's data, log and nodes.conf. Required.
	Dir string
	// Port to listen on; 0 picks a free one. Ignored with Unix.
	Port int
	// Unix, when set, is the path of a Unix socket to listen on instead of
	// any TCP port: no port to collide with, and a shorter round trip.
	// Not with Cluster.
	Unix string
	// Persistence of the data set.
	Persistence Persistence
	// Cluster enables cluster mode (the bus port is Port+10000).
	Cluster bool
	// ClusterNodeTimeout is cluster-node-timeout; 0 means 2s.
	ClusterNodeTimeout time.Duration
	// Binary is the redis-server executable; "" looks it up on PATH.
	Binary string
	// StartTimeout bounds the wait for the first PONG; 0 means 10s.
	StartTimeout time.Duration
}

// defaultNodeTimeout is cluster-node-timeout unless set.
const defaultNodeTimeout = 2 * time.Second

// EnsureDefaults fills what is unset.
func (c *Config) EnsureDefaults() {
	if c.ClusterNodeTimeout == 0 {
		c.ClusterNodeTimeout = defaultNodeTimeout
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 10 * time.Second
	}
}

// Validate refuses a server Start cannot start.
func (c *Config) Validate() error {
	if c.Dir == "" {
		return errors.New("redisproc: Config.Dir is required")
	}
	if c.Unix != "" && c.Cluster {
		return errors.New("redisproc: a cluster node cannot listen on a Unix socket only")
	}
	return nil
}

// ErrNotInstalled says redis-server is not on the machine.
var ErrNotInstalled = errors.New("redis-server is not installed (Debian/Ubuntu: apt-get install -y redis-server)")

// Server is a redis-server child process.
type Server struct {
	cfg  Config
	bin  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done <-chan struct{} // closed when the current process has exited
}

// Start starts a server and waits until it answers PING.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin := cfg.Binary
	if bin == "" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, ErrNotInstalled
		}
		bin = p
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, bin: bin}
	if cfg.Unix != "" {
		s.cfg.Port = 0
		return s, s.start(ctx)
	}
	fixed := cfg.Port != 0
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if !fixed {
			if s.cfg.Port, err = FreePort(cfg.Cluster); err != nil {
				return nil, err
			}
		}
		if err = s.start(ctx); err == nil || fixed || !errors.Is(err, errAddrInUse) {
			return s, err
		}
	}
	return nil, err
}

var errAddrInUse = errors.New("address in use")

// FreePort returns a loopback TCP port that is free now and is not 6379;
// for a cluster node, port+10000 (its bus port) is free too.
func FreePort(cluster bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port == 6379 || port == 16379 {
			continue
		}
		if cluster {
			if port+10000 > 65535 {
				continue
			}
			bl, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
			if err != nil {
				continue
			}
			_ = bl.Close()
		}
		return port, nil
	}
	return 0, errors.New("redisproc: found no free port")
}

func (s *Server) args() []string {
	a := []string{"--port", strconv.Itoa(s.cfg.Port)}
	if s.cfg.Unix != "" {
		a = append(a, "--unixsocket", s.cfg.Unix, "--unixsocketperm", "700")
	} else {
		a = append(a, "--bind", "127.0.0.1")
	}
	a = append(a,
		"--protected-mode", "yes",
		"--daemonize", "no",
		"--dir", s.cfg.Dir,
		"--logfile", "redis.log",
		"--save", "",
		"--appendfilename", "appendonly.aof",
	)
	switch s.cfg.Persistence {
	case None:
		a = append(a, "--appendonly", "no")
	case AOFEverySec:
		a = append(a, "--appendonly", "yes", "--appendfsync", "everysec")
	case AOFAlways:
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	}
	if s.cfg.Cluster {
		a = append(a, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(s.cfg.ClusterNodeTimeout.Milliseconds(), 10))
	}
	return a
}

// start launches the process and waits for PONG.
func (s *Server) start(ctx context.Context) error {
	cmd := exec.Command(s.bin, s.args()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The child dies with its parent.
	done, err := child.Start(cmd)
	if err != nil {
		return fmt.Errorf("redisproc: starting %s: %w", s.bin, err)
	}
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	c := redis.NewClient(&redis.Options{Network: s.network(), Addr: s.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer func() { _ = c.Close() }()
	for {
		if err := c.Ping(ctx).Err(); err == nil {
			return nil
		}
		select {
		case <-done:
			log := s.tailLog(out.String())
			if strings.Contains(log, "Address already in use") {
				return fmt.Errorf("redisproc: port %d: %w", s.cfg.Port, errAddrInUse)
			}
			return fmt.Errorf("redisproc: redis-server exited at start: %s", log)
		case <-ctx.Done():
			_ = s.Kill()
			return fmt.Errorf("redisproc: redis-server at %s did not answer PING within %v: %s", s.Addr(), s.cfg.StartTimeout, s.tailLog(out.String()))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *Server) tailLog(stdout string) string {
	b, _ := os.ReadFile(filepath.Join(s.cfg.Dir, "redis.log"))
	text := strings.TrimSpace(stdout + "\n" + string(b))
	if len(text) > 2000 {
		text = text[len(text)-2000:]
	}
	return text
}

// Addr returns host:port, or the socket's path with Unix.
func (s *Server) Addr() string {
	if s.cfg.Unix != "" {
		return s.cfg.Unix
	}
	return "127.0.0.1:" + strconv.Itoa(s.cfg.Port)
}

func (s *Server) network() string {
	if s.cfg.Unix != "" {
		return "unix"
	}
	return "tcp"
}

// URL returns a redis:// URL for the server, or a unix:// one with Unix.
func (s *Server) URL() string {
	if s.cfg.Unix != "" {
		return "unix://" + s.cfg.Unix
	}
	return "redis://" + s.Addr()
}

// Port returns the port (0 with Unix).
func (s *Server) Port() int { return s.cfg.Port }

// Dir returns the data directory.
func (s *Server) Dir() string { return s.cfg.Dir }

// Config returns the server's configuration (with the chosen port).
func (s *Server) Config() Config { return s.cfg }

// Done is closed when the current process exits (stopped, killed or
// crashed).
func (s *Server) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	select {
	case <-s.Done():
		return false
	default:
		return true
	}
}

// Pid returns the process id of the current process.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// Stop shuts the server down gracefully (SIGTERM: an append-only file is
// flushed), and kills it if it has not exited within 10s.
func (s *Server) Stop() error {
	return s.signalAndWait(syscall.SIGTERM, 10*time.Second)
}

// Kill kills the server with SIGKILL (no flush, no goodbye) and waits for it.
func (s *Server) Kill() error {
	return s.signalAndWait(syscall.SIGKILL, 10*time.Second)
}

func (s *Server) signalAndWait(sig syscall.Signal, grace time.Duration) error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(grace):
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	return nil
}

// Restart starts the server again on the same port and directory (after
// stopping it if it still runs). What it remembers depends on Persistence.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start(ctx)
}

// Client returns a new client for the server; the caller closes it.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Network: s.network(), Addr: s.Addr()})
}

// FlushAll erases every key on the server.
func (s *Server) FlushAll(ctx context.Context) error {
	c := s.Client()
	defer func() { _ = c.Close() }()
	return c.FlushAll(ctx).Err()
}

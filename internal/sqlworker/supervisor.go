package sqlworker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightns/flightns/internal/child"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/nserror"
)

// SpecEnv is the environment variable that hands a worker its Spec.
const SpecEnv = "FLIGHTNS_SQL_WORKER"

// StuckExit is the exit status of a worker that gave up on a stopped
// query (Serve's ErrStuck).
const StuckExit = 3

// Spec is everything a worker process needs, passed in its environment
// (never on its command line, which other users can read).
type Spec struct {
	Root    string           `json:"root"`
	Redis   string           `json:"redis"`
	Catalog string           `json:"catalog"`
	Engine  sqlengine.Config `json:"engine"`
	Socket  string           `json:"socket"`
	Token   string           `json:"token"`
	// DataLimit caps the worker's data segment (RLIMIT_DATA), in bytes.
	DataLimit int64 `json:"data_limit"`
	// Idle runs the worker's threads under SCHED_IDLE: commits get the CPU first.
	Idle bool `json:"idle"`
	// CPUs are the only CPUs the worker's threads run on (none: any).
	CPUs []int `json:"cpus,omitempty"`
	// StopGrace: see ServeConfig.
	StopGrace time.Duration `json:"stop_grace"`
	LogFormat string        `json:"log_format"`
	LogLevel  string        `json:"log_level"`
}

// SpecFromEnv reads the Spec a supervisor passed.
func SpecFromEnv() (Spec, error) {
	var s Spec
	v := os.Getenv(SpecEnv)
	if v == "" {
		return s, fmt.Errorf("sqlworker: %s is not set: the SQL worker is started by flightns serve, not by hand", SpecEnv)
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, fmt.Errorf("sqlworker: %s: %w", SpecEnv, err)
	}
	return s, nil
}

// SupervisorConfig configures a Supervisor.
type SupervisorConfig struct {
	// Command is the worker's command line (the flightns binary and
	// "sql-worker").
	Command []string
	// Spec is the worker's configuration; Socket and Token are the
	// supervisor's to set.
	Spec Spec
	// Dir is a directory of the supervisor's own, for the socket; it is
	// made private (0700).
	Dir string
	// RSSLimit kills the worker when its resident set passes it (0: no
	// limit).
	RSSLimit int64
	// StartTimeout bounds a worker's start, its catalog load included
	// (default 10 min).
	StartTimeout time.Duration
	// Stderr receives the worker's log (default os.Stderr).
	Stderr io.Writer
	// Logger receives the supervisor's own lines (default slog.Default()).
	Logger *slog.Logger
	// Restarted is called each time a worker ended and another starts,
	// with why the last one ended: "exited", "memory", "stuck" or
	// "unresponsive" (optional; metrics).
	Restarted func(kind string)
	// Panicked is called once for each panic a worker's call recovered
	// from, within a second of it (read from the worker's Status;
	// optional; metrics).
	Panicked func()
}

// Supervisor keeps one worker running and answers flightserver.SQL
// through it.
type Supervisor struct {
	cfg SupervisorConfig
	log *slog.Logger

	mu    sync.Mutex
	cur   *proc
	ready chan struct{} // closed while cur is set; replaced when it ends

	stop chan struct{}
	done chan struct{}
}

// proc is one worker process.
type proc struct {
	cmd    *exec.Cmd
	client *Client
	exited <-chan struct{}
	mu     sync.Mutex
	reason string // why the supervisor killed it, if it did
	kind   string // the reason's short form
}

func (c *proc) kill(kind, reason string) {
	c.mu.Lock()
	if c.reason == "" {
		c.reason, c.kind = reason, kind
	}
	c.mu.Unlock()
	_ = c.cmd.Process.Kill()
}

// StartSupervisor starts the first worker and keeps one running until
// Close. It returns at once: queries wait for the worker (within their
// own time limit) while it loads the catalog.
func StartSupervisor(cfg SupervisorConfig) (*Supervisor, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	s := &Supervisor{cfg: cfg, log: cfg.Logger, ready: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s, nil
}

// loop starts workers until Close, backing off when they die young.
func (s *Supervisor) loop() {
	defer close(s.done)
	backoff := 100 * time.Millisecond
	for {
		started := time.Now()
		c, err := s.spawn()
		if err != nil {
			s.log.Error("the SQL worker did not start; retrying", "err", err, "in", backoff)
		} else {
			s.mu.Lock()
			s.cur = c
			close(s.ready)
			s.mu.Unlock()
			go s.watch(c)
			select {
			case <-c.exited:
			case <-s.stop:
				s.shutdown(c)
			}
			s.mu.Lock()
			s.cur = nil
			s.ready = make(chan struct{})
			s.mu.Unlock()
			_ = c.client.Close()
			c.mu.Lock()
			reason, kind := c.reason, c.kind
			c.mu.Unlock()
			if reason == "" {
				reason, kind = fmt.Sprintf("it exited (%v)", c.cmd.ProcessState), "exited"
				if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Exited() && ws.ExitStatus() == StuckExit {
					reason, kind = "a stopped query did not end in time", "stuck"
				}
			}
			select {
			case <-s.stop:
				return
			default:
			}
			s.log.Warn("the SQL worker ended; starting another (queries in flight failed with ServiceUnavailable)", "reason", reason, "pid", c.cmd.Process.Pid)
			if s.cfg.Restarted != nil {
				s.cfg.Restarted(kind)
			}
		}
		if time.Since(started) > 30*time.Second {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-s.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// spawn starts a worker and waits until it answers.
func (s *Supervisor) spawn() (*proc, error) {
	var tok [24]byte
	_, _ = rand.Read(tok[:])
	spec := s.cfg.Spec
	spec.Token = hex.EncodeToString(tok[:])
	spec.Socket = filepath.Join(s.cfg.Dir, "sql.sock")
	_ = os.Remove(spec.Socket)
	env, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
	cmd.Env = append(os.Environ(), SpecEnv+"="+string(env))
	cmd.Stdout, cmd.Stderr = s.cfg.Stderr, s.cfg.Stderr
	// The worker dies with the server.
	exited, err := child.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("sqlworker: starting %s: %w", s.cfg.Command[0], err)
	}
	c := &proc{cmd: cmd, exited: exited}
	if c.client, err = Dial(spec.Socket, spec.Token); err != nil {
		c.kill("exited", "its socket cannot be dialled")
		<-c.exited
		return nil, err
	}
	deadline := time.Now().Add(s.cfg.StartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.client.Status(ctx)
		cancel()
		if err == nil {
			s.log.Info("SQL worker started", "pid", cmd.Process.Pid)
			return c, nil
		}
		select {
		case <-c.exited:
			_ = c.client.Close()
			return nil, fmt.Errorf("sqlworker: the worker exited while starting (%v)", cmd.ProcessState)
		case <-s.stop:
			s.shutdown(c)
			_ = c.client.Close()
			return nil, errors.New("sqlworker: stopped")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.kill("unresponsive", "it did not start in time")
			<-c.exited
			_ = c.client.Close()
			return nil, fmt.Errorf("sqlworker: the worker did not answer within %v", s.cfg.StartTimeout)
		}
	}
}

// watch kills a worker whose resident set passes the limit or that stops
// answering.
func (s *Supervisor) watch(c *proc) {
	pid := c.cmd.Process.Pid
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	misses := 0
	lastBeat := time.Now()
	var panics uint64 // the worker's recovered panics reported so far
	for {
		select {
		case <-c.exited:
			return
		case <-tick.C:
		}
		if s.cfg.RSSLimit > 0 {
			if rss, err := residentBytes(pid); err == nil && rss > s.cfg.RSSLimit {
				s.log.Error("the SQL worker's resident memory passed its limit; killing it", "rss", rss, "limit", s.cfg.RSSLimit, "pid", pid)
				c.kill("memory", fmt.Sprintf("its resident memory (%d bytes) passed the limit (%d)", rss, s.cfg.RSSLimit))
				return
			}
		}
		if time.Since(lastBeat) < time.Second {
			continue
		}
		lastBeat = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.client.Status(ctx)
		cancel()
		if err == nil {
			misses = 0
			for ; panics < st.Panics; panics++ {
				if s.cfg.Panicked != nil {
					s.cfg.Panicked()
				}
			}
			continue
		}
		if misses++; misses >= 5 {
			s.log.Error("the SQL worker stopped answering; killing it", "pid", pid, "err", err)
			c.kill("unresponsive", "it stopped answering")
			return
		}
	}
}

// shutdown stops a worker: SIGTERM, then SIGKILL after two seconds.
func (s *Supervisor) shutdown(c *proc) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(2 * time.Second):
		c.kill("unresponsive", "it did not stop on SIGTERM")
		<-c.exited
	}
}

// Close stops the worker and the supervision.
func (s *Supervisor) Close() error {
	close(s.stop)
	<-s.done
	return nil
}

// Pid is the current worker's process id (0 while none runs).
func (s *Supervisor) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return 0
	}
	return s.cur.cmd.Process.Pid
}

// current waits, within ctx, for a running worker.
func (s *Supervisor) current(ctx context.Context) (*proc, error) {
	for {
		s.mu.Lock()
		cur, ready := s.cur, s.ready
		s.mu.Unlock()
		if cur != nil {
			select {
			case <-cur.exited: // dead, and the loop has not noticed yet
				time.Sleep(5 * time.Millisecond)
				continue
			default:
			}
			return cur, nil
		}
		select {
		case <-ready:
		case <-s.stop:
			return nil, nserror.New(nserror.ServiceUnavailable, "the server is stopping")
		case <-ctx.Done():
			return nil, nserror.New(nserror.ServiceUnavailable, "the SQL worker is starting (it loads the catalog): %w", ctx.Err())
		}
	}
}

// call runs fn on the current worker. When the worker is gone by the time
// fn fails (it died before or during the call), fn runs once more on the
// next worker within ctx: a call that reached a dead worker is not lost,
// and a query that kills two workers fails.
func (s *Supervisor) call(ctx context.Context, fn func(*Client) error) error {
	for attempt := 0; ; attempt++ {
		c, err := s.current(ctx)
		if err != nil {
			return err
		}
		err = fn(c.client)
		if err == nil || attempt > 0 || ctx.Err() != nil || nserror.CodeOf(err) != nserror.ServiceUnavailable {
			return err
		}
		select {
		case <-c.exited:
		case <-time.After(200 * time.Millisecond):
			return err // the worker lives: the error is the call's own
		}
		s.log.Warn("a SQL call reached a worker that died; trying the next one", "pid", c.cmd.Process.Pid, "err", err)
	}
}

// Schema implements flightserver.SQL.
func (s *Supervisor) Schema(ctx context.Context, query string) (schema *arrow.Schema, params []arrow.DataType, err error) {
	err = s.call(ctx, func(c *Client) error {
		schema, params, err = c.Schema(ctx, query)
		return err
	})
	return schema, params, err
}

// MaxQueries implements flightserver.SQL: the worker's engine runs at
// most this many queries at once.
func (s *Supervisor) MaxQueries() int {
	e := s.cfg.Spec.Engine
	e.EnsureDefaults()
	return e.MaxQueries
}

// Query implements flightserver.SQL.
func (s *Supervisor) Query(ctx context.Context, query string, args []any, after uint64) (res *sqlengine.Result, err error) {
	err = s.call(ctx, func(c *Client) error {
		res, err = c.Query(ctx, query, args, after)
		return err
	})
	return res, err
}

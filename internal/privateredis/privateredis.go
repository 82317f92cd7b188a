package privateredis

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flightns/flightns/internal/redisproc"
)

// The files of the protocol, relative to the data directory.
const (
	lockName = "flightns.lock" // <data>/flightns.lock, flocked by the holder
	redisDir = "redis"         // <data>/redis, the server's own files
	urlName  = "redis.url"     // <data>/redis/redis.url, the holder's published URL
	sockName = "redis.sock"    // the server's Unix socket
)

// maxSocketPath is what fits in a Unix socket address (sun_path is 108
// bytes on Linux, 104 elsewhere, with its NUL).
const maxSocketPath = 100

// ErrLocked says another process holds the data directory's lock (and,
// when sharing was allowed, has published no URL to share).
var ErrLocked = errors.New("another flightns process uses the data directory")

// Private is a data directory's private Redis as one process sees it:
// either the server it runs under the directory's lock, or, shared, the
// URL of the one another process runs.
type Private struct {
	url    string
	shared bool // the server is another process's
	log    *slog.Logger

	// Held only by the process that runs the server; all zero when shared.
	lock    *os.File          // <data>/flightns.lock, flocked
	server  *redisproc.Server // the redis-server child
	sockDir string            // the socket's temporary directory, when the data directory's path is too long
}

// Open starts the data directory's private redis-server under the
// directory's lock (flock on <data>/flightns.lock), publishing its URL in
// <data>/redis/redis.url. When another process holds the lock, share says
// whether to return the URL that process published (the admin commands
// next to a running server) or to fail with ErrLocked (a second server).
// A nil log discards.
func Open(ctx context.Context, data string, share bool, log *slog.Logger) (*Private, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Join(data, redisDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(data, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return join(data, share, log)
	}
	p := &Private{lock: lock, log: log}
	if err := p.start(ctx, dir); err != nil {
		_ = p.Close() // stops what did start, and releases the lock
		return nil, err
	}
	return p, nil
}

// join is Open when another process holds the lock: the URL it published,
// if sharing is allowed and it published one.
func join(data string, share bool, log *slog.Logger) (*Private, error) {
	b, err := os.ReadFile(filepath.Join(data, redisDir, urlName))
	url := strings.TrimSpace(string(b))
	if !share || err != nil || url == "" {
		return nil, fmt.Errorf("%w %s (its lock %s is held); stop it, or pass --data or --redis", ErrLocked, data, lockName)
	}
	log.Info("using the private redis-server of the running flightns", "url", url)
	return &Private{url: url, shared: true, log: log}, nil
}

// start runs the server in dir, the lock held, and publishes its URL
// once it answers.
func (p *Private) start(ctx context.Context, dir string) error {
	sock, err := p.socketPath(dir)
	if err != nil {
		return err
	}
	rs, err := redisproc.Start(ctx, redisproc.Config{Dir: dir, Unix: sock, Persistence: redisproc.AOFAlways})
	if err != nil {
		if errors.Is(err, redisproc.ErrNotInstalled) {
			return fmt.Errorf("no --redis URL, and the private Redis cannot start: %w; or pass --redis redis://host:port", err)
		}
		return fmt.Errorf("starting the private redis-server: %w", err)
	}
	p.server = rs
	if err := os.WriteFile(filepath.Join(dir, urlName), []byte(rs.URL()+"\n"), 0o644); err != nil {
		return err
	}
	p.url = rs.URL()
	p.log.Info("private redis-server started", "addr", rs.Addr(), "pid", rs.Pid(), "dir", rs.Dir(), "appendfsync", "always")
	return nil
}

// socketPath is where the server listens: redis.sock in its own
// directory, or, when that path is too long for a socket address, in a
// fresh directory of this process under the system's temporary directory
// (removed by Close).
func (p *Private) socketPath(dir string) (string, error) {
	if path := filepath.Join(dir, sockName); len(path) <= maxSocketPath {
		return path, nil
	}
	tmp, err := os.MkdirTemp("", "flightns-redis-")
	if err != nil {
		return "", err
	}
	p.sockDir = tmp
	return filepath.Join(tmp, sockName), nil
}

// URL is the server's URL (unix:///…/redis.sock), this process's or the
// one it shares.
func (p *Private) URL() string { return p.url }

// Shared reports whether the server is another process's: this one holds
// no lock and runs nothing, and Close leaves the server alone.
func (p *Private) Shared() bool { return p.shared }

// Server is the redis-server child this process runs, for supervision;
// nil when shared. Supervision must end before Close, or the stop is taken
// for a death and the server restarted.
func (p *Private) Server() *redisproc.Server { return p.server }

// Close removes the URL file, stops the server (SIGTERM: the append-only
// file is flushed), removes the socket's temporary directory and releases
// the lock, in that order (see the package doc). It does nothing when
// shared, and nothing the second time.
func (p *Private) Close() error {
	var errs []error
	if p.server != nil {
		if err := os.Remove(filepath.Join(p.server.Dir(), urlName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if err := p.server.Stop(); err != nil {
			errs = append(errs, err)
		} else {
			p.log.Info("private redis-server stopped")
		}
		p.server = nil
	}
	if p.sockDir != "" {
		if err := os.RemoveAll(p.sockDir); err != nil {
			errs = append(errs, err)
		}
		p.sockDir = ""
	}
	if p.lock != nil {
		if err := p.lock.Close(); err != nil { // releases the lock
			errs = append(errs, err)
		}
		p.lock = nil
	}
	return errors.Join(errs...)
}

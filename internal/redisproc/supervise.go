package redisproc

import (
	"context"
	"log/slog"
	"strings"
	"time"
)

// Watch is what Supervise reports to.
type Watch struct {
	// Died is called when the process exited while it was supervised.
	Died func()
	// Restarted is called once it answers again, on the same port and
	// directory (what it remembers depends on Persistence); it runs on
	// the supervisor's goroutine, so the next death is noticed after it
	// returns.
	Restarted func(ctx context.Context)
	// FirstDelay is the wait before the first restart attempt (default
	// 500ms); it doubles on every failed attempt up to 30s.
	FirstDelay time.Duration
}

// Supervise restarts the server whenever it dies, until ctx ends. Stop
// the supervision (cancel ctx and wait for Supervise to return) before
// Stop, or Stop's exit is taken for a death.
func (s *Server) Supervise(ctx context.Context, log *slog.Logger, w Watch) {
	first := w.FirstDelay
	if first <= 0 {
		first = 500 * time.Millisecond
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.Done():
		}
		if ctx.Err() != nil {
			return
		}
		log.Error("the private redis-server exited; restarting it", "addr", s.Addr(), "last_log", lastLines(s.tailLog(""), 3))
		if w.Died != nil {
			w.Died()
		}
		for delay := first; ; delay = min(2*delay, 30*time.Second) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			err := s.start(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			log.Error("restarting the private redis-server failed; trying again", "err", err, "in", 2*delay)
		}
		log.Info("private redis-server restarted", "addr", s.Addr(), "pid", s.Pid())
		if w.Restarted != nil {
			w.Restarted(ctx)
		}
	}
}

// lastLines is the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

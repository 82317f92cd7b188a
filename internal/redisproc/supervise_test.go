package redisproc

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

func TestSuperviseRestartsADeadServerOnItsPortWithItsData(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Start(ctx, Config{Dir: t.TempDir(), Persistence: AOFAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Kill() }()
	c := s.Client()
	defer func() { _ = c.Close() }()
	if err := c.Set(ctx, "k", "acknowledged", 0).Err(); err != nil {
		t.Fatal(err)
	}
	died, restarted := make(chan struct{}, 2), make(chan struct{}, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Supervise(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), Watch{
			Died:       func() { died <- struct{}{} },
			Restarted:  func(context.Context) { restarted <- struct{}{} },
			FirstDelay: 10 * time.Millisecond,
		})
	}()
	port, pid := s.Port(), s.Pid()
	for round := range 2 {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
		<-died
		<-restarted
		if !s.Running() || s.Port() != port || s.Pid() == pid {
			t.Fatalf("round %d: running %v, port %d (was %d), pid %d (was %d)", round, s.Running(), s.Port(), port, s.Pid(), pid)
		}
		pid = s.Pid()
		if v, err := c.Get(ctx, "k").Result(); err != nil || v != "acknowledged" {
			t.Fatalf("round %d: after the restart k = %q, %v", round, v, err)
		}
	}
	// Stopping the supervision first makes Stop an ordinary stop.
	cancel()
	<-done
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-died:
		t.Fatal("a stop after the supervision ended was taken for a death")
	default:
	}
}

package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/console"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/planner"
)

// serveConsole serves the web console on l, and samples the metrics
// history its activity page draws until ctx ends.
func (s *Server) serveConsole(ctx context.Context, l net.Listener, authn *auth.Authenticator, fsrv *flightserver.Server,
	plan *planner.Planner, rest http.Handler) error {
	every := s.cfg.ConsoleSampleEvery
	table := s.svc.Table()
	hist := obs.NewHistory(s.metrics, every, int(time.Hour/every), func(ctx context.Context) (float64, bool) {
		head, err := table.Head(ctx)
		if err != nil {
			return 0, false
		}
		return float64(head - min(head, table.Visible())), true
	})
	s.bg.Add(1)
	go func() { defer s.bg.Done(); hist.Run(ctx) }()
	h, err := console.New(console.Config{Service: s.svc, Planner: plan, Auth: authn, SQL: fsrv, REST: rest, History: hist,
		Health: s.consoleHealth(fsrv), Secure: s.cfg.TLSCert != "", MaxBodyBytes: s.cfg.MaxBodyBytes, Logger: s.log})
	if err != nil {
		return err
	}
	if err := s.serveHTTP(l, h, "console"); err != nil {
		return err
	}
	scheme := "http"
	if s.cfg.TLSCert != "" {
		scheme = "https"
	}
	s.log.Info("console listening", "addr", l.Addr().String(), "url", scheme+"://"+l.Addr().String()+"/")
	return nil
}

// consoleHealth checks what the health page shows: readiness, Redis,
// object storage (a HEAD answered, found or not) and the SQL gate (a
// query of one row).
func (s *Server) consoleHealth(fsrv *flightserver.Server) func(context.Context) console.HealthReport {
	return func(ctx context.Context) console.HealthReport {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var h console.HealthReport
		ready, reason := s.health.Ready()
		h.Ready = ready
		if reason != "" {
			h.Reasons = append(h.Reasons, reason)
		}
		h.Redis = console.CheckOf(s.deps.Redis.Ping(ctx).Err())
		_, err := s.deps.Store.Head(ctx, "__manifest/_health")
		if errors.Is(err, objstore.ErrNotFound) {
			err = nil
		}
		h.Storage = console.CheckOf(err)
		h.SQL = console.CheckOf(sqlAnswers(ctx, fsrv))
		return h
	}
}

// sqlAnswers runs SELECT 1 through the gate, as the server itself.
func sqlAnswers(ctx context.Context, fsrv *flightserver.Server) error {
	_, ch, err := fsrv.Query(auth.WithPrincipal(ctx, auth.Anonymous), "SELECT 1")
	if err != nil {
		return err
	}
	for chunk := range ch {
		if chunk.Err != nil {
			err = chunk.Err
		}
		if chunk.Data != nil {
			chunk.Data.Release()
		}
	}
	return err
}

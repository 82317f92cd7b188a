package server_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/server"
)

// A Flight login's bearer is good on every server of the catalog and
// after a restart (DBeaver's driver keeps the first one for the
// connection's whole life), until its user's sessions are revoked: then
// every server refuses it within seconds, and a new login works.
func TestSessionsOutliveRestartsAndReachEveryServer(t *testing.T) {
	ctx := context.Background()
	rd := redistest.Start(t)
	root := "file://" + t.TempDir()
	authFile := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"users": [{"name": "ana", "password": "pw-ana", "role": "read"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	store := server.Store{Root: root, Redis: "redis://" + rd.Addr(), Catalog: "sessions"}
	start := func() *server.Server {
		t.Helper()
		cfg := config(t, t.TempDir())
		cfg.Store.Root, cfg.Store.Redis, cfg.Store.Catalog = store.Root, store.Redis, store.Catalog
		cfg.AuthFile, cfg.RESTAddr, cfg.MetricsAddr = authFile, "", ""
		srv, err := server.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	client := func(srv *server.Server) *flightsql.Client {
		t.Helper()
		c, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	call := func(srv *server.Server, bearer context.Context) error {
		_, err := client(srv).GetCatalogs(bearer)
		return err
	}
	a, b := start(), start()
	defer func() { _ = b.Close() }()
	fc := client(a).Client
	bearer, err := fc.AuthenticateBasicToken(ctx, "ana", "pw-ana")
	if err != nil {
		t.Fatal(err)
	}
	if err := call(b, bearer); err != nil {
		t.Fatalf("the bearer of a login on one server, on another: %v", err)
	}
	if _, err := client(a).GetCatalogs(ctx); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no credentials: %v, want Unauthenticated", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = start()
	defer func() { _ = a.Close() }()
	if err := call(a, bearer); err != nil {
		t.Fatalf("the bearer after its server restarted: %v", err)
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	deps, err := server.OpenDeps(ctx, server.Store{DataDir: t.TempDir(), Root: store.Root, Redis: store.Redis, Catalog: store.Catalog}, quiet, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer deps.Close(quiet)
	if err := deps.RevokeSessions(ctx, "ana"); err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*server.Server{a, b} {
		deadline := time.Now().Add(10 * time.Second)
		for call(srv, bearer) == nil {
			if time.Now().After(deadline) {
				t.Fatal("a revoked session still works after 10 s")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := call(srv, bearer); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("a revoked session: %v, want Unauthenticated", err)
		}
	}
	time.Sleep(5 * time.Millisecond) // a login after the revocation's millisecond
	again, err := client(b).Client.AuthenticateBasicToken(ctx, "ana", "pw-ana")
	if err != nil {
		t.Fatal(err)
	}
	if err := call(b, again); err != nil {
		t.Fatalf("a login after the revocation: %v", err)
	}
}

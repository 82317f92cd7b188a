package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/flightserver"
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

// A change feed that follows ends once its session does: a revocation
// cuts the REST event stream and the Flight stream of a logged-in reader
// within seconds (they were authenticated once, as they began, and went
// on delivering what the catalog changed). Before, both kept streaming.
func TestAFollowingFeedEndsWithItsSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rd := redistest.Start(t)
	authFile := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"tokens": [{"token": "admin-token-1234", "name": "root", "role": "admin"}],
		"users": [{"name": "ana", "password": "pw-ana", "role": "read"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config(t, t.TempDir())
	cfg.Store.Root, cfg.Store.Redis, cfg.Store.Catalog = "file://"+t.TempDir(), "redis://"+rd.Addr(), "feedsessions"
	cfg.AuthFile, cfg.MetricsAddr = authFile, ""
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	rest := "http://" + srv.RESTAddr().String()
	c, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	bearer, err := c.Client.AuthenticateBasicToken(ctx, "ana", "pw-ana")
	if err != nil {
		t.Fatal(err)
	}
	md, _ := metadata.FromOutgoingContext(bearer)
	authz := md.Get("authorization")
	if len(authz) != 1 {
		t.Fatalf("the login's metadata: %v", md)
	}
	created := func(name string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rest+"/v1/namespace/"+name+"/create", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer admin-token-1234")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("creating %s: HTTP %d", name, resp.StatusCode)
		}
	}

	// The two feeds, each read apart: what it saw, and how it ended.
	type feed struct {
		mu   sync.Mutex
		seen []string
		end  error
		done chan struct{}
	}
	saw := func(f *feed, what string) { f.mu.Lock(); f.seen = append(f.seen, what); f.mu.Unlock() }
	sse, fl := &feed{done: make(chan struct{})}, &feed{done: make(chan struct{})}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rest+"/v1/changes", nil)
	req.Header.Set("Authorization", authz[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the reader's event stream: %v %v", resp, err)
	}
	defer func() { _ = resp.Body.Close() }()
	go func() {
		defer close(sse.done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "data: ") {
				saw(sse, l)
			}
		}
		sse.end = errors.New("closed")
	}()
	tk, err := flightserver.ChangesTicket(api.ChangesRequest{}, "")
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Client.DoGet(bearer, tk)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(fl.done)
		for {
			m, err := stream.Recv()
			if err != nil {
				fl.mu.Lock()
				fl.end = err
				fl.mu.Unlock()
				return
			}
			if len(m.DataBody) > 0 {
				saw(fl, "batch")
			}
		}
	}()
	seen := func(f *feed) int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.seen) }
	created("before")
	for deadline := time.Now().Add(30 * time.Second); seen(sse) == 0 || seen(fl) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the feeds saw nothing of a namespace created: SSE %d, Flight %d", seen(sse), seen(fl))
		}
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	deps, err := server.OpenDeps(ctx, server.Store{DataDir: t.TempDir(), Root: cfg.Store.Root, Redis: cfg.Store.Redis, Catalog: cfg.Store.Catalog}, quiet, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer deps.Close(quiet)
	if err := deps.RevokeSessions(ctx, "ana"); err != nil {
		t.Fatal(err)
	}
	// The catalog goes on changing; both feeds end within seconds.
	for i := 0; ; i++ {
		select {
		case <-sse.done:
		case <-time.After(200 * time.Millisecond):
			created(fmt.Sprintf("after%d", i))
			if i > 75 {
				t.Fatalf("the event stream of a revoked session still follows after 15 s: %d messages", seen(sse))
			}
			continue
		}
		break
	}
	sse.mu.Lock()
	last := sse.seen[len(sse.seen)-1]
	sse.mu.Unlock()
	if !strings.Contains(last, `"code":16`) || !strings.Contains(last, "ends after sequence") {
		t.Fatalf("the event stream's last message: %s, want its Unauthenticated end", last)
	}
	select {
	case <-fl.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the Flight feed of a revoked session still follows")
	}
	if status.Code(fl.end) != codes.Unauthenticated {
		t.Fatalf("the Flight feed ended with %v, want Unauthenticated", fl.end)
	}
}

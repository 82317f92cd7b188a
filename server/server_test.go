package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/metadata"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/server"
)

// config is a server on free loopback ports over a fresh data directory
// (its private redis-server), SQL in this process.
func config(t *testing.T, data string) server.Config {
	return server.Config{Store: server.Store{DataDir: data}, FlightAddr: "127.0.0.1:0", RESTAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		SQL: server.SQL{Isolation: "none", Memory: "256MB"}}
}

// syncBuffer is a log's destination written by many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// metricValue is the value of a sample in the Prometheus text format.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in the metrics", name)
	return 0
}

// restStatus sends method path (body {}) to srv's REST API, with
// credentials set by creds when given, and returns the HTTP status.
func restStatus(t *testing.T, srv *server.Server, method, path string, creds func(*http.Request)) int {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+srv.RESTAddr().String()+path, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	if creds != nil {
		creds(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// bearer sets a bearer token.
func bearer(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

// flightAction runs a Flight action with a bearer token and returns its
// error.
func flightAction(ctx context.Context, c *flightsql.Client, token, typ, body string) error {
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	s, err := c.Client.DoAction(ctx, &flight.Action{Type: typ, Body: []byte(body)})
	if err == nil {
		_, err = s.Recv()
	}
	return err
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestStartServesUntilCloseAndTheCatalogOutlivesIt(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	var log syncBuffer
	cfg := config(t, data)
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, "http://"+srv.MetricsAddr().String()+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz after Start: %d %s", code, body)
	}
	if n := strings.Count(log.String(), "flightns ready") + strings.Count(log.String(), "is ready"); n != 1 || !strings.Contains(log.String(), `msg="flightns ready"`) {
		t.Fatalf("the start logs ready %d times, want once:\n%s", n, log.String())
	}
	for _, ns := range []string{"sales", "ops", "hr"} {
		resp, err := http.Post("http://"+srv.RESTAddr().String()+"/v1/namespace/"+ns+"/create", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("CreateNamespace over REST: %d", resp.StatusCode)
		}
	}
	// The materializer reports its group commits: three mutations, each
	// durable before its answer, in at most three segments; a size is a
	// count of catalog sequences (never the epoch in their high bits).
	_, metrics := get(t, "http://"+srv.MetricsAddr().String()+"/metrics")
	count, sum := metricValue(t, metrics, "flightns_group_commit_size_count"), metricValue(t, metrics, "flightns_group_commit_size_sum")
	if count < 1 || count > 3 || sum < 3 || sum > 4 {
		t.Errorf("group commits: %v segments carrying %v sequences; want 1 to 3 carrying the 3 mutations (4 with the catalog's first)", count, sum)
	}
	if c, err := net.Dial("tcp", srv.FlightAddr().String()); err != nil {
		t.Fatalf("Flight does not listen: %v", err)
	} else {
		_ = c.Close()
	}
	rest := srv.RESTAddr().String()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if c, err := net.Dial("tcp", rest); err == nil {
		_ = c.Close()
		t.Fatal("REST still listens after Close")
	}

	// The same data directory opens again (the private Redis was stopped
	// and its lock released) with the namespace in it.
	srv, err = server.Start(ctx, config(t, data))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	if err := srv.Service().NamespaceExists(ctx, api.NamespaceExistsRequest{ID: api.ID{"sales"}}); err != nil {
		t.Fatalf("the namespace after a restart: %v", err)
	}
}

func TestAFailedStartLeavesNothingRunning(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(t, data)
	cfg.RESTAddr = taken.Addr().String()
	if _, err := server.Start(ctx, cfg); err == nil || !strings.Contains(err.Error(), "REST address") {
		t.Fatalf("Start on a taken REST port: %v", err)
	}
	_ = taken.Close()
	cfg.SQL.Isolation = "sometimes"
	if _, err := server.Start(ctx, cfg); err == nil || !strings.Contains(err.Error(), "want process or none") {
		t.Fatalf("Start with a bad SQL isolation: %v", err)
	}
	// Vended credentials a client would renew at every request.
	for _, v := range []server.Vend{
		{Enabled: true, RenewAfter: 30 * time.Second},                                  // within Lance's 60 s
		{Enabled: true, RenewAfter: 10 * time.Second, RefreshOffset: 10 * time.Second}, // as long as the life answered
		{Enabled: true, Duration: 15 * time.Minute, RefreshOffset: 20 * time.Minute},
	} {
		bad := config(t, data)
		bad.Vend = v
		if _, err := server.Start(ctx, bad); err == nil || !strings.Contains(err.Error(), "refresh offset") {
			t.Fatalf("Start with vending %+v: %v", v, err)
		}
	}
	// A failure after the private Redis started releases it too: a second
	// server over the same data directory is refused, and the first one's
	// start works after it.
	srv, err := server.Start(ctx, config(t, data))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Start(ctx, config(t, data)); err == nil {
		t.Fatal("a second server over the same data directory started")
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	srv, err = server.Start(ctx, config(t, data))
	if err != nil {
		t.Fatalf("Start after the refused second server: %v", err)
	}
	_ = srv.Close()
}

// okFrom makes post (restAs's) a step that must answer 200: it answers
// the body, or fails the test with what was answered.
func okFrom(t *testing.T, post func(path, body string) (int, string)) func(path, body string) string {
	return func(path, body string) string {
		t.Helper()
		code, out := post(path, body)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, out)
		}
		return out
	}
}

// restAs returns a function that POSTs body to path on srv's REST API
// with token as its bearer, and answers the status and the body.
func restAs(t *testing.T, srv *server.Server, token string) func(path, body string) (int, string) {
	return func(path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+srv.RESTAddr().String()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
}

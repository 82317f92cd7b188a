package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/redisclaim"
	"github.com/flightns/flightns/server"
)

// Every HTTP listener (REST, the console, metrics and health) bounds a
// request's header (431 past Config.HTTP.MaxHeaderBytes, 64 KiB) and
// closes a keep-alive connection left idle (Config.HTTP.IdleTimeout);
// issue 43 found neither.
func TestEveryHTTPListenerBoundsHeadersAndIdleConnections(t *testing.T) {
	cfg := config(t, t.TempDir())
	cfg.ConsoleAddr = "127.0.0.1:0"
	cfg.HTTP.IdleTimeout = 300 * time.Millisecond
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	for name, addr := range map[string]net.Addr{"REST": srv.RESTAddr(), "console": srv.ConsoleAddr(), "metrics": srv.MetricsAddr()} {
		// An oversized header: 431.
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr.String()+"/healthz", nil)
		req.Header.Set("X-Big", strings.Repeat("x", 100<<10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: a 100 KiB header answered %d, want 431", name, resp.StatusCode)
		}

		// An idle keep-alive connection: closed by the server.
		conn, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		resp, err = http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		start := time.Now()
		_, err = r.ReadByte()
		if !errors.Is(err, io.EOF) {
			t.Errorf("%s: an idle keep-alive connection: %v after %s, want it closed", name, err, time.Since(start).Round(time.Millisecond))
		}
		_ = conn.Close()
	}
}

// A panic in a Flight call of a running server (here, planted at the
// claim of one table's commit) is Internal, counted in
// flightns_panics_recovered_total{surface="flight"}, and the server
// serves on; every surface's count is reported from the start.
func TestAPanicInAFlightOrRESTCallIsCountedAndTheServerServesOn(t *testing.T) {
	dir := t.TempDir()
	cfg := config(t, filepath.Join(dir, "data"))
	cfg.ClaimStep = func(_ context.Context, step redisclaim.Step, table string, _ uint64) error {
		if step == redisclaim.StepClaimed && strings.Contains(table, "boom") {
			panic("a planted bug")
		}
		return nil
	}
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	metrics := "http://" + srv.MetricsAddr().String() + "/metrics"
	_, text := get(t, metrics)
	for _, s := range []string{"flight", "rest", "console", "metrics", "sql-worker"} {
		if v := metricValue(t, text, `flightns_panics_recovered_total{surface="`+s+`"}`); v != 0 {
			t.Fatalf("%s: %v panics at the start", s, v)
		}
	}
	ctx := context.Background()
	c, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	for _, a := range []struct{ typ, body string }{
		{"CreateNamespace", `{"id": ["ns"]}`},
		{"DeclareTable", `{"id": ["ns", "boom"]}`},
	} {
		if err := flightAction(ctx, c, "", a.typ, a.body); err != nil {
			t.Fatalf("%s: %v", a.typ, err)
		}
	}
	code, out := restAs(t, srv, "none")("/v1/table/ns$boom/describe", `{}`)
	loc := between(out, `"location":"`, `"`)
	if code != http.StatusOK || loc == "" {
		t.Fatalf("describe: %d %s", code, out)
	}
	staged := stageManifest(t, loc, 1)
	err = flightAction(ctx, c, "", "CreateTableVersion", fmt.Sprintf(`{"id": ["ns", "boom"], "version": 1, "manifest_path": %q}`, staged))
	if status.Code(err) != codes.Internal {
		t.Fatalf("the commit whose claim panics: %v, want Internal", err)
	}
	if lc, _ := grpcstatus.Code(err); lc != nserror.Internal {
		t.Fatalf("the commit whose claim panics carries %v", lc)
	}
	_, text = get(t, metrics)
	if v := metricValue(t, text, `flightns_panics_recovered_total{surface="flight"}`); v != 1 {
		t.Fatalf("%v Flight panics counted, want 1", v)
	}
	if err := flightAction(ctx, c, "", "ListNamespaces", `{"id": []}`); err != nil {
		t.Fatalf("after the panic: %v", err)
	}
	// The same over REST: its handler recovers, answers Internal and
	// counts the panic as REST's.
	code, out = restAs(t, srv, "none")("/v1/table/ns$boom/version/create", fmt.Sprintf(`{"version": 1, "manifest_path": %q}`, staged))
	if code != http.StatusInternalServerError || !strings.Contains(out, `"code":18`) || strings.Contains(out, "planted") {
		t.Fatalf("the REST commit whose claim panics: %d %s, want 500 code 18 naming nothing of the panic", code, out)
	}
	_, text = get(t, metrics)
	if v := metricValue(t, text, `flightns_panics_recovered_total{surface="rest"}`); v != 1 {
		t.Fatalf("%v REST panics counted, want 1", v)
	}
	if code, out := restAs(t, srv, "none")("/v1/namespace/ns/describe", `{}`); code != http.StatusOK {
		t.Fatalf("REST after the panic: %d %s", code, out)
	}
}

// between is the text of s between the first before and the after that
// follows it ("" when absent).
func between(s, before, after string) string {
	_, rest, ok := strings.Cut(s, before)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, after)
	return v
}

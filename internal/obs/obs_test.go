package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/redisurl"
	"github.com/flightns/flightns/nserror"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestReadyOnlyAfterRecoveryAndWhileRedisAnswers(t *testing.T) {
	var pingErr error
	m := NewMetrics()
	h := NewHealth(func(context.Context) error { return pingErr }, m, quiet)
	checkDown := ""
	h.AddCheck(func() string { return checkDown })
	ready := func() bool { ok, _ := h.Ready(); return ok }
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"starting", func() {}, false},
		{"recovered", h.SetRecovered, true},
		{"redis down", func() { pingErr = errors.New("connection refused"); h.Check(context.Background()) }, false},
		{"redis back", func() { pingErr = nil; h.Check(context.Background()) }, true},
		{"private redis restarting", func() { h.SetDown("restarting") }, false},
		{"restarted", func() { h.SetDown("") }, true},
		{"a check fails", func() { checkDown = "__manifest has made no progress"; h.Check(context.Background()) }, false},
		{"the check passes", func() { checkDown = ""; h.Check(context.Background()) }, true},
		{"stopping", h.SetStopping, false},
		{"stopping stays", func() { h.SetDown("") }, false},
	}
	for _, s := range steps {
		s.do()
		if ready() != s.want {
			t.Fatalf("%s: ready %v, want %v", s.name, ready(), s.want)
		}
		rec := httptest.NewRecorder()
		h.Readyz(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if (rec.Code == http.StatusOK) != s.want {
			t.Fatalf("%s: /readyz %d", s.name, rec.Code)
		}
		if got := testutil.ToFloat64(m.ready); (got == 1) != s.want {
			t.Fatalf("%s: flightns_ready %v", s.name, got)
		}
	}
}

func TestCommitsConflictsAndRequestsAreCounted(t *testing.T) {
	m := NewMetrics()
	m.Request("rest", "CreateTableVersion", "OK", time.Millisecond)
	m.Request("flight", "CreateTableVersion", nserror.ConcurrentModification.String(), time.Millisecond)
	m.Request("flight", "BatchCommitTables", nserror.Internal.String(), time.Millisecond)
	m.Request("rest", "CreateNamespace", "OK", time.Millisecond)
	for result, want := range map[string]float64{"committed": 1, "conflict": 1, "failed": 1} {
		if got := testutil.ToFloat64(m.commits.WithLabelValues(result)); got != want {
			t.Errorf("commits %s: %v", result, got)
		}
	}
	m.Claimed(1, time.Millisecond, nil)
	m.Claimed(1, time.Millisecond, nserror.New(nserror.ConcurrentModification, "taken"))
	m.Finalized(time.Millisecond, nil)
	m.Recovered(time.Second, nil)
	if got := testutil.ToFloat64(m.conflicts); got != 1 {
		t.Errorf("conflicts %v", got)
	}
	if got := testutil.ToFloat64(m.recoveries.WithLabelValues("ok")); got != 1 {
		t.Errorf("recoveries %v", got)
	}
	if n := testutil.CollectAndCount(m.requests); n != 4 {
		t.Errorf("%d request series, want 4", n)
	}
}

func TestGroupCommitsAreRecorded(t *testing.T) {
	m := NewMetrics()
	m.GroupCommitted(3, time.Millisecond)
	m.GroupCommitted(4, 2*time.Millisecond)
	metrics, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, mf := range metrics {
		switch mf.GetName() {
		case "flightns_group_commit_size":
			seen++
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 2 || h.GetSampleSum() != 7 {
				t.Errorf("group commit sizes: %d samples, sum %v; want 3 and 4", h.GetSampleCount(), h.GetSampleSum())
			}
		case "flightns_materialize_duration_seconds":
			seen++
			if c := mf.GetMetric()[0].GetHistogram().GetSampleCount(); c != 2 {
				t.Errorf("materialize samples %d", c)
			}
		}
	}
	if seen != 2 {
		t.Errorf("%d of the two group-commit metrics gathered", seen)
	}
}

func TestRedisHookCountsFailuresNotNilReplies(t *testing.T) {
	m := NewMetrics()
	h := redisurl.ErrorHook(m.RedisError)
	count := func(err error) {
		_ = h.ProcessHook(func(context.Context, redis.Cmder) error { return err })(context.Background(), nil)
	}
	count(redis.Nil)
	count(nil)
	count(context.Canceled)
	count(errors.New("dial tcp: connection refused"))
	if got := testutil.ToFloat64(m.redisErrors.WithLabelValues("network")); got != 1 {
		t.Errorf("network errors %v", got)
	}
}

func TestHTTPMiddlewareLabelsByLanceCodeAndKeepsRequestIDs(t *testing.T) {
	m := NewMetrics()
	var logBuf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requestIDOf(r.Context()) == "" {
			t.Error("no request id in the handler's context")
		}
		if strings.HasSuffix(r.URL.Path, "/gone") {
			w.WriteHeader(StatusClientClosedRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "context canceled", "code": 18})
			return
		}
		if strings.HasSuffix(r.URL.Path, "/create") {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "taken", "code": 14})
			return
		}
		_, _ = w.Write([]byte(`{}`))
	})
	h := HTTPMiddleware(inner, func(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }, m, log)
	req := httptest.NewRequest(http.MethodPost, "/v1/table/t/version/create", nil)
	req.Header.Set(RequestIDHeader, "abc-123")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get(RequestIDHeader) != "abc-123" {
		t.Errorf("request id not echoed: %q", rec.Header().Get(RequestIDHeader))
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/table/t/describe", nil))
	if rec.Header().Get(RequestIDHeader) == "" {
		t.Error("no request id made")
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("rest", "create", "ConcurrentModification")); got != 1 {
		t.Errorf("conflict not labelled by its Lance code: %v", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("rest", "describe", "OK")); got != 1 {
		t.Errorf("success not counted: %v", got)
	}
	if !strings.Contains(logBuf.String(), `"request_id":"abc-123"`) {
		t.Errorf("log lacks the request id: %s", logBuf.String())
	}
	logBuf.Reset()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/table/t/gone", nil))
	if got := testutil.ToFloat64(m.requests.WithLabelValues("rest", "gone", "Canceled")); got != 1 {
		t.Errorf("a request its client left not counted as Canceled: %v", got)
	}
	if !strings.Contains(logBuf.String(), `"level":"DEBUG"`) || strings.Contains(logBuf.String(), `"level":"WARN"`) {
		t.Errorf("a request its client left is not a warning: %s", logBuf.String())
	}
}

// A stream (the change feed's Server-Sent Events) is counted, but its
// duration, how long its reader stayed, is no request latency.
func TestHTTPMiddlewareCountsStreamsWithoutTimingThem(t *testing.T) {
	m := NewMetrics()
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/changes") {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("id: 7\n\n"))
			time.Sleep(20 * time.Millisecond) // a reader that stays
			return
		}
		_, _ = w.Write([]byte(`{}`))
	})
	h := HTTPMiddleware(inner, func(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }, m, slog.New(slog.DiscardHandler))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/changes", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/table/t/describe", nil))
	if got := testutil.ToFloat64(m.requests.WithLabelValues("rest", "changes", "OK")); got != 1 {
		t.Errorf("a stream not counted: %v", got)
	}
	if got := testutil.CollectAndCount(m.requestDuration, "flightns_request_duration_seconds"); got != 1 {
		t.Errorf("%d request latencies observed, want the describe's alone", got)
	}
}

func TestFlightCodesAndOps(t *testing.T) {
	st, _ := status.New(codes.Aborted, "taken").WithDetails()
	cases := map[string]error{
		"OK":       nil,
		"Aborted":  st.Err(),
		"Canceled": context.Canceled,
	}
	for want, err := range cases {
		if got := codeName(err); got != want {
			t.Errorf("codeName(%v) = %q, want %q", err, got, want)
		}
	}
	if got := methodName("/arrow.flight.protocol.FlightService/DoGet"); got != "DoGet" {
		t.Errorf("methodName: %q", got)
	}
	if got := commandName([]byte("not a proto")); got != "cmd" {
		t.Errorf("commandName of junk: %q", got)
	}
}

func TestLoggerFormatsAndLevels(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "json", "warn")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), `"msg":"shown"`) {
		t.Errorf("json/warn logger wrote %q", buf.String())
	}
	if _, err := NewLogger(&buf, "xml", "info"); err == nil {
		t.Error("format xml accepted")
	}
	if _, err := NewLogger(&buf, "text", "loud"); err == nil {
		t.Error("level loud accepted")
	}
}

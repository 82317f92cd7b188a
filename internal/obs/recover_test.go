package obs

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/nserror"
)

// lockedBuffer is a log's destination written by many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A handler's panic is a 500 with a Lance error body when nothing was
// written yet, an aborted reply when something was; either way it is
// logged with the stack of the panic and counted under its surface.
// net/http's own http.ErrAbortHandler passes through, neither logged nor
// counted. The server serves on.
func TestRecoverHTTPAnswersAPanicAndServesOn(t *testing.T) {
	m := NewMetrics()
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	mux := http.NewServeMux()
	mux.HandleFunc("/early", func(http.ResponseWriter, *http.Request) { panicEarly() })
	mux.HandleFunc("/late", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("the start of a reply"))
		w.(http.Flusher).Flush()
		panic("a bug after the reply started")
	})
	mux.HandleFunc("/abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	ts := httptest.NewServer(RecoverHTTP(mux, log, "rest", func() { m.PanicRecovered("rest") }))
	defer ts.Close()
	counted := func() float64 { return testutil.ToFloat64(m.panics.WithLabelValues("rest")) }

	resp, err := http.Get(ts.URL + "/early")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if resp.StatusCode != http.StatusInternalServerError || json.Unmarshal(body, &e) != nil || e.Code != int(nserror.Internal) {
		t.Fatalf("a panic before the reply: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(string(body), "planted") {
		t.Errorf("the reply tells the panic: %s", body)
	}
	if counted() != 1 || !strings.Contains(logs.String(), "planted bug") || !strings.Contains(logs.String(), "panicEarly") {
		t.Fatalf("counted %v; log:\n%s", counted(), logs.String())
	}

	resp, err = http.Get(ts.URL + "/late")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
	}
	if err == nil {
		t.Fatal("a reply cut short by a panic read as complete")
	}
	if counted() != 2 {
		t.Fatalf("counted %v after the late panic", counted())
	}

	resp, err = http.Get(ts.URL + "/abort")
	if err == nil {
		_ = resp.Body.Close()
		t.Fatal("http.ErrAbortHandler did not abort the reply")
	}
	if counted() != 2 {
		t.Fatalf("http.ErrAbortHandler was counted as a bug")
	}

	resp, err = http.Get(ts.URL + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the panics: %d", resp.StatusCode)
	}
}

func panicEarly() { panic("a planted bug") }

// The gRPC recovery answers a panic of a unary or a streaming call with
// Internal and the Lance code Internal, and counts it.
func TestRecoveryInterceptorsAnswerInternal(t *testing.T) {
	var n atomic.Int32
	unary, stream := RecoveryInterceptors(quiet, "flight", func() { n.Add(1) })
	_, err := unary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x/Unary"},
		func(context.Context, any) (any, error) { panic("a planted bug") })
	if status.Code(err) != codes.Internal {
		t.Fatalf("unary: %v", err)
	}
	if c, ok := grpcstatus.Code(err); !ok || c != nserror.Internal || strings.Contains(err.Error(), "planted") {
		t.Fatalf("unary: %v carries %v (%v)", err, c, ok)
	}
	err = stream(nil, nil, &grpc.StreamServerInfo{FullMethod: "/x/Stream"}, func(any, grpc.ServerStream) error { panic("a planted bug") })
	if status.Code(err) != codes.Internal || n.Load() != 2 {
		t.Fatalf("stream: %v, %d counted", err, n.Load())
	}
	if err := stream(nil, nil, &grpc.StreamServerInfo{FullMethod: "/x/Stream"}, func(any, grpc.ServerStream) error { return nil }); err != nil || n.Load() != 2 {
		t.Fatalf("a call that does not panic: %v, %d counted", err, n.Load())
	}
}

// Every surface's panic count is reported from the start, at zero.
func TestThePanicCountOfEverySurfaceStartsAtZero(t *testing.T) {
	m := NewMetrics()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, s := range PanicSurfaces {
		if want := `flightns_panics_recovered_total{surface="` + s + `"} 0`; !strings.Contains(rec.Body.String(), want) {
			t.Errorf("no %s in the metrics", want)
		}
	}
}

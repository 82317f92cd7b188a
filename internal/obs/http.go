package obs

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/nserror"
)

// StatusClientClosedRequest is the status of a request whose client went
// away before its answer (nginx's 499): nobody reads it; it is logged and
// counted with the code "Canceled", as gRPC names it.
const StatusClientClosedRequest = 499

// HTTPMiddleware wraps a REST handler: each request gets a request id
// (kept from the caller's X-Request-Id, returned in the reply), is counted
// and timed by operation (opName of its path) and result code (OK, or the
// Lance Namespace code of its {error, code, detail} reply), and is logged
// (debug; warn when the server failed). A stream (a reply of Server-Sent
// Events: the change feed) is counted but not timed: it lasts as long as
// its reader stays, which is no latency.
func HTTPMiddleware(next http.Handler, opName func(escapedPath string) string, m *Metrics, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestID(r.Header.Get(RequestIDHeader))
		w.Header().Set(RequestIDHeader, id)
		rw := &recorder{ResponseWriter: w}
		next.ServeHTTP(rw, r.WithContext(WithRequestID(r.Context(), id)))
		took := time.Since(start)
		op := opName(r.URL.EscapedPath())
		code := rw.code()
		if rw.status == StatusClientClosedRequest {
			code = "Canceled"
		}
		switch {
		case m == nil:
		case rw.status == http.StatusOK && strings.HasPrefix(rw.Header().Get("Content-Type"), "text/event-stream"):
			m.Stream("rest", op, code)
		default:
			m.Request("rest", op, code, took)
		}
		lv := slog.LevelDebug
		if code == nserror.Internal.String() || code == nserror.ServiceUnavailable.String() {
			lv = slog.LevelWarn
		}
		log.Log(r.Context(), lv, "request", "surface", "rest", "op", op, "method", r.Method, "status", rw.status, "code", code,
			"took", took, "request_id", id)
	})
}

// recorder keeps the status and the start of an error body.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer // the first 4 KiB of an error reply
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.status >= 400 && r.body.Len() < 4096 {
		r.body.Write(b[:min(len(b), 4096-r.body.Len())])
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// code is OK for a success, the Lance code's name of an error reply, or
// the HTTP status when the reply carries no code.
func (r *recorder) code() string {
	if r.status == 0 || r.status < 400 {
		return "OK"
	}
	var e struct {
		Code *int `json:"code"`
	}
	if json.Unmarshal(r.body.Bytes(), &e) == nil && e.Code != nil {
		return nserror.Code(*e.Code).String()
	}
	return "HTTP" + strconv.Itoa(r.status)
}

package obs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"google.golang.org/grpc"

	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/nserror"
)

// A panic in a handler is a bug, never an answer: the recovery below turns
// it into the Lance code Internal (gRPC Internal, HTTP 500), logs it with
// the stack of the goroutine that panicked, and counts it
// (Metrics.PanicRecovered, through the hook a surface is given), so one
// request cannot take the process — and its Redis child and SQL worker —
// down with it. Each surface installs it outermost, so it covers every
// interceptor and middleware inside it, authentication included. A
// goroutine a handler starts is not covered by the handler's recovery:
// such a goroutine defers its own recover and hands the value to
// Recovered.

// errRecovered is what a call that panicked answers. It names nothing of
// the panic (the log has it).
var errRecovered = nserror.New(nserror.Internal, "internal error: the server hit a bug handling this request and recovered; its log has the details")

// Recovered logs a panic v that a call recovered from (where names the
// call: a gRPC method, a path, a goroutine's job), with the current
// goroutine's stack, which still holds the panic's frames when Recovered
// runs in the deferred function that recovered it; it calls count (nil:
// none) and returns the error the call answers: Internal.
func Recovered(log *slog.Logger, count func(), surface, where string, v any) error {
	if log != nil {
		log.Error("recovered from a panic: this is a bug", "surface", surface, "where", where,
			"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	}
	if count != nil {
		count()
	}
	return errRecovered
}

// RecoveryInterceptors return the gRPC interceptors that turn a panic of
// the handlers (and of the interceptors after them in the chain) into a
// gRPC Internal status carrying the Lance code Internal; surface names
// the server in the log, count is called once per panic (nil: none).
func RecoveryInterceptors(log *slog.Logger, surface string, count func()) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if v := recover(); v != nil {
				resp, err = nil, grpcstatus.FromError(Recovered(log, count, surface, info.FullMethod, v))
			}
		}()
		return h(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = grpcstatus.FromError(Recovered(log, count, surface, info.FullMethod, v))
			}
		}()
		return h(srv, ss)
	}
	return unary, stream
}

// RecoverHTTP wraps an HTTP handler so that a panic becomes a 500 with a
// Lance error body ({error, code: 18}) when nothing of the reply was
// written yet, or else aborts the reply (a cut-off reply must not look
// complete); either way it is logged and counted as RecoveryInterceptors
// do. net/http's own sentinel, http.ErrAbortHandler, passes through
// untouched: it is how a handler aborts a reply on purpose.
func RecoverHTTP(next http.Handler, log *slog.Logger, surface string, count func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &startedWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			err := Recovered(log, count, surface, r.Method+" "+r.URL.Path, v)
			if rw.started {
				panic(http.ErrAbortHandler)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(struct {
				Error string `json:"error"`
				Code  int    `json:"code"`
			}{err.Error(), int(nserror.Internal)})
		}()
		next.ServeHTTP(rw, r)
	})
}

// startedWriter notes whether a reply has started (its header written).
type startedWriter struct {
	http.ResponseWriter
	started bool
}

func (s *startedWriter) WriteHeader(code int) {
	if code >= 200 { // 1xx replies are interim: the real one is still to come
		s.started = true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *startedWriter) Write(b []byte) (int, error) {
	s.started = true
	return s.ResponseWriter.Write(b)
}

// Flush passes on a flush (and starts the reply, as net/http does).
func (s *startedWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		s.started = true
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *startedWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

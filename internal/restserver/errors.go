package restserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/nserror"
)

// StatusOf maps a Lance Namespace error code to its HTTP status: the one
// table of the HTTP surfaces (REST and the web console), as the
// specification's catalog and Lance's own REST server have it. Unknown
// codes are 500.
func StatusOf(c nserror.Code) int {
	switch c {
	case nserror.NamespaceNotFound, nserror.TableNotFound, nserror.TableIndexNotFound, nserror.TableTagNotFound,
		nserror.TransactionNotFound, nserror.TableVersionNotFound, nserror.TableColumnNotFound, nserror.TableBranchNotFound:
		return http.StatusNotFound
	case nserror.NamespaceAlreadyExists, nserror.NamespaceNotEmpty, nserror.TableAlreadyExists, nserror.TableIndexAlreadyExists,
		nserror.TableTagAlreadyExists, nserror.ConcurrentModification, nserror.InvalidTableState, nserror.TableBranchAlreadyExists:
		return http.StatusConflict
	case nserror.InvalidInput, nserror.TableSchemaValidationError:
		return http.StatusBadRequest
	case nserror.Unsupported:
		return http.StatusNotAcceptable
	case nserror.PermissionDenied:
		return http.StatusForbidden
	case nserror.Unauthenticated:
		return http.StatusUnauthorized
	case nserror.ServiceUnavailable:
		return http.StatusServiceUnavailable
	case nserror.Throttling:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// errorBody is the protocol's ErrorResponse. The Lance client decides what
// an error is by Code alone; Error becomes its message.
type errorBody struct {
	Error    string `json:"error"`
	Code     int    `json:"code"`
	Detail   string `json:"detail"`
	Instance string `json:"instance,omitempty"`
}

// httpError is an error whose HTTP status is decided by HTTP itself, not
// by its code: no such route (404), method not allowed (405), body too
// large (413).
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

func withStatus(status int, code nserror.Code, format string, args ...any) error {
	return &httpError{status: status, err: nserror.New(code, format, args...)}
}

// writeError answers err as {error, code, detail, instance}, with the
// status of its code (or of HTTP, for an *httpError).
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := nserror.CodeOf(err)
	status := StatusOf(code)
	var he *httpError
	if errors.As(err, &he) {
		status = he.status
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client went away: not a failure of the server.
		status = obs.StatusClientClosedRequest
	}
	body := errorBody{Error: err.Error(), Code: int(code), Instance: r.URL.EscapedPath(),
		Detail: fmt.Sprintf("%s (code %d) answering %s %s", code, int(code), r.Method, r.URL.EscapedPath())}
	switch {
	case status == obs.StatusClientClosedRequest:
		h.log.Debug("restserver: the client went away", "method", r.Method, "path", r.URL.EscapedPath(), "err", err)
	case status >= 500:
		h.log.Error("restserver: request failed", "method", r.Method, "path", r.URL.EscapedPath(), "code", int(code), "err", err)
	default:
		h.log.Debug("restserver: request refused", "method", r.Method, "path", r.URL.EscapedPath(), "code", int(code), "err", err)
	}
	if code == nserror.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="flightns"`)
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, body)
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: "encoding the reply: " + err.Error(), Code: int(nserror.Internal), Detail: "Internal (code 18)"})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

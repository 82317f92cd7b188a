package restserver

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/audit"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/idempotency"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/planner"
)

// DefaultMaxBodyBytes bounds a request body unless Options say otherwise.
const DefaultMaxBodyBytes = 8 << 20

// Options configure the adapter.
type Options struct {
	// Auth authenticates callers (Authorization: Bearer or Basic, or
	// x-api-key with a token). Nil, or one with nothing configured, lets
	// every caller in.
	Auth *auth.Authenticator
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes);
	// a larger one is refused with 413 and InvalidInput.
	MaxBodyBytes int64
	// Logger receives refused requests (debug) and failures (error);
	// default slog.Default().
	Logger *slog.Logger
	// Planner plans partitioned tables (default planner.New(svc)); give
	// the Flight adapter the same one, so both share its cache.
	Planner *planner.Planner
	// Audit records every mutation and every refused request (nil: none).
	Audit *audit.Log
	// Idempotency answers retried mutations that carry an
	// Idempotency-Key (nil: the header is ignored).
	Idempotency *idempotency.Store
	// Panicked is called once for each panic a request recovered from
	// (the panics metric; nil: none). The panic is logged with its stack
	// and answered as Internal either way.
	Panicked func()
	// Closing is closed when the server begins to stop: the change feed's
	// streams end then (their clients resume after the restart, or on
	// another replica), so that they do not hold the drain to its timeout
	// (nil: they end with their requests' contexts).
	Closing <-chan struct{}
	// StalledFeedTimeout is how long the change feed waits for a client
	// to take what it writes before it cuts the client off (default
	// 10 s; the client resumes with the last id it has).
	StalledFeedTimeout time.Duration
}

// EnsureDefaults fills what is unset (the default Planner is New's: it
// plans for the service New is given).
func (o *Options) EnsureDefaults() {
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StalledFeedTimeout == 0 {
		o.StalledFeedTimeout = 10 * time.Second
	}
}

// Validate refuses options New cannot serve with, naming the field: a
// negative MaxBodyBytes or StalledFeedTimeout (0 is unset: EnsureDefaults
// fills it).
func (o *Options) Validate() error {
	if o.MaxBodyBytes < 0 {
		return fmt.Errorf("restserver: Options.MaxBodyBytes %d is negative (0: DefaultMaxBodyBytes)", o.MaxBodyBytes)
	}
	if o.StalledFeedTimeout < 0 {
		return fmt.Errorf("restserver: Options.StalledFeedTimeout %v is negative (0: 10 s)", o.StalledFeedTimeout)
	}
	return nil
}

// New returns the REST handler of svc: the /v1/... routes of the Lance
// Namespace protocol. Serve it with an http.Server that sets its own
// timeouts. A nil svc, or options Validate refuses, are a bug of the
// caller: New panics.
func New(svc *namespace.Service, opts Options) http.Handler {
	if svc == nil {
		panic("restserver: New needs a *namespace.Service")
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		panic("restserver: " + err.Error())
	}
	if opts.Planner == nil {
		opts.Planner = planner.New(svc)
	}
	return &handler{svc: svc, plan: opts.Planner, auth: opts.Auth, max: opts.MaxBodyBytes, log: opts.Logger, audit: opts.Audit, idem: opts.Idempotency,
		panicked: opts.Panicked, closing: opts.Closing, stalled: opts.StalledFeedTimeout}
}

type handler struct {
	svc   *namespace.Service
	plan  *planner.Planner
	auth  *auth.Authenticator
	max   int64
	log   *slog.Logger
	audit *audit.Log
	idem  *idempotency.Store
	// panicked counts a recovered panic (Options.Panicked).
	panicked func()
	closing  <-chan struct{}
	stalled  time.Duration // Options.StalledFeedTimeout
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v) // net/http's own way to abort a reply
			}
			h.writeError(w, r, obs.Recovered(h.log, h.panicked, "rest", r.Method+" "+r.URL.Path, v))
		}
	}()
	if r.URL.Path == ChangesPath {
		if err := h.changes(w, r); err != nil {
			h.writeError(w, r, err)
		}
		return
	}
	rt, rawID, err := match(r.URL.EscapedPath())
	if err == nil {
		err = h.serve(w, r, rt, rawID)
	}
	if err != nil {
		h.writeError(w, r, err)
	}
}

// match finds the route of an escaped path and the raw {id} segment in it
// (nil on routes without one).
func match(p string) (route, *string, error) {
	rest, ok := strings.CutPrefix(p, "/v1/")
	if !ok {
		return route{}, nil, withStatus(http.StatusNotFound, nserror.Unsupported, "no route %s: the Lance Namespace routes are under /v1/", p)
	}
	if len(rest) > 1 {
		rest = strings.TrimSuffix(rest, "/")
	}
	segs := strings.Split(rest, "/")
	if rt, ok := plainRoutes[rest]; ok {
		return rt, nil, nil
	}
	switch {
	case len(segs) >= 3 && segs[0] == "namespace":
		op := strings.Join(segs[2:], "/")
		if rt, ok := namespaceRoutes[op]; ok {
			return rt, &segs[1], nil
		}
		return route{}, nil, unsupported("namespace", op)
	case len(segs) >= 3 && segs[0] == "table":
		op := strings.Join(segs[2:], "/")
		if rt, ok := tableRoutes[op]; ok {
			return rt, &segs[1], nil
		}
		return route{}, nil, unsupported("table", op)
	case len(segs) >= 3 && (segs[0] == "transaction" || segs[0] == "materialized_view"):
		return route{}, nil, unsupported(segs[0], strings.Join(segs[2:], "/"))
	}
	return route{}, nil, withStatus(http.StatusNotFound, nserror.Unsupported, "no route %s", p)
}

func unsupported(kind, op string) error {
	return nserror.New(nserror.Unsupported,
		"%s operation %q is not supported by flightns: it serves namespaces, tables, table versions, tags, branches and restore; data operations (insert, query, indices, …) run in the Lance engine against the table's location", kind, op)
}

// serve refuses a browser's cross-site request, checks the method,
// authenticates, checks that a mutation's body is JSON, reads the
// bounded body, parses the path id, and calls the route, which
// authorizes; a mutation or a refusal is audited.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, rt route, rawID *string) (err error) {
	ctx, target := audit.WithTarget(r.Context())
	var who auth.Principal
	defer func() {
		t := target()
		if t == "" && rawID != nil {
			t = *rawID
		}
		h.audit.Request(ctx, who.Name, "rest", rt.name, t, rt.write, err)
	}()
	if err := CrossSite(r); err != nil {
		return err
	}
	allowed := r.Method == http.MethodPost || (!rt.write && r.Method == http.MethodGet)
	if !allowed {
		allow := "POST"
		if !rt.write {
			allow = "GET, POST"
		}
		w.Header().Set("Allow", allow)
		return withStatus(http.StatusMethodNotAllowed, nserror.InvalidInput, "%s takes %s, not %s", rt.name, allow, r.Method)
	}
	// The operation checks the caller's role and grants on what it names.
	if who, err = h.authenticate(r); err != nil {
		return err
	}
	if rt.write {
		if err := jsonContentType(r); err != nil {
			return err
		}
	}
	q := r.URL.Query()
	rest := &namespace.REST{Query: query(q)}
	if rawID != nil {
		delim, err := delimiterOf(q)
		if err != nil {
			return err
		}
		if rest.ID, err = parseID(*rawID, delim); err != nil {
			return err
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.max))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return withStatus(http.StatusRequestEntityTooLarge, nserror.InvalidInput, "the request body is larger than %d bytes", h.max)
		}
		return nserror.New(nserror.InvalidInput, "reading the request body: %v", err)
	}
	if rt.write {
		if err := jsonBody(body); err != nil {
			return err
		}
	}
	ctx = auth.WithPrincipal(ctx, who)
	if rt.write && h.idem != nil && len(r.Header.Values(idempotency.Header)) > 0 {
		return h.once(ctx, w, r, who, rt, body, rest)
	}
	reply, err := rt.run(ctx, h, body, rest)
	if err != nil {
		return err
	}
	if pl, ok := reply.(*planner.Plan); ok && !wantsJSON(r) {
		return writePlan(w, pl)
	}
	if _, empty := reply.(api.Empty); empty || reply == nil {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// once runs a mutation that carries an Idempotency-Key at most once per
// key (package idempotency): a retry gets the first answer again, with
// Idempotent-Replayed: true, once the route has authorized its caller
// again (a caller refused now is refused as a first request is). The
// request is the route, the path's id, the query and the body.
func (h *handler) once(ctx context.Context, w http.ResponseWriter, r *http.Request, who auth.Principal, rt route, body []byte, rest *namespace.REST) error {
	keys := r.Header.Values(idempotency.Header)
	if len(keys) != 1 {
		return nserror.New(nserror.InvalidInput, "one %s header, not %d", idempotency.Header, len(keys))
	}
	request := append([]byte(r.URL.EscapedPath()+"?"+r.URL.RawQuery+"\n"), body...)
	authorize := func() error { return rt.authorize(ctx, h, body, rest) }
	rep, replayed, err := h.idem.Do(ctx, who.Name, rt.name, keys[0], request, authorize, func() idempotency.Reply {
		reply, err := rt.run(ctx, h, body, rest)
		if err != nil {
			return idempotency.ReplyOf(nil, err)
		}
		var out []byte
		if _, empty := reply.(api.Empty); !empty && reply != nil {
			if out, err = json.Marshal(reply); err != nil {
				return idempotency.ReplyOf(nil, err)
			}
		}
		return idempotency.ReplyOf(out, nil)
	})
	var conflict *idempotency.Conflict
	if errors.As(err, &conflict) {
		if conflict.InProgress {
			w.Header().Set("Retry-After", "1")
		}
		return &httpError{status: http.StatusConflict, err: conflict}
	}
	if err != nil {
		return err
	}
	if replayed {
		if err := h.svc.AuthorizeReplay(ctx, rt.name, rep.Body); err != nil {
			return err
		}
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if err := rep.Err(); err != nil {
		return err
	}
	if len(rep.Body) == 0 {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(rep.Body)
	return nil
}

// certified reports whether a client certificate names a principal.
func certified(a *auth.Authenticator, chains [][]*x509.Certificate) bool {
	_, ok := a.Certificate(chains)
	return ok
}

// authenticate names the caller by its Authorization header (Bearer or
// Basic) or, without one, its x-api-key header (a token), or else its
// client certificate (mutual TLS). With authentication off everyone is
// auth.Anonymous, who may do everything.
func (h *handler) authenticate(r *http.Request) (auth.Principal, error) {
	if !h.auth.Enabled() {
		return auth.Anonymous, nil
	}
	var (
		p   auth.Principal
		err error
	)
	switch {
	case r.Header.Get("Authorization") != "":
		p, err = h.auth.Header(r.Header.Get("Authorization"))
	case r.Header.Get("X-Api-Key") != "":
		p, err = h.auth.Bearer(strings.TrimSpace(r.Header.Get("X-Api-Key")))
	case r.TLS != nil && certified(h.auth, r.TLS.VerifiedChains):
		p, _ = h.auth.Certificate(r.TLS.VerifiedChains)
	default:
		err = nserror.New(nserror.Unauthenticated, "credentials required: Authorization: Bearer <token> (or Basic) or x-api-key: <token>")
	}
	return p, err
}

package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/planner"
)

//go:embed web
var web embed.FS

// Querier runs SQL for the caller of ctx through the SQL gate: the Flight
// SQL server's Query.
type Querier interface {
	Query(ctx context.Context, query string, args ...any) (*arrow.Schema, <-chan flight.StreamChunk, error)
}

// Config is what the console reads through.
type Config struct {
	Service *namespace.Service
	// Planner plans partitioned tables (default planner.New(Service)).
	Planner *planner.Planner
	// Auth authenticates; nil or with nothing configured, the console is
	// open (everyone is auth.Anonymous), as REST and Flight are.
	Auth *auth.Authenticator
	// SQL runs queries; nil: the SQL pages answer ServiceUnavailable.
	SQL Querier
	// REST is the Lance Namespace REST surface, served under /api/v1/.
	REST http.Handler
	// History is the metrics history of the activity page.
	History *obs.History
	// Health reports the server's health.
	Health func(context.Context) HealthReport
	// Secure marks the cookie Secure (the console is served over TLS).
	Secure bool
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int64
	Logger       *slog.Logger
}

// HealthReport is the health page's content.
type HealthReport struct {
	Ready   bool     `json:"ready"`
	Reasons []string `json:"reasons"`
	Redis   Check    `json:"redis"`
	Storage Check    `json:"storage"`
	SQL     Check    `json:"sql"`
}

// Check is one dependency's state.
type Check struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// CheckOf is the Check of err.
func CheckOf(err error) Check {
	if err != nil {
		return Check{Error: err.Error()}
	}
	return Check{OK: true}
}

// Header is the header every API call carries; a cross-site request
// cannot send it without a CORS preflight, which is never answered.
const Header = "X-Flightns-Console"

// CookieName is the cookie that holds the logged-in credential: a token
// given at login as it is, or issuedPrefix and the session token a login
// with a password started, which logging out ends.
const CookieName = "flightns_console"

// issuedPrefix marks a cookie's session token as the console's own.
const issuedPrefix = "console."

// credential is the request cookie's credential ("" without one), and
// whether it is a session the console started.
func credential(r *http.Request) (token string, issued bool) {
	ck, err := r.Cookie(CookieName)
	if err != nil {
		return "", false
	}
	if t, ok := strings.CutPrefix(ck.Value, issuedPrefix); ok {
		return t, true
	}
	return ck.Value, false
}

// ContentSecurityPolicy is sent with every answer.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

type console struct {
	cfg       Config
	log       *slog.Logger
	ops       map[string]namespace.Op
	verifying chan struct{} // one table verification at a time
}

// Validate refuses a configuration New cannot serve with.
func (c *Config) Validate() error {
	if c.Service == nil {
		return errors.New("console: Config.Service is required")
	}
	return nil
}

// EnsureDefaults fills what is unset (call Validate first: the default
// Planner plans for Service).
func (c *Config) EnsureDefaults() {
	if c.Planner == nil {
		c.Planner = planner.New(c.Service)
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// New returns the console's handler.
func New(cfg Config) (http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.EnsureDefaults()
	c := &console{cfg: cfg, log: cfg.Logger, ops: map[string]namespace.Op{}, verifying: make(chan struct{}, 1)}
	for _, op := range namespace.Ops {
		c.ops[op.Name] = op
	}
	files, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded directory is part of the build
	}
	api := http.NewServeMux()
	api.HandleFunc("POST /api/login", c.login)
	api.HandleFunc("POST /api/logout", c.logout)
	api.HandleFunc("GET /api/session", c.authed(c.session))
	api.HandleFunc("GET /api/namespaces", c.authed(c.namespaces))
	api.HandleFunc("GET /api/namespace", c.authed(c.namespace))
	api.HandleFunc("GET /api/table", c.authed(c.table))
	api.HandleFunc("GET /api/table/versions", c.authed(c.versions))
	api.HandleFunc("GET /api/table/verify", c.authed(c.verify))
	api.HandleFunc("GET /api/table/maintenance", c.authed(c.tableMaintenance))
	api.HandleFunc("GET /api/maintenance", c.authed(c.compactionDue))
	api.HandleFunc("GET /api/metrics", c.authed(c.catalogWide(c.metrics)))
	api.HandleFunc("GET /api/health", c.authed(c.catalogWide(c.health)))
	api.HandleFunc("POST /api/sql", c.authed(c.sql))
	api.HandleFunc("POST /api/sql/download", c.authed(c.download))
	api.HandleFunc("POST /api/plan", c.authed(c.plan))
	api.HandleFunc("/api/v1/", c.authed(c.rest))
	api.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, c.log, &httpError{http.StatusNotFound, nserror.New(nserror.InvalidInput, "no console call %s %s", r.Method, r.URL.Path)})
	})
	mux := http.NewServeMux()
	mux.Handle("/api/", c.crossSite(api))
	mux.Handle("/", pages(files))
	return secureHeaders(mux), nil
}

// pages serves the embedded files: / is index.html; a directory is no
// page (no listings).
func pages(files fs.FS) http.Handler {
	static := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" {
			name = "index.html"
		}
		if st, err := fs.Stat(files, name); err != nil || st.IsDir() {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		if name == "index.html" {
			http.ServeFileFS(w, r, files, name)
			return
		}
		static.ServeHTTP(w, r)
	})
}

// secureHeaders sets the headers of every answer: the CSP, no sniffing,
// no framing, no referrer.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// crossSite refuses an API call that is not the console's own: without
// the console's header, or that the browser says comes from another site
// or origin (restserver.CrossSite, the one check of the HTTP surfaces).
func (c *console) crossSite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(Header) != "1" {
			writeError(w, c.log, nserror.New(nserror.PermissionDenied, "cross-site request refused: the %s header is missing", Header))
			return
		}
		if err := restserver.CrossSite(r); err != nil {
			writeError(w, c.log, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authed runs h for the caller its cookie names (auth.WithPrincipal).
func (c *console) authed(h func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := c.principal(r)
		if err != nil {
			writeError(w, c.log, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, c.cfg.MaxBodyBytes)
		h(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}
}

// catalogWide runs h only for a caller who may read the whole catalog:
// a catalog-wide role of read or more, or a grant of read on the root
// namespace (namespace.Access.Readable). The activity and health pages
// are about every tenant (commits, conflicts and operations of the
// whole catalog, the state of its Redis and storage); a caller whose
// grants reach only some namespaces is refused, as it would be reading
// the root namespace.
func (c *console) catalogWide(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		all, _, err := c.cfg.Service.Access().Readable(r.Context())
		if err == nil && !all {
			p, _ := auth.PrincipalFrom(r.Context())
			err = nserror.New(nserror.PermissionDenied,
				"this page shows the whole catalog: it needs the read role on the catalog (catalog-wide, or granted on the root namespace); %q has %s", p.Name, p.Role)
		}
		if err != nil {
			writeError(w, c.log, err)
			return
		}
		h(w, r)
	}
}

// principal authenticates the request's cookie as REST does a bearer.
func (c *console) principal(r *http.Request) (auth.Principal, error) {
	if !c.cfg.Auth.Enabled() {
		return auth.Anonymous, nil
	}
	token, _ := credential(r)
	if token == "" {
		return auth.Principal{}, nserror.New(nserror.Unauthenticated, "log in first")
	}
	return c.cfg.Auth.Bearer(token)
}

// who is the session page's answer.
type who struct {
	Principal string `json:"principal"`
	Role      string `json:"role"`
	Auth      bool   `json:"auth"`
}

func (c *console) whoOf(p auth.Principal) who {
	return who{Principal: p.Name, Role: p.Role.String(), Auth: c.cfg.Auth.Enabled()}
}

func (c *console) session(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.PrincipalFrom(r.Context())
	writeJSON(w, http.StatusOK, c.whoOf(p))
}

// login checks a user and password (answered with a session token) or a
// token, and keeps the credential in the cookie.
func (c *console) login(w http.ResponseWriter, r *http.Request) {
	var req struct {
		User     string `json:"user"`
		Password string `json:"password"`
		Token    string `json:"token"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, c.cfg.MaxBodyBytes)
	if err := decode(r.Body, &req); err != nil {
		writeError(w, c.log, err)
		return
	}
	if !c.cfg.Auth.Enabled() {
		writeJSON(w, http.StatusOK, c.whoOf(auth.Anonymous))
		return
	}
	var (
		p      auth.Principal
		cookie string
		maxAge int
		err    error
	)
	switch {
	case req.Token != "" && req.User == "" && req.Password == "":
		p, err = c.cfg.Auth.Bearer(req.Token)
		cookie = req.Token
	case req.User != "" && req.Token == "":
		if p, err = c.cfg.Auth.Basic(req.User, req.Password); err == nil {
			cookie = issuedPrefix + c.cfg.Auth.IssueToken(p)
			maxAge = int(c.cfg.Auth.SessionTTL().Seconds())
		}
	default:
		err = nserror.New(nserror.InvalidInput, `log in with {"user", "password"} or with {"token"}`)
	}
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: cookie, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, c.whoOf(p))
}

// logout clears the cookie and ends the session the console's login
// started, everywhere: a copy of the cookie is refused from then on. A
// token given at login is not the console's to end (it may serve other
// clients): revoke it with `flightns admin revoke-sessions`, or remove it.
func (c *console) logout(w http.ResponseWriter, r *http.Request) {
	if token, issued := credential(r); issued {
		if err := c.cfg.Auth.EndSession(r.Context(), token); err != nil {
			writeError(w, c.log, nserror.New(nserror.ServiceUnavailable, "the session could not be ended; log out again: %v", err))
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// rest passes /api/v1/… to the REST surface as /v1/…, with the cookie's
// credential as its bearer: REST authenticates and authorizes it again,
// as any REST call.
func (c *console) rest(w http.ResponseWriter, r *http.Request) {
	if c.cfg.REST == nil {
		writeError(w, c.log, nserror.New(nserror.ServiceUnavailable, "the REST surface is off (--rest-addr)"))
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = strings.TrimPrefix(r.URL.Path, "/api")
	r2.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, "/api")
	r2.RequestURI = ""
	r2.Header.Del("Authorization")
	r2.Header.Del("X-Api-Key")
	r2.Header.Del("Cookie")
	if token, _ := credential(r); token != "" && c.cfg.Auth.Enabled() {
		r2.Header.Set("Authorization", "Bearer "+token)
	}
	c.cfg.REST.ServeHTTP(w, r2)
}

// catalogSeq is the catalog sequence a live page's state is at: the
// newest change in the commit log when the call began (when Redis does
// not answer, the newest this process has made durable, which is older).
// The page reads its state after it and follows the change feed after
// it (docs/console.md, "Live pages"), so it misses no change; a change
// the state has already may come again, and the page showing it again
// changes nothing.
func (c *console) catalogSeq(ctx context.Context) uint64 {
	t := c.cfg.Service.Table()
	seq := t.DurableApplied()
	if head, err := t.Head(ctx); err == nil {
		seq = max(seq, head)
	}
	return seq
}

// call runs the namespace operation name with req for the caller of ctx,
// through the registry, which checks the caller's access as for every
// surface.
func call[Resp any](ctx context.Context, c *console, name string, req any) (Resp, error) {
	var zero Resp
	op, ok := c.ops[name]
	if !ok {
		return zero, fmt.Errorf("console: no operation %s", name)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return zero, err
	}
	out, err := op.Run(ctx, c.cfg.Service, body, nil)
	if err != nil {
		return zero, err
	}
	resp, ok := out.(Resp)
	if !ok {
		return zero, fmt.Errorf("console: %s answered %T", name, out)
	}
	return resp, nil
}

// decode reads a JSON body strictly: one object, no unknown fields.
func decode(r io.Reader, v any) error {
	d := json.NewDecoder(r)
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &httpError{http.StatusRequestEntityTooLarge, nserror.New(nserror.InvalidInput, "the body is larger than %d bytes", tooBig.Limit)}
		}
		return nserror.New(nserror.InvalidInput, "the body is not the call's JSON: %v", err)
	}
	if d.More() {
		return nserror.New(nserror.InvalidInput, "the body holds more than one JSON value")
	}
	return nil
}

// httpError is an error whose status HTTP decides.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

// apiError is the body of a failed call.
type apiError struct {
	Code    int    `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// codeOf is err's Lance Namespace code, also for the gRPC statuses of
// the SQL gate.
func codeOf(err error) nserror.Code {
	if c, ok := grpcstatus.Code(err); ok {
		return c
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		switch s.Code() {
		case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
			return nserror.InvalidInput
		case codes.PermissionDenied:
			return nserror.PermissionDenied
		case codes.Unauthenticated:
			return nserror.Unauthenticated
		case codes.ResourceExhausted, codes.DeadlineExceeded, codes.Canceled:
			return nserror.Throttling
		case codes.Unavailable:
			return nserror.ServiceUnavailable
		case codes.Unimplemented:
			return nserror.Unsupported
		}
	}
	return nserror.CodeOf(err)
}

// messageOf is err's text without the gRPC wrapping.
func messageOf(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	code := codeOf(err)
	st := restserver.StatusOf(code)
	var he *httpError
	if errors.As(err, &he) {
		st = he.status
	}
	if st >= 500 {
		log.Warn("console: call failed", "code", code.String(), "err", err)
	}
	if code == nserror.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Cookie realm="flightns console"`)
	}
	writeJSON(w, st, map[string]apiError{"error": {Code: int(code), Type: code.String(), Message: messageOf(err)}})
}

func writeJSON(w http.ResponseWriter, st int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		st, b = http.StatusInternalServerError, []byte(`{"error":{"code":18,"type":"Internal","message":"the answer cannot be written as JSON"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(st)
	_, _ = w.Write(b)
}

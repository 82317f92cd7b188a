package restserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/flightns/flightns/auth"
	"github.com/flightns/flightns/namespace"
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
}

// New returns the REST handler of svc: the /v1/... routes of the Lance
// Namespace protocol. Serve it with an http.Server that sets its own
// timeouts.
func New(svc *namespace.Service, opts Options) http.Handler {
	if svc == nil {
		panic("restserver: New needs a *namespace.Service")
	}
	h := &handler{svc: svc, plan: opts.Planner, auth: opts.Auth, max: opts.MaxBodyBytes, log: opts.Logger}
	if h.plan == nil {
		h.plan = planner.New(svc)
	}
	if h.max <= 0 {
		h.max = DefaultMaxBodyBytes
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	return h
}

type handler struct {
	svc  *namespace.Service
	plan *planner.Planner
	auth *auth.Authenticator
	max  int64
	log  *slog.Logger
}

// A route is one operation: its name (in errors and logs), whether it
// changes anything (then it needs the write role and POST; reads take GET
// or POST, as clients disagree), and the function that decodes, calls the
// service and returns the reply body. A nil reply body is an empty 200.
type route struct {
	name  string
	write bool
	fn    func(ctx context.Context, s *namespace.Service, c *call) (any, error)
	// op, when set, is a planner operation (partitioned tables) in fn's
	// place.
	op *planner.Op
}

// routeFuncs serve the operations of namespace.Ops, by name.
var routeFuncs = map[string]func(ctx context.Context, s *namespace.Service, c *call) (any, error){
	"CreateNamespace":          createNamespace,
	"ListNamespaces":           listNamespaces,
	"DescribeNamespace":        describeNamespace,
	"DropNamespace":            dropNamespace,
	"NamespaceExists":          namespaceExists,
	"ListTables":               listTables,
	"ListAllTables":            listAllTables,
	"RegisterTable":            registerTable,
	"DescribeTable":            describeTable,
	"TableExists":              tableExists,
	"DropTable":                dropTable,
	"DeregisterTable":          deregisterTable,
	"DeclareTable":             declareTable,
	"CreateEmptyTable":         declareTable,
	"RenameTable":              renameTable,
	"ListTableVersions":        listTableVersions,
	"CreateTableVersion":       createTableVersion,
	"DescribeTableVersion":     describeTableVersion,
	"BatchDeleteTableVersions": batchDeleteTableVersions,
	"ListTableTags":            listTableTags,
	"GetTableTagVersion":       getTableTagVersion,
	"CreateTableTag":           createTableTag,
	"UpdateTableTag":           updateTableTag,
	"DeleteTableTag":           deleteTableTag,
	"ListTableBranches":        listTableBranches,
	"GetTableStats":            getTableStats,
	"BatchCreateTableVersions": batchCreateTableVersions,
	"BatchCommitTables":        batchCommitTables,
}

// The routes, built from namespace.Ops: below /v1/namespace/{id}/ and
// /v1/table/{id}/ by the rest of the path, and the routes without an id
// by their whole path after /v1/. Anything else under those prefixes is
// an operation flightns does not serve (data-plane operations run in the
// Lance engine): 406 with code 0. An operation without its function, or
// a function without its operation, stops the program at start (and its
// test).
var namespaceRoutes, tableRoutes, plainRoutes = func() (ns, tb, plain map[string]route) {
	ns, tb, plain = map[string]route{}, map[string]route{}, map[string]route{}
	for _, o := range namespace.Ops {
		fn, ok := routeFuncs[o.Name]
		if !ok {
			panic("restserver: no route function for " + o.Name)
		}
		rt := route{name: o.Name, write: o.Write, fn: fn}
		if rest, ok := strings.CutPrefix(o.Path, "namespace/{id}/"); ok {
			ns[rest] = rt
		} else if rest, ok := strings.CutPrefix(o.Path, "table/{id}/"); ok {
			tb[rest] = rt
		} else {
			plain[o.Path] = rt
		}
	}
	if len(namespace.Ops) != len(routeFuncs) {
		panic("restserver: a route function has no operation in namespace.Ops")
	}
	return ns, tb, plain
}()

// call is one request on its way to the service.
type call struct {
	q    url.Values
	id   namespace.ID // the path's id; nil on routes without one
	body []byte
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v) // net/http's own way to abort a reply
			}
			h.writeError(w, r, nserror.New(nserror.Internal, "internal error: %v", v))
		}
	}()
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
		if pop, ok := planner.OpByPath(op); ok {
			return route{name: pop.Name, write: pop.Write, op: &pop}, &segs[1], nil
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
		"%s operation %q is not supported by flightns: it serves namespaces, tables, table versions and tags; data operations (insert, query, indices, branches, …) run in the Lance engine against the table's location", kind, op)
}

// serve checks the method, authenticates and authorizes, reads the
// bounded body, parses the path id, and calls the route.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, rt route, rawID *string) error {
	allowed := r.Method == http.MethodPost || (!rt.write && r.Method == http.MethodGet)
	if !allowed {
		allow := "POST"
		if !rt.write {
			allow = "GET, POST"
		}
		w.Header().Set("Allow", allow)
		return withStatus(http.StatusMethodNotAllowed, nserror.InvalidInput, "%s takes %s, not %s", rt.name, allow, r.Method)
	}
	need := auth.Read
	if rt.write {
		need = auth.Write
	}
	if err := h.authorize(r, need, rt.name); err != nil {
		return err
	}
	q := r.URL.Query()
	c := &call{q: q}
	if rawID != nil {
		delim, err := delimiterOf(q)
		if err != nil {
			return err
		}
		if c.id, err = parseID(*rawID, delim); err != nil {
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
	c.body = body
	var reply any
	if rt.op != nil {
		reply, err = rt.op.Run(r.Context(), h.plan, body, c.id)
	} else {
		reply, err = rt.fn(r.Context(), h.svc, c)
	}
	if err != nil {
		return err
	}
	if pl, ok := reply.(*planner.Plan); ok && !wantsJSON(r) {
		return writePlan(w, pl)
	}
	if reply == nil {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// authorize authenticates the caller by its Authorization header (Bearer
// or Basic) or, without one, its x-api-key header (a token), and checks
// its role. With authentication off everyone may do everything.
func (h *handler) authorize(r *http.Request, need auth.Role, what string) error {
	if !h.auth.Enabled() {
		return nil
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
	default:
		err = nserror.New(nserror.Unauthenticated, "credentials required: Authorization: Bearer <token> (or Basic) or x-api-key: <token>")
	}
	if err != nil {
		return err
	}
	return auth.Allow(p, need, what)
}

// decode reads the JSON body into v (namespace.DecodeRequest).
func (c *call) decode(v any) error { return namespace.DecodeRequest(c.body, v) }

// bindID makes the path's id the request's: a body id that disagrees with
// it is InvalidInput; a missing (or null) one takes it.
func (c *call) bindID(body *namespace.ID) error {
	if *body != nil && !body.Equal(c.id) {
		return nserror.New(nserror.InvalidInput, "the id in the body %q disagrees with the id in the path %q", []string(*body), []string(c.id))
	}
	*body = append(namespace.ID{}, c.id...)
	return nil
}

// str sets *dst to query parameter name when it is given.
func (c *call) str(name string, dst *string) {
	if v, ok := c.q[name]; ok && len(v) > 0 {
		*dst = v[0]
	}
}

// boolean sets *dst to query parameter name (true/false) when it is given.
func (c *call) boolean(name string, dst **bool) error {
	v, ok := c.q[name]
	if !ok || len(v) == 0 || v[0] == "" {
		return nil
	}
	b, err := strconv.ParseBool(v[0])
	if err != nil {
		return nserror.New(nserror.InvalidInput, "query parameter %s=%q is not true or false", name, v[0])
	}
	*dst = &b
	return nil
}

// integer sets *dst to query parameter name (a 32-bit integer, as the
// protocol's page limits are) when it is given.
func (c *call) integer(name string, dst **int) error {
	v, ok := c.q[name]
	if !ok || len(v) == 0 || v[0] == "" {
		return nil
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
		return nserror.New(nserror.InvalidInput, "query parameter %s=%q is not a 32-bit integer", name, v[0])
	}
	i := int(n)
	*dst = &i
	return nil
}

// paging applies page_token and limit from the query.
func (c *call) paging(token *string, limit **int) error {
	c.str("page_token", token)
	return c.integer("limit", limit)
}

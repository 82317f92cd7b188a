package restserver

import (
	"context"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/planner"
)

// A route is one operation: its name (in errors and logs), whether it
// changes anything (then it needs the write role, POST and a JSON body;
// reads take GET or POST, as clients disagree), what runs it: the
// operation's Run from namespace.Ops or planner.Ops, which decodes, binds
// and calls, and what authorizes it alone (the operation's Authorize,
// for an idempotent retry). A nil or api.Empty reply is an empty
// 200.
type route struct {
	name      string
	write     bool
	run       func(ctx context.Context, h *handler, body []byte, rest *namespace.REST) (any, error)
	authorize func(ctx context.Context, h *handler, body []byte, rest *namespace.REST) error
}

// The routes, built from namespace.Ops and planner.Ops and nothing else:
// below /v1/namespace/{id}/ and /v1/table/{id}/ by the rest of the path,
// and the routes without an id by their whole path after /v1/. Anything
// else under those prefixes is an operation flightns does not serve
// (data-plane operations run in the Lance engine): 406 with code 0. Two
// operations on one route stop the program at start (and its test).
var namespaceRoutes, tableRoutes, plainRoutes = func() (ns, tb, plain map[string]route) {
	ns, tb, plain = map[string]route{}, map[string]route{}, map[string]route{}
	add := func(m map[string]route, path string, rt route) {
		if _, dup := m[path]; dup {
			panic("restserver: two operations route " + path)
		}
		m[path] = rt
	}
	for _, o := range namespace.Ops {
		rt := route{name: o.Name, write: o.Write, run: func(ctx context.Context, h *handler, body []byte, rest *namespace.REST) (any, error) {
			return o.Run(ctx, h.svc, body, rest)
		}, authorize: func(ctx context.Context, h *handler, body []byte, rest *namespace.REST) error {
			return o.Authorize(ctx, h.svc, body, rest)
		}}
		if sub, ok := strings.CutPrefix(o.Path, "namespace/{id}/"); ok {
			add(ns, sub, rt)
		} else if sub, ok := strings.CutPrefix(o.Path, "table/{id}/"); ok {
			add(tb, sub, rt)
		} else {
			add(plain, o.Path, rt)
		}
	}
	for _, o := range planner.Ops {
		add(ns, o.Path, route{name: o.Name, write: o.Write, run: func(ctx context.Context, h *handler, body []byte, rest *namespace.REST) (any, error) {
			return o.Run(ctx, h.plan, body, rest.ID)
		}, authorize: func(ctx context.Context, h *handler, body []byte, rest *namespace.REST) error {
			return o.Authorize(ctx, h.plan, body, rest.ID)
		}})
	}
	return ns, tb, plain
}()

// query is a request's query string as the operations read it
// (namespace.Query).
type query url.Values

// Text sets *dst to query parameter name when it is given.
func (q query) Text(name string, dst *string) {
	if v, ok := q[name]; ok && len(v) > 0 {
		*dst = v[0]
	}
}

// Bool sets *dst to query parameter name (true/false) when it is given.
func (q query) Bool(name string, dst **bool) error {
	v, ok := q[name]
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

// Int sets *dst to query parameter name (a 32-bit integer, as the
// protocol's page limits are) when it is given.
func (q query) Int(name string, dst **int) error {
	v, ok := q[name]
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

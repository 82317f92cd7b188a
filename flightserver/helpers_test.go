package flightserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// fenv is one flightns Flight server over a real Redis and a file:// root,
// listening on a loopback port.
type fenv struct {
	t    *testing.T
	objs *objstore.Store
	svc  *namespace.Service
	srv  *Server
	addr string
}

// testUsers are the credentials of servers started with withAuth.
var testUsers = auth.Config{
	Tokens: []auth.TokenEntry{{Token: "read-token", Name: "reader", Role: "read"}, {Token: "write-token", Name: "writer", Role: "write"}},
	Users:  []auth.UserEntry{{Name: "ana", Password: "ana-pw", Role: "write"}, {Name: "rita", Password: "rita-pw", Role: "read"}},
}

func withAuth(c *Config) {
	a, err := auth.New(testUsers)
	if err != nil {
		panic(err)
	}
	c.Auth = a
}

func start(t *testing.T, opts ...func(*Config)) *fenv {
	t.Helper()
	env := nstest.New(t)
	return serve(t, env, env.Open(t), opts...)
}

// startWithSlots is start over a SQL engine that runs n queries at once
// (sqlengine.Config.MaxQueries, the server's one bound on them).
func startWithSlots(t *testing.T, n int, opts ...func(*Config)) *fenv {
	t.Helper()
	env := nstest.New(t)
	return serve(t, env, env.Open(t, func(c *namespace.Config) { c.Table.Engine.MaxQueries = n }), opts...)
}

// serve starts a Flight server over svc, a service opened over env (with
// a configuration of the test's own: a fault hook on its store, say).
func serve(t *testing.T, env *nstest.Env, svc *namespace.Service, opts ...func(*Config)) *fenv {
	t.Helper()
	cfg := Config{Service: svc, Logger: nstest.Quiet, Version: "test"}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return &fenv{t: t, objs: env.Objects, svc: svc, srv: srv, addr: l.Addr().String()}
}

// client is an arrow-go Flight SQL client; mw adds client middleware (for
// credentials).
func (e *fenv) client(mw ...flight.ClientMiddleware) *flightsql.Client {
	e.t.Helper()
	c, err := flightsql.NewClient(e.addr, nil, mw, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// seed makes namespaces sales and ops, tables sales.orders (versions 1-3)
// and sales.items (declared only).
func (e *fenv) seed() {
	e.t.Helper()
	ctx := context.Background()
	for _, ns := range []string{"sales", "ops"} {
		must(e.svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{ns}}))
	}
	must(e.svc.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"sales", "items"}}))
	e.declareWithVersions(api.ID{"sales", "orders"}, 3)
}

// declareWithVersions declares a table and commits versions 1..n.
func (e *fenv) declareWithVersions(tid api.ID, n int) {
	e.t.Helper()
	ctx := context.Background()
	d := must(e.svc.DeclareTable(ctx, api.DeclareTableRequest{ID: tid}))
	for v := 1; v <= n; v++ {
		must(e.svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{
			ID: tid, Version: int64(v), ManifestPath: e.stage(d.Location, uint64(v)),
		}))
	}
}

// stage writes a staging manifest for version v of the table at location
// (a URI under the root) and returns its URI, the form Lance sends.
func (e *fenv) stage(location string, v uint64) string {
	e.t.Helper()
	final := lancemanifest.Dir(location).Manifest(lancemanifest.V2, v)
	staging := lancemanifest.StagingPath(final)
	key := strings.TrimPrefix(staging, e.objs.URI()+"/")
	if err := e.objs.Put(context.Background(), key, []byte(fmt.Sprintf("manifest %d at %s", v, staging))); err != nil {
		e.t.Fatal(err)
	}
	return staging
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// fetch runs every endpoint of info and returns the concatenated rows of
// the results, and the schema of the stream.
func fetch(t *testing.T, ctx context.Context, c *flightsql.Client, info *flight.FlightInfo, err error) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var recs []arrow.RecordBatch
	var schema *arrow.Schema
	for _, ep := range info.Endpoint {
		r, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		schema = r.Schema()
		for r.Next() {
			rec := r.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return schema, recs
}

// drain runs the first endpoint of info (after the call that returned it)
// to its end and returns the first error on the way.
func drain(ctx context.Context, c *flightsql.Client, info *flight.FlightInfo, err error) error {
	if err != nil {
		return err
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return err
	}
	defer r.Release()
	for r.Next() {
	}
	return r.Err()
}

// column returns column name of recs as strings (ValueStr), in order.
func column(t *testing.T, recs []arrow.RecordBatch, name string) []string {
	t.Helper()
	var out []string
	for _, r := range recs {
		idx := r.Schema().FieldIndices(name)
		if len(idx) == 0 {
			t.Fatalf("no column %q in %v", name, r.Schema())
		}
		col := r.Column(idx[0])
		for i := 0; i < col.Len(); i++ {
			if col.IsNull(i) {
				out = append(out, "NULL")
			} else {
				out = append(out, col.ValueStr(i))
			}
		}
	}
	return out
}

// wantStatus fails unless err is a gRPC status with code c.
func wantStatus(t *testing.T, what string, err error, c codes.Code) *status.Status {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want %v", what, c)
	}
	st, ok := status.FromError(err)
	if !ok {
		var se interface{ GRPCStatus() *status.Status }
		if errors.As(err, &se) {
			st = se.GRPCStatus()
		} else {
			t.Fatalf("%s: %v is not a gRPC status", what, err)
		}
	}
	if st.Code() != c {
		t.Fatalf("%s: %v, want code %v", what, err, c)
	}
	return st
}

// doAction runs a Lance action and decodes its one JSON result into out.
func doAction(ctx context.Context, c flight.Client, name string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	stream, err := c.DoAction(ctx, &flight.Action{Type: name, Body: body})
	if err != nil {
		return err
	}
	res, err := stream.Recv()
	if err != nil {
		return err
	}
	if out != nil {
		return json.Unmarshal(res.Body, out)
	}
	return nil
}

// wantLanceCode fails unless err carries Lance code c in its details.
func wantLanceCode(t *testing.T, what string, err error, c nserror.Code) {
	t.Helper()
	got, ok := grpcstatus.Code(err)
	if !ok || got != c {
		t.Fatalf("%s: %v carries Lance code %v (%v), want %v", what, err, got, ok, c)
	}
}

// record builds a one-row batch from values (int64, string, nil→null string).
func record(vals ...any) arrow.RecordBatch {
	fields := make([]arrow.Field, len(vals))
	cols := make([]arrow.Array, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case int64:
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.Append(v)
			cols[i], fields[i] = b.NewArray(), arrow.Field{Name: fmt.Sprint(i), Type: arrow.PrimitiveTypes.Int64}
		case string:
			b := array.NewStringBuilder(memory.DefaultAllocator)
			b.Append(v)
			cols[i], fields[i] = b.NewArray(), arrow.Field{Name: fmt.Sprint(i), Type: arrow.BinaryTypes.String}
		default:
			b := array.NewStringBuilder(memory.DefaultAllocator)
			b.AppendNull()
			cols[i], fields[i] = b.NewArray(), arrow.Field{Name: fmt.Sprint(i), Type: arrow.BinaryTypes.String, Nullable: true}
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1)
}

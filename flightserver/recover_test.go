package flightserver

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/nserror"
)

// A panic anywhere a call reaches — a handler, an interceptor (the
// embedder's, before authentication), a goroutine a handler starts, the
// timer that drops an unfetched query — is a bug: the call gets Internal
// with the Lance code Internal, the panic is counted (Config.Panicked),
// and the server answers the next call.

// panickySQL is the in-process SQL engine with bugs planted in it: a
// query whose text holds "panic in planning" panics when it is started
// or its schema is asked; one with "panic in streaming" panics when its
// result is read; one with "panic in release" panics when its result is
// released; a query run with the parameter 13 panics when it starts.
type panickySQL struct{ tableSQL }

func (p panickySQL) Schema(ctx context.Context, query string) (*arrow.Schema, []arrow.DataType, error) {
	if strings.Contains(query, "panic in planning") {
		panic("a planted bug in planning")
	}
	return p.tableSQL.Schema(ctx, query)
}

func (p panickySQL) Query(ctx context.Context, query string, args []any, after uint64) (*sqlengine.Result, error) {
	for _, a := range args {
		if a == int64(13) {
			panic("a planted bug in a run with 13")
		}
	}
	switch {
	case strings.Contains(query, "panic in planning"):
		panic("a planted bug in planning")
	case strings.Contains(query, "panic in streaming"):
		schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
		return sqlengine.NewResult(panickyReader{schema}, 0, func() {}), nil
	case strings.Contains(query, "panic in release"):
		res, err := p.tableSQL.Query(ctx, query, args, after)
		if err != nil {
			return nil, err
		}
		return sqlengine.NewResult(res.RecordReader, res.Seq, func() { res.Release(); panic("a planted bug in release") }), nil
	}
	return p.tableSQL.Query(ctx, query, args, after)
}

// panickyReader panics on its first Next.
type panickyReader struct{ schema *arrow.Schema }

func (panickyReader) Retain()                        {}
func (panickyReader) Release()                       {}
func (r panickyReader) Schema() *arrow.Schema        { return r.schema }
func (panickyReader) Next() bool                     { panic("a planted bug in streaming") }
func (panickyReader) RecordBatch() arrow.RecordBatch { return nil }
func (r panickyReader) Record() arrow.RecordBatch    { return r.RecordBatch() }
func (panickyReader) Err() error                     { return nil }

func withPanickySQL(c *Config) { c.SQL = panickySQL{tableSQL{t: c.Service.Table()}} }

// wantRecovered fails unless err is the Internal of a recovered panic
// and the count moved to want.
func wantRecovered(t *testing.T, what string, err error, panics *atomic.Int32, want int32) {
	t.Helper()
	wantStatus(t, what, err, codes.Internal)
	wantLanceCode(t, what, err, nserror.Internal)
	if strings.Contains(err.Error(), "planted") {
		t.Errorf("%s: the answer tells the panic: %v", what, err)
	}
	if got := panics.Load(); got != want {
		t.Fatalf("%s: %d panics counted, want %d", what, got, want)
	}
}

func TestAPanicInAHandlerOrItsGoroutinesIsInternalAndTheServerLivesOn(t *testing.T) {
	var panics atomic.Int32
	e := start(t, withPanickySQL, countPanics(&panics), func(c *Config) { c.Limits.StalledResultTimeout = 200 * time.Millisecond })
	c := e.client()
	ctx := context.Background()

	// In the handler: GetFlightInfo starts the query.
	_, err := c.Execute(ctx, "SELECT 'panic in planning'")
	wantRecovered(t, "GetFlightInfo", err, &panics, 1)
	_, err = c.GetExecuteSchema(ctx, "SELECT 'panic in planning'")
	wantRecovered(t, "GetSchema", err, &panics, 2)
	e.answers(c)

	// In the goroutine that streams a result: its stream ends with
	// Internal.
	info, err := c.Execute(ctx, "SELECT 'panic in streaming'")
	if err != nil {
		t.Fatal(err)
	}
	wantRecovered(t, "DoGet", drain(ctx, c, info, nil), &panics, 3)
	e.answers(c)

	// In the goroutine that runs the row sets of a prepared query after
	// the first one.
	prep, err := c.Prepare(ctx, "SELECT CAST($1 AS BIGINT) AS n")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prep.Close(ctx) }()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 13}, nil)
	col := b.NewArray()
	params := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "0", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 2)
	col.Release()
	defer params.Release()
	prep.SetParameters(params)
	info, err = prep.Execute(ctx)
	wantRecovered(t, "the second row set", drain(ctx, c, info, err), &panics, 4)
	e.answers(c)

	// In the timer that stops a started query nobody fetched.
	if _, err := c.Execute(ctx, "SELECT 'panic in release'"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unfetched query is dropped", func() bool { return panics.Load() == 5 })
	e.answers(c)
}

func TestAPanicInAnInterceptorIsRecoveredToo(t *testing.T) {
	var panics atomic.Int32
	planted := func(ctx context.Context) {
		if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("x-plant-a-bug")) > 0 {
			panic("a planted bug in an interceptor")
		}
	}
	e := start(t, withAuth, countPanics(&panics), func(c *Config) {
		c.Health = health.NewServer()
		c.UnaryInterceptors = []grpc.UnaryServerInterceptor{func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			planted(ctx)
			return h(ctx, req)
		}}
		c.StreamInterceptors = []grpc.StreamServerInterceptor{func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			planted(ss.Context())
			return h(srv, ss)
		}}
	})
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-plant-a-bug", "1")
	c := e.client()
	// Before authentication: no credentials are sent.
	wantRecovered(t, "DoAction", rawAction(ctx, c.Client, "ListNamespaces", []byte(`{"id":[]}`)), &panics, 1)
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, err = healthgrpc.NewHealthClient(conn).Check(ctx, &healthgrpc.HealthCheckRequest{})
	wantRecovered(t, "a unary call", err, &panics, 2)
	if _, err := healthgrpc.NewHealthClient(conn).Check(context.Background(), &healthgrpc.HealthCheckRequest{}); err != nil {
		t.Fatalf("the health service after a recovered panic: %v", err)
	}
	authed := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer read-token")
	if err := rawAction(authed, c.Client, "ListNamespaces", []byte(`{"id":[]}`)); err != nil {
		t.Fatalf("an action after a recovered panic: %v", err)
	}
}

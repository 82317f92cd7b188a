package sqlworker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/metadata"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/nserror"
)

// wenv is a namespace service (the server's side: commits, the
// materializer, no SQL) and a worker served in this process over a real
// Unix socket, with a client.
type wenv struct {
	svc    *namespace.Service
	client *Client
	stuck  chan error
}

func startWorker(t *testing.T, grace time.Duration, opts ...func(*ServeConfig)) *wenv {
	t.Helper()
	env := nstest.New(t)
	svc := env.Open(t, func(c *namespace.Config) { c.Table.NoSQL = true })
	sock := filepath.Join(t.TempDir(), "w.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &wenv{svc: svc, stuck: make(chan error, 1)}
	cfg := ServeConfig{Objects: env.Objects, Redis: env.RDB, Catalog: env.Catalog, Token: "tok",
		Engine: sqlengine.Config{MemoryLimit: "512MB", MaxQueries: 4}, StopGrace: grace, Logger: nstest.Quiet}
	for _, o := range opts {
		o(&cfg)
	}
	go func() { e.stuck <- Serve(ctx, l, cfg) }()
	t.Cleanup(cancel)
	if e.client, err = Dial(sock, "tok"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := e.client.Status(context.Background()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return e
}

// strings of a one-column result.
func column(t *testing.T, res *sqlengine.Result) []string {
	t.Helper()
	defer res.Release()
	var out []string
	for res.Next() {
		c := res.RecordBatch().Column(0)
		for i := 0; i < c.Len(); i++ {
			out = append(out, strings.Clone(c.ValueStr(i)))
		}
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A query in the worker sees every change the server acknowledged before
// it (the server's commit-log head as "after"), with its parameters bound
// as they were given, and names its catalog sequence.
func TestTheWorkerAnswersQueriesAfterTheServersWrites(t *testing.T) {
	e := startWorker(t, 5*time.Second)
	ctx := context.Background()
	for _, ns := range []string{"a", "b", "c"} {
		if _, err := e.svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{ns}}); err != nil {
			t.Fatal(err)
		}
	}
	head, err := e.svc.Table().Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.client.Query(ctx, "SELECT object_id FROM namespaces WHERE object_id <> ? ORDER BY 1", []any{"b"}, head)
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq < head {
		t.Errorf("the result is at sequence %d, before %d", res.Seq, head)
	}
	if got := column(t, res); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("namespaces %v", got)
	}
	args := []any{nil, true, int64(-7), uint64(1 << 63), 2.5, "x'y", []byte{0, 1}, time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)}
	res, err = e.client.Query(ctx, "SELECT concat_ws('|', ?::VARCHAR, ?, ?, ?, ?, ?, hex(?), ?::TIMESTAMPTZ)", args, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := column(t, res); len(got) != 1 || got[0] != "true|-7|9223372036854775808|2.5|x'y|0001|2026-01-02 03:04:05.000006+00" {
		t.Fatalf("parameters came back as %v", got)
	}
	schema, params, err := e.client.Schema(ctx, "SELECT object_id, table_version FROM __manifest WHERE object_id = ?")
	if err != nil {
		t.Fatal(err)
	}
	if schema.NumFields() != 2 || schema.Field(1).Type.ID() != arrow.UINT64 || len(params) != 1 || params[0].ID() != arrow.STRING {
		t.Fatalf("schema %v, parameters %v", schema, params)
	}
}

// What the worker refuses keeps its Lance code across the socket; a call
// without the token is refused.
func TestWorkerErrorsKeepTheirCodes(t *testing.T) {
	e := startWorker(t, 5*time.Second)
	ctx := context.Background()
	for q, code := range map[string]nserror.Code{
		"DROP VIEW tables; SELECT 1":            nserror.PermissionDenied,
		"CREATE TABLE pwn (a INT)":              nserror.PermissionDenied,
		"SELEC 1":                               nserror.InvalidInput,
		"SELECT * FROM read_csv('/etc/passwd')": nserror.PermissionDenied,
	} {
		if _, _, err := e.client.Schema(ctx, q); nserror.CodeOf(err) != code {
			t.Errorf("schema of %q: %v, want %v", q, err, code)
		}
		if _, err := e.client.Query(ctx, q, nil, 0); nserror.CodeOf(err) != code {
			t.Errorf("%q: %v, want %v", q, err, code)
		}
	}
	bad := *e.client
	bad.token = "wrong"
	if _, err := bad.Status(ctx); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("a call with the wrong token: %v", err)
	}
}

// A query past its deadline is interrupted in the worker, and the worker
// goes on; one that DuckDB does not let go of within the grace ends the
// worker (ErrStuck), for its supervisor to replace.
func TestAStoppedQueryEndsOrTheWorkerGivesUp(t *testing.T) {
	e := startWorker(t, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := e.client.Query(ctx, "SELECT sum(hash(range)) FROM range(100000000000)", nil, 0)
	if err == nil {
		for res.Next() {
		}
		err = res.Err()
		res.Release()
	}
	if nserror.CodeOf(err) != nserror.ServiceUnavailable || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an endless query: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the endless query ended after %v", took)
	}
	if _, err := e.client.Status(context.Background()); err != nil {
		t.Fatalf("the worker after an interrupted query: %v", err)
	}
	select {
	case err := <-e.stuck:
		t.Fatalf("the worker ended after a query that stopped in time: %v", err)
	default:
	}
	// The watch itself: a call whose context ended and that goes on past
	// the grace is reported.
	w := newWatch(100 * time.Millisecond)
	gone, stop := context.WithCancel(context.Background())
	done := w.begin(gone)
	defer done()
	stop()
	now := time.Now()
	if w.check(now) || w.check(now.Add(50*time.Millisecond)) {
		t.Fatal("stuck before the grace passed")
	}
	if !w.check(now.Add(200 * time.Millisecond)) {
		t.Fatal("a call 200 ms past its end within a 100 ms grace is not stuck")
	}
}

func TestArgumentsRoundTrip(t *testing.T) {
	in := []any{nil, false, int64(-1), uint64(18446744073709551615), 1e-300, "", []byte("b"), time.Unix(1, 5).UTC()}
	enc, err := encodeArgs(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeArgs(enc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if a, b := in[i], out[i]; !equalArg(a, b) {
			t.Errorf("argument %d: %#v came back as %#v", i, a, b)
		}
	}
	if _, err := encodeArgs([]any{struct{}{}}); nserror.CodeOf(err) != nserror.InvalidInput {
		t.Errorf("a struct argument: %v", err)
	}
	if _, err := decodeArgs([]typedArg{{T: "int64", V: "x"}}); nserror.CodeOf(err) != nserror.InvalidInput {
		t.Errorf("a malformed argument: %v", err)
	}
}

func equalArg(a, b any) bool {
	switch a := a.(type) {
	case []byte:
		bb, ok := b.([]byte)
		return ok && string(a) == string(bb)
	case time.Time:
		bt, ok := b.(time.Time)
		return ok && a.Equal(bt)
	}
	return a == b
}

// A streamed result reaches the server in batches far larger than
// DuckDB's 2,048-row chunks, with every value as DuckDB made it: strings,
// NULLs, lists and structs survive the joining of chunks.
func TestResultsStreamInLargeBatchesWithEveryValue(t *testing.T) {
	e := startWorker(t, 5*time.Second)
	ctx := context.Background()
	const n = 200_000
	res, err := e.client.Query(ctx, `SELECT range AS i, range::VARCHAR AS s,
		CASE WHEN range % 7 = 0 THEN NULL ELSE range * 1.5 END AS d,
		[range, range + 1] AS l, {'a': range} AS st FROM range(200000)`, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	var batches, rows, sumI, sumLen, nulls, sumL, sumA int64
	for res.Next() {
		rec := res.RecordBatch()
		batches++
		rows += rec.NumRows()
		is := rec.Column(0).(*array.Int64)
		ss := rec.Column(1).(*array.String)
		ds := rec.Column(2)
		ls := rec.Column(3).(*array.List)
		lv := ls.ListValues().(*array.Int64)
		st := rec.Column(4).(*array.Struct).Field(0).(*array.Int64)
		for r := 0; r < int(rec.NumRows()); r++ {
			sumI += is.Value(r)
			sumLen += int64(len(ss.Value(r)))
			if ds.IsNull(r) {
				nulls++
			}
			_, end := ls.ValueOffsets(r)
			sumL += lv.Value(int(end) - 1)
			sumA += st.Value(r)
		}
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	agg, err := e.client.Query(ctx, `SELECT concat_ws(' ', count(*), sum(range), sum(length(range::VARCHAR)),
		count(*) FILTER (WHERE range % 7 = 0), sum(range + 1), sum(range)) FROM range(200000)`, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := column(t, agg)
	got := fmt.Sprintf("%d %d %d %d %d %d", rows, sumI, sumLen, nulls, sumL, sumA)
	if len(want) != 1 || got != want[0] {
		t.Fatalf("the streamed result sums to %s, DuckDB says %v", got, want)
	}
	if most := int64(n / 16384); batches > most {
		t.Errorf("%d rows came in %d batches, want at most %d", n, batches, most)
	}
}

// A panic in a worker's call — in a handler, or before its token is
// checked — is Internal with the Lance code Internal, counted in the
// worker's Status (which the supervisor turns into the panics metric),
// and the worker answers the next call.
func TestAPanicInTheWorkerIsInternalAndCounted(t *testing.T) {
	var plant atomic.Bool
	e := startWorker(t, 5*time.Second, func(c *ServeConfig) {
		c.beforeCall = func(method string) {
			if plant.Load() && strings.HasSuffix(method, "/DoGet") {
				panic("a planted bug")
			}
		}
	})
	ctx := context.Background()
	plant.Store(true)
	_, err := e.client.Query(ctx, "SELECT 1", nil, 0)
	if nserror.CodeOf(err) != nserror.Internal || strings.Contains(err.Error(), "planted") {
		t.Fatalf("a query whose call panicked: %v, want Internal (not naming the panic)", err)
	}
	st, err := e.client.Status(ctx)
	if err != nil || st.Panics != 1 {
		t.Fatalf("the worker's status: %+v, %v; want 1 panic", st, err)
	}
	plant.Store(false)
	res, err := e.client.Query(ctx, "SELECT 42", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := column(t, res); !slices.Equal(got, []string{"42"}) {
		t.Fatalf("the next query: %v", got)
	}
}

// The metadata of one call to the worker is bounded (64 KiB), like the
// Flight server's: a call past it is refused, and the worker answers the
// next one.
func TestOversizedMetadataIsRefusedByTheWorker(t *testing.T) {
	e := startWorker(t, 5*time.Second)
	big := metadata.AppendToOutgoingContext(context.Background(), "x-big", strings.Repeat("x", 3<<20))
	for range 2 { // the first call may go before the client has the worker's settings
		if _, err := e.client.Status(big); err == nil {
			t.Fatal("a call with 3 MB of metadata was answered")
		}
	}
	if _, err := e.client.Status(context.Background()); err != nil {
		t.Fatalf("the next call: %v", err)
	}
}

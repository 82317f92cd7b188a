package flightserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

func TestStatementsStreamRowsAndNameTheirCatalogSequence(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()

	info, err := c.Execute(ctx, "SELECT table_id, version FROM table_versions ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	if info.Schema == nil {
		t.Fatal("FlightInfo without a schema")
	}
	var hdr metadata.MD
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket, grpc.Header(&hdr))
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			versions = append(versions, rec.Column(0).ValueStr(i)+"@"+rec.Column(1).ValueStr(i))
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Release()
	if want := []string{"sales$orders@1", "sales$orders@2", "sales$orders@3"}; !slices.Equal(versions, want) {
		t.Fatalf("rows %v, want %v", versions, want)
	}
	seq, err := strconv.ParseUint(firstOf(hdr.Get(SeqHeader)), 10, 64)
	if err != nil || seq == 0 {
		t.Fatalf("header %s = %q: want the catalog sequence", SeqHeader, hdr.Get(SeqHeader))
	}
	if durable := must(e.svc.Table().DurableSeq(ctx)); seq > durable {
		t.Fatalf("result read at sequence %d, beyond the durable %d", seq, durable)
	}
}

func firstOf(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func TestQueriesUseTheFlightnsCatalogName(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	for _, q := range []string{
		"SELECT count(*) AS n FROM flightns.main.namespaces",
		`SELECT count(*) AS n FROM "flightns"."main"."namespaces"`,
		"SELECT count(*) AS n FROM main.namespaces",
		"SELECT count(*) AS n FROM namespaces",
	} {
		info, err := c.Execute(ctx, q)
		_, recs := fetch(t, ctx, c, info, err)
		if got := column(t, recs, "n"); !slices.Equal(got, []string{"2"}) {
			t.Fatalf("%s: %v, want 2", q, got)
		}
	}
}

func TestPreparedQueriesCarryTheirSchemaAndBindParameters(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()

	p, err := c.Prepare(ctx, "SELECT max(version) AS latest, count(*) AS n FROM table_versions WHERE table_id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }()
	if p.DatasetSchema() == nil || p.DatasetSchema().NumFields() != 2 {
		t.Fatalf("dataset schema %v: JDBC needs it to treat the statement as a query", p.DatasetSchema())
	}
	if upd, ok := p.IsUpdate(); !ok || upd {
		t.Fatalf("IsUpdate = %v (set %v), want false", upd, ok)
	}
	if p.ParameterSchema() == nil || p.ParameterSchema().NumFields() != 1 {
		t.Fatalf("parameter schema %v, want one parameter", p.ParameterSchema())
	}
	for _, c2 := range []struct {
		table  string
		latest string
		n      string
	}{{"sales$orders", "3", "3"}, {"sales$items", "NULL", "0"}, {"nope", "NULL", "0"}} {
		rec := record(c2.table)
		p.SetParameters(rec)
		rec.Release()
		info, err := p.Execute(ctx)
		_, recs := fetch(t, ctx, c, info, err)
		if got := column(t, recs, "latest"); !slices.Equal(got, []string{c2.latest}) {
			t.Fatalf("latest of %s = %v, want %s", c2.table, got, c2.latest)
		}
		if got := column(t, recs, "n"); !slices.Equal(got, []string{c2.n}) {
			t.Fatalf("count of %s = %v, want %s", c2.table, got, c2.n)
		}
	}

	// A query without parameters runs prepared as is.
	p2, err := c.Prepare(ctx, "SELECT object_id FROM namespaces ORDER BY object_id")
	if err != nil {
		t.Fatal(err)
	}
	info, err := p2.Execute(ctx)
	_, recs := fetch(t, ctx, c, info, err)
	if got := column(t, recs, "object_id"); !slices.Equal(got, []string{"ops", "sales"}) {
		t.Fatalf("namespaces %v", got)
	}
	if err := p2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// A closed handle is gone on the server.
	stale, err := c.LoadPreparedStatementFromResult(&flightsql.CreatePreparedStatementResult{PreparedStatementHandle: p2.Handle()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = stale.Execute(ctx)
	wantStatus(t, "execute after close", err, codes.InvalidArgument)
}

func TestWrongParameterBindingsAreInvalidArgument(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	p, err := c.Prepare(ctx, "SELECT count(*) FROM table_versions WHERE table_id = ? AND version > ?")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }()
	// Unbound parameters.
	info, err := p.Execute(ctx)
	wantStatus(t, "no parameters bound", drain(ctx, c, info, err), codes.InvalidArgument)
	// Too few.
	rec := record("sales$orders")
	p.SetParameters(rec)
	rec.Release()
	info, err = p.Execute(ctx)
	wantStatus(t, "one of two parameters bound", drain(ctx, c, info, err), codes.InvalidArgument)
	// Right.
	rec = record("sales$orders", int64(1))
	p.SetParameters(rec)
	rec.Release()
	info, err = p.Execute(ctx)
	_, recs := fetch(t, ctx, c, info, err)
	if got := column(t, recs, "count_star()"); !slices.Equal(got, []string{"2"}) {
		t.Fatalf("count %v, want 2", got)
	}
}

func TestUpdatesAreRefusedWithoutTouchingTheCatalog(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	before := must(e.svc.Table().Head(ctx))
	for _, q := range []string{
		"DELETE FROM _objects",
		"INSERT INTO _objects (object_id, object_type, _seq_from) VALUES ('x', 'namespace', 1)",
		"UPDATE _versions SET manifest_path = 'x'",
		"DROP VIEW namespaces",
		"CREATE TABLE t (a INT)",
	} {
		_, err := c.ExecuteUpdate(ctx, q)
		wantStatus(t, "update "+q, err, codes.PermissionDenied)
		info, err := c.Execute(ctx, q)
		wantStatus(t, "execute "+q, drain(ctx, c, info, err), codes.PermissionDenied)
		_, err = c.Prepare(ctx, q)
		wantStatus(t, "prepare "+q, err, codes.PermissionDenied)
	}
	_, err := c.BeginTransaction(ctx)
	wantStatus(t, "begin transaction", err, codes.InvalidArgument)
	info, err := c.Execute(ctx, "SELECT count(*) AS n FROM __manifest")
	_, recs := fetch(t, ctx, c, info, err)
	// 2 namespaces, 2 tables, 3 versions.
	if got := column(t, recs, "n"); !slices.Equal(got, []string{"7"}) {
		t.Fatalf("__manifest has %v rows after refused updates, want 7", got)
	}
	if after := must(e.svc.Table().Head(ctx)); after != before {
		t.Fatalf("the catalog moved from %d to %d", before, after)
	}
}

func TestSQLCannotReadFilesReachTheNetworkOrChangeSettings(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	secret := filepath.Join(t.TempDir(), "secret.csv")
	if err := os.WriteFile(secret, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The catalog's own Parquet segments are files too.
	root := e.objs.LocalDir()
	for _, q := range []string{
		fmt.Sprintf("SELECT * FROM read_csv('%s')", secret),
		fmt.Sprintf("SELECT * FROM '%s'", secret),
		fmt.Sprintf("SELECT * FROM read_text('%s')", secret),
		fmt.Sprintf("SELECT * FROM read_parquet('%s/__manifest/**/*.parquet')", root),
		fmt.Sprintf("SELECT * FROM glob('%s/*')", root),
		"SELECT * FROM read_csv('http://127.0.0.1:1/x.csv')",
		"SELECT * FROM read_text('/etc/passwd')",
		"COPY (SELECT 1) TO '/tmp/flightns-escape.csv'",
		"ATTACH '/tmp/flightns-escape.db' AS esc",
		"INSTALL httpfs",
		"LOAD httpfs",
		"SET enable_external_access = true",
		"SET memory_limit = '100GB'",
		"PRAGMA threads=64",
		"CALL pragma_database_list()",
	} {
		// Planning may succeed for a function the sandbox refuses only at run time.
		info, err := c.Execute(ctx, q)
		if err := drain(ctx, c, info, err); err == nil {
			t.Fatalf("%s: succeeded", q)
		}
	}
	if _, err := os.Stat("/tmp/flightns-escape.csv"); err == nil {
		t.Fatal("COPY wrote a file")
	}
}

func TestResultLimitsEndTheStreamWithAClearError(t *testing.T) {
	e := start(t, func(c *Config) {
		c.Limits.MaxResultRows = 1000
		c.Limits.MaxResultBytes = 1 << 20
	})
	c := e.client()
	ctx := context.Background()

	fetchErr := func(q string) error {
		info, err := c.Execute(ctx, q)
		return drain(ctx, c, info, err)
	}
	if err := fetchErr("SELECT * FROM range(1000)"); err != nil {
		t.Fatalf("1000 rows at a 1000-row limit: %v", err)
	}
	st := wantStatus(t, "1001 rows", fetchErr("SELECT * FROM range(1001)"), codes.ResourceExhausted)
	if !strings.Contains(st.Message(), "1000 rows") {
		t.Fatalf("message %q does not name the limit", st.Message())
	}
	st = wantStatus(t, "4 MB", fetchErr("SELECT repeat('x', 4096) FROM range(900)"), codes.ResourceExhausted)
	if !strings.Contains(st.Message(), "bytes") {
		t.Fatalf("message %q does not name the limit", st.Message())
	}
}

func TestQueryTimeLimit(t *testing.T) {
	e := start(t, func(c *Config) { c.Limits.QueryTimeout = 200 * time.Millisecond })
	c := e.client()
	ctx := context.Background()
	info, err := c.Execute(ctx, "SELECT sum(hash(range)) FROM range(100000000000)")
	st := wantStatus(t, "long query", drain(ctx, c, info, err), codes.DeadlineExceeded)
	if !strings.Contains(st.Message(), "200ms") {
		t.Fatalf("message %q does not name the limit", st.Message())
	}
	// The slot is free again.
	info, err = c.Execute(ctx, "SELECT 1 AS one")
	_, recs := fetch(t, ctx, c, info, err)
	if got := column(t, recs, "one"); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("after a timeout: %v", got)
	}
}

func TestConcurrentQueryLimit(t *testing.T) {
	e := startWithSlots(t, 1)
	c := e.client()
	ctx := context.Background()
	// The first query's stream stays open while we do not read it: its
	// slot stays taken.
	info, err := c.Execute(ctx, "SELECT * FROM range(10000000)")
	if err != nil {
		t.Fatal(err)
	}
	held, cancel := context.WithCancel(ctx)
	r, err := c.DoGet(held, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	info2, err := c.Execute(ctx, "SELECT 1")
	st := wantStatus(t, "second query", drain(ctx, c, info2, err), codes.ResourceExhausted)
	if !strings.Contains(st.Message(), "limit 1") {
		t.Fatalf("message %q does not name the limit", st.Message())
	}
	cancel()
	r.Release()
	// Once the client went away the slot frees.
	deadline := time.Now().Add(10 * time.Second)
	for {
		info2, err = c.Execute(ctx, "SELECT 1 AS one")
		if err = drain(ctx, c, info2, err); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot never freed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMessagesOverTheSizeLimitAreRefused(t *testing.T) {
	e := start(t, func(c *Config) { c.Limits.MaxMessageBytes = 64 << 10 })
	c := e.client()
	ctx := context.Background()
	big := make([]byte, 128<<10)
	for i := range big {
		big[i] = 'a'
	}
	err := doAction(ctx, c.Client, "CreateNamespace", api.CreateNamespaceRequest{
		ID: api.ID{"n"}, Properties: api.Properties{"blob": string(big)}}, nil)
	wantStatus(t, "128 KiB action", err, codes.ResourceExhausted)
	if _, err := e.svc.DescribeNamespace(ctx, api.DescribeNamespaceRequest{ID: api.ID{"n"}}); nserror.CodeOf(err) != nserror.NamespaceNotFound {
		t.Fatalf("the refused action left a namespace: %v", err)
	}
}

func TestPreparedStatementsExpireWhenIdle(t *testing.T) {
	ps := newPreparedSet(time.Minute, 2, 2)
	now := time.Unix(1000, 0)
	ps.now = func() time.Time { return now }
	h1, err := ps.add(&prepared{query: "SELECT 1"})
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := ps.add(&prepared{query: "SELECT 2"})
	if _, err := ps.add(&prepared{query: "SELECT 3"}); err == nil {
		t.Fatal("a third statement fit a limit of 2")
	}
	now = now.Add(50 * time.Second)
	if _, err := ps.get(h1, ""); err != nil { // used: lives on
		t.Fatal(err)
	}
	now = now.Add(30 * time.Second)
	if _, err := ps.get(h2, ""); err == nil {
		t.Fatal("an idle statement outlived its TTL")
	}
	if _, err := ps.get(h1, ""); err != nil {
		t.Fatalf("a used statement expired: %v", err)
	}
	if _, err := ps.add(&prepared{query: "SELECT 3"}); err != nil {
		t.Fatalf("expired statements still count: %v", err)
	}
	if ps.len() != 2 {
		t.Fatalf("%d statements, want 2", ps.len())
	}
}

func TestATicketFetchedTwiceRunsItsQueryAgain(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	info, err := c.Execute(ctx, "SELECT object_id FROM namespaces ORDER BY object_id")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		_, recs := fetch(t, ctx, c, info, nil)
		if got := column(t, recs, "object_id"); !slices.Equal(got, []string{"ops", "sales"}) {
			t.Fatalf("fetch %d: %v", i, got)
		}
	}
}

// A planned query holds nothing until it is fetched, and a client that
// stops reading a result loses its query and its slot.
func TestUnfetchedAndStalledResultsHoldNoSlot(t *testing.T) {
	e := startWithSlots(t, 1, func(c *Config) {
		c.Limits.StalledResultTimeout = time.Second
	})
	c := e.client()
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		if _, err := c.Execute(ctx, "SELECT * FROM range(1000000)"); err != nil {
			t.Fatalf("planning query %d: %v", i, err)
		}
	}
	info, err := c.Execute(ctx, "SELECT 42 AS x")
	if _, recs := fetch(t, ctx, c, info, err); !slices.Equal(column(t, recs, "x"), []string{"42"}) {
		t.Fatalf("a query after 50 unfetched ones: %v", column(t, recs, "x"))
	}
	// A client that reads one batch of a large result and then nothing.
	big, err := c.Execute(ctx, "SELECT range AS n, repeat('x', 100) AS pad FROM range(10000000)")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	stream, err := c.Client.DoGet(sctx, big.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	info, err = c.Execute(ctx, "SELECT 1 AS one")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.DoGet(ctx, info.Endpoint[0].Ticket)
	wantStatus(t, "a query while a stalled result holds the only slot", err, codes.ResourceExhausted)
	deadline := time.Now().Add(15 * time.Second)
	for {
		rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err == nil {
			rdr.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stalled result never gave its slot back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Issue 32, item 8: a bind of N rows of parameters runs the query once
// per row and answers the results one after the other, in the rows'
// order (it was refused); more than MaxParameterSets are refused.
func TestABindOfSeveralRowsRunsTheQueryOncePerRow(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	p, err := c.Prepare(ctx, "SELECT count(*) AS n FROM table_versions WHERE table_id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }()
	rows := func(ids ...string) arrow.RecordBatch {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(ids, nil)
		col := b.NewArray()
		defer col.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "0", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{col}, int64(len(ids)))
	}
	count := func(ids ...string) []string {
		t.Helper()
		rec := rows(ids...)
		p.SetParameters(rec)
		rec.Release()
		info, err := p.Execute(ctx)
		_, recs := fetch(t, ctx, c, info, err)
		return column(t, recs, "n")
	}
	one := count("sales$orders")
	if len(one) != 1 || one[0] == "0" {
		t.Fatalf("one row: %v", one)
	}
	if got := count("sales$orders", "nope", "sales$orders"); !slices.Equal(got, []string{one[0], "0", one[0]}) {
		t.Fatalf("three rows: %v, want %v, 0, %v", got, one[0], one[0])
	}
	for what, ids := range map[string][]string{"too many rows": make([]string, MaxParameterSets+1)} {
		rec := rows(ids...)
		p.SetParameters(rec)
		rec.Release()
		info, err := p.Execute(ctx)
		if err = drain(ctx, c, info, err); err == nil {
			t.Errorf("%s: bound", what)
		}
	}
}

// Issue 32, item 9: PollFlightInfo (ADBC's incremental execution) answers
// a statement and a prepared statement complete at once: progress 1, no
// descriptor to poll again, an endpoint that streams the result.
func TestPollFlightInfoAnswersComplete(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	pi, err := c.ExecutePoll(ctx, "SELECT count(*) AS n FROM namespaces", nil)
	if err != nil {
		t.Fatal(err)
	}
	if pi.GetFlightDescriptor() != nil || pi.GetProgress() != 1 || pi.GetInfo() == nil {
		t.Fatalf("poll info %v", pi)
	}
	_, recs := fetch(t, ctx, c, pi.GetInfo(), nil)
	if got := column(t, recs, "n"); !slices.Equal(got, []string{"2"}) {
		t.Fatalf("namespaces %v", got)
	}
	p, err := c.Prepare(ctx, "SELECT count(*) AS n FROM table_versions WHERE table_id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }()
	rec := record("nope")
	p.SetParameters(rec)
	rec.Release()
	pi, err = p.ExecutePoll(ctx, nil)
	if err != nil || pi.GetFlightDescriptor() != nil || pi.GetProgress() != 1 {
		t.Fatalf("prepared poll info %v, %v", pi, err)
	}
	_, recs = fetch(t, ctx, c, pi.GetInfo(), nil)
	if got := column(t, recs, "n"); !slices.Equal(got, []string{"0"}) {
		t.Fatalf("prepared count %v", got)
	}
}

// Issue 32, item 9: CancelFlightInfo (and the older CancelQuery) stops a
// query: one a DoGet streams is interrupted in the engine and its stream
// ends with Canceled, one GetFlightInfo started and nobody fetched yet is
// stopped and its DoGet fails with Canceled; either way its slot is free
// again.
func TestCancelFlightInfoStopsTheQueryAndFreesItsSlot(t *testing.T) {
	e := start(t)
	c := e.client()
	ctx := context.Background()
	const slow = "SELECT sum(hash(range)) FROM range(100000000000)"

	// Streaming: the DoGet waits for DuckDB's first batch.
	info, err := c.Execute(ctx, slow)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- drain(ctx, c, info, nil) }()
	waitFor(t, "the query runs", func() bool { return e.svc.Table().RunningQueries() == 1 && e.srv.started.len() == 0 })
	asked := time.Now()
	res, err := c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.GetStatus() != flight.CancelStatusCancelled {
		t.Fatalf("cancel: %v, %v", res, err)
	}
	wantStatus(t, "the cancelled stream", <-done, codes.Canceled)
	waitFor(t, "the slot is free", func() bool { return e.svc.Table().RunningQueries() == 0 })
	t.Logf("cancelled and its slot free %v after the request", time.Since(asked).Round(time.Millisecond))

	// Started, not fetched: the older CancelQuery, through arrow-go.
	info, err = c.Execute(ctx, slow)
	if err != nil {
		t.Fatal(err)
	}
	if e.srv.started.len() != 1 {
		t.Fatalf("%d started queries, want 1", e.srv.started.len())
	}
	if r, err := c.CancelQuery(ctx, info); err != nil || r != flightsql.CancelResultCancelled { //nolint:staticcheck // older clients still send it
		t.Fatalf("cancel query: %v, %v", r, err)
	}
	waitFor(t, "the slot is free", func() bool { return e.svc.Table().RunningQueries() == 0 && e.srv.started.len() == 0 })
	wantStatus(t, "the DoGet of a cancelled query", drain(ctx, c, info, nil), codes.Canceled)

	// Something else runs on.
	info, err = c.Execute(ctx, "SELECT 1 AS one")
	_, recs := fetch(t, ctx, c, info, err)
	if got := column(t, recs, "one"); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("after a cancel: %v", got)
	}
}

// Issue 32, item 9: a statement's endpoint carries no expiration time (a
// ticket does not expire: a DoGet after its started query was dropped
// runs the query from it), and RenewFlightEndpoint answers it as it is;
// its ticket still streams the result after the renewal. A ticket that
// is not flightns's is refused.
func TestRenewFlightEndpointAnswersAnEndpointThatDoesNotExpire(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	info, err := c.Execute(ctx, "SELECT count(*) AS n FROM namespaces")
	if err != nil {
		t.Fatal(err)
	}
	ep := info.Endpoint[0]
	if ep.GetExpirationTime() != nil {
		t.Fatalf("the endpoint expires at %v", ep.GetExpirationTime())
	}
	renewed, err := c.RenewFlightEndpoint(ctx, &flight.RenewFlightEndpointRequest{Endpoint: ep})
	if err != nil || renewed.GetExpirationTime() != nil || string(renewed.GetTicket().GetTicket()) != string(ep.GetTicket().GetTicket()) {
		t.Fatalf("renewed %v, %v", renewed, err)
	}
	_, recs := fetch(t, ctx, c, info, nil)
	if got := column(t, recs, "n"); !slices.Equal(got, []string{"2"}) {
		t.Fatalf("after the renewal: %v", got)
	}
	_, err = c.RenewFlightEndpoint(ctx, &flight.RenewFlightEndpointRequest{Endpoint: &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: []byte("forged")}}})
	wantStatus(t, "a forged endpoint", err, codes.InvalidArgument)
}

// Issue 32, item 7: a result column that is a parameter DuckDB cannot
// type has, in the prepared statement's dataset schema, the type it
// streams with once the client binds what the parameter schema asks (a
// string): utf8, not null. A NULL literal stays null.
func TestAPreparedDatasetSchemaIsTheStreamsSchema(t *testing.T) {
	e := start(t)
	c := e.client()
	ctx := context.Background()
	p, err := c.Prepare(ctx, "SELECT NULL AS y, ? AS x")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }()
	ds := p.DatasetSchema()
	if ds == nil || ds.Field(1).Type.ID() != arrow.STRING || ds.Field(0).Type.ID() != arrow.NULL {
		t.Fatalf("dataset schema %v", ds)
	}
	if ps := p.ParameterSchema(); ps == nil || ps.Field(0).Type.ID() != arrow.STRING {
		t.Fatalf("parameter schema %v", ps)
	}
	rec := record("abc")
	p.SetParameters(rec)
	rec.Release()
	info, err := p.Execute(ctx)
	schema, recs := fetch(t, ctx, c, info, err)
	if !schema.Equal(ds) {
		t.Fatalf("streamed %v, declared %v", schema, ds)
	}
	if got := column(t, recs, "x"); !slices.Equal(got, []string{"abc"}) {
		t.Fatalf("x %v", got)
	}
}

package flightserver

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightns/flightns/internal/sqlengine"
)

// countingSQL is the in-process SQL engine, counting what it is asked.
type countingSQL struct {
	tableSQL
	schemas, queries *atomic.Int32
}

func (c countingSQL) Schema(ctx context.Context, query string) (*arrow.Schema, []arrow.DataType, error) {
	c.schemas.Add(1)
	return c.tableSQL.Schema(ctx, query)
}

func (c countingSQL) Query(ctx context.Context, query string, args []any, after uint64) (*sqlengine.Result, error) {
	c.queries.Add(1)
	return c.tableSQL.Query(ctx, query, args, after)
}

// startCounting starts a server whose SQL calls are counted.
func startCounting(t *testing.T, opts ...func(*Config)) (*fenv, *countingSQL) {
	t.Helper()
	return startCountingWithSlots(t, 0, opts...)
}

// startCountingWithSlots is startCounting over a SQL engine that runs n
// queries at once (0: the default).
func startCountingWithSlots(t *testing.T, n int, opts ...func(*Config)) (*fenv, *countingSQL) {
	t.Helper()
	var sq *countingSQL
	e := startWithSlots(t, n, append([]func(*Config){func(c *Config) {
		sq = &countingSQL{tableSQL: tableSQL{t: c.Service.Table()}, schemas: new(atomic.Int32), queries: new(atomic.Int32)}
		c.SQL = sq
	}}, opts...)...)
	return e, sq
}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A statement is planned once: GetFlightInfo starts it (its schema is the
// running query's), and the DoGet streams that very query.
func TestGetFlightInfoStartsTheQueryItsDoGetStreams(t *testing.T) {
	e, sq := startCounting(t)
	e.seed()
	c := e.client()
	ctx := context.Background()

	info, err := c.Execute(ctx, "SELECT object_id FROM namespaces ORDER BY object_id")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := flight.DeserializeSchema(info.Schema, e.srv.alloc)
	if err != nil || schema.NumFields() != 1 || schema.Field(0).Name != "object_id" {
		t.Fatalf("FlightInfo schema %v (%v)", schema, err)
	}
	if got := e.srv.started.len(); got != 1 {
		t.Fatalf("%d started queries wait after GetFlightInfo, want 1", got)
	}
	_, recs := fetch(t, ctx, c, info, nil)
	if got := column(t, recs, "object_id"); !slices.Equal(got, []string{"ops", "sales"}) {
		t.Fatalf("rows %v", got)
	}
	if s, q := sq.schemas.Load(), sq.queries.Load(); s != 0 || q != 1 {
		t.Fatalf("planned %d times and run %d times, want 0 and 1", s, q)
	}
	waitFor(t, "the slot is free after the stream", func() bool { return e.svc.Table().RunningQueries() == 0 })

	// A prepared statement runs with the parameters bound when it was
	// planned, once.
	p, err := c.Prepare(ctx, "SELECT count(*) AS n FROM table_versions WHERE table_id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }()
	sq.schemas.Store(0)
	sq.queries.Store(0)
	rec := record("sales$orders")
	p.SetParameters(rec)
	rec.Release()
	info, err = p.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := record("sales$items")
	p.SetParameters(other)
	other.Release()
	if _, err := p.Execute(ctx); err != nil { // binds sales$items on the server
		t.Fatal(err)
	}
	_, recs = fetch(t, ctx, c, info, nil)
	if got := column(t, recs, "n"); !slices.Equal(got, []string{"3"}) {
		t.Fatalf("count %v, want the 3 versions of sales$orders bound when it was planned", got)
	}
	if s, q := sq.schemas.Load(), sq.queries.Load(); s != 0 || q != 2 {
		t.Fatalf("planned %d times and run %d times for two executions, want 0 and 2", s, q)
	}
}

// A started query nobody fetches is stopped after StalledResultTimeout;
// its ticket still runs (from its text), and unfetched tickets hold at
// most MaxStartedQueries slots, so other queries keep running.
func TestUnfetchedStartedQueriesHoldAQuarterOfTheSlotsAndExpire(t *testing.T) {
	e, sq := startCountingWithSlots(t, 4, func(c *Config) {
		c.Limits.StalledResultTimeout = 500 * time.Millisecond
	})
	c := e.client()
	ctx := context.Background()
	var first *flight.FlightInfo
	for i := 0; i < 50; i++ {
		info, err := c.Execute(ctx, "SELECT 7 AS seven")
		if err != nil {
			t.Fatalf("planning query %d: %v", i, err)
		}
		if i == 0 {
			first = info
		}
	}
	if got := e.srv.started.len(); got != 1 {
		t.Fatalf("%d started queries wait, want MaxStartedQueries = 1", got)
	}
	if got := e.svc.Table().RunningQueries(); got != 1 {
		t.Fatalf("%d slots held by 50 unfetched tickets, want 1", got)
	}
	// Three more clients each hold a running result: every slot is used,
	// and none was refused.
	var held []*flight.Reader
	for i := 0; i < 3; i++ {
		info, err := c.Execute(ctx, "SELECT * FROM range(10000000)")
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatalf("running query %d next to an unfetched one: %v", i, err)
		}
		if !r.Next() {
			t.Fatal(r.Err())
		}
		held = append(held, r)
	}
	for _, r := range held {
		r.Release()
	}
	waitFor(t, "the unfetched started query is stopped and its slot freed", func() bool {
		return e.srv.started.len() == 0 && e.svc.Table().RunningQueries() == 0
	})
	before := sq.queries.Load()
	_, recs := fetch(t, ctx, c, first, nil)
	if got := column(t, recs, "seven"); !slices.Equal(got, []string{"7"}) {
		t.Fatalf("the expired ticket returned %v", got)
	}
	if sq.queries.Load() != before+1 {
		t.Fatal("the expired ticket's query was not run again")
	}
}

// A started query is found only by its own ticket: the same id with
// another text runs that text, and leaves the started query to its owner.
func TestAStartedQueryIsTakenOnlyByItsOwnTicket(t *testing.T) {
	e, sq := startCounting(t)
	c := e.client()
	ctx := context.Background()
	info, err := c.Execute(ctx, "SELECT 'mine' AS who")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := flightsql.GetStatementQueryTicket(info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := parseTicket(tk.GetStatementHandle())
	if err != nil || mine.started == "" {
		t.Fatalf("ticket %+v (%v): no started query", mine, err)
	}
	forged := mine
	forged.payload = "SELECT 'forged' AS who"
	raw, err := forged.encode()
	if err != nil {
		t.Fatal(err)
	}
	_, recs := fetch(t, ctx, c, &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: raw}}}}, nil)
	if got := column(t, recs, "who"); !slices.Equal(got, []string{"forged"}) {
		t.Fatalf("the forged ticket returned %v", got)
	}
	if e.srv.started.len() != 1 {
		t.Fatal("the forged ticket took the started query")
	}
	runs := sq.queries.Load()
	_, recs = fetch(t, ctx, c, info, nil)
	if got := column(t, recs, "who"); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("the owner's ticket returned %v", got)
	}
	if sq.queries.Load() != runs {
		t.Fatal("the owner's started query was run again instead of streamed")
	}
}

// Stopping the server stops the queries started for a DoGet that cannot
// come any more, and frees their slots.
func TestStopStopsStartedQueries(t *testing.T) {
	e := start(t)
	c := e.client()
	if _, err := c.Execute(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if e.srv.started.len() != 1 || e.svc.Table().RunningQueries() != 1 {
		t.Fatalf("%d started, %d slots held before Stop", e.srv.started.len(), e.svc.Table().RunningQueries())
	}
	e.srv.Stop()
	if e.srv.started.len() != 0 || e.svc.Table().RunningQueries() != 0 {
		t.Fatalf("%d started, %d slots held after Stop", e.srv.started.len(), e.svc.Table().RunningQueries())
	}
}

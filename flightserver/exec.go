package flightserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// A query runs at DoGet, as arrow-go's Flight SQL examples do.
// GetFlightInfo passes the text through the gate and returns its result
// schema (the statement is prepared; nothing of it runs) and a ticket
// naming the query and the catalog sequence it must see: with the
// "latest" consistency, the head of the commit log when it was planned.
// A ticket nobody fetches holds nothing on the server. DoGet takes a
// concurrency slot (failing at once when none is free), runs the query
// in the SQL engine under the query time limit, and streams its result
// batch by batch as DuckDB computes it; a client that stops reading for
// StalledResultTimeout loses its query and its slot.

// runQuery starts query and returns its stream. The slot, the engine's
// result and the time limit are released when the stream ends.
// spent is the time its planning already took of the query time limit.
func (s *Server) runQuery(ctx context.Context, query string, args []any, after uint64, spent time.Duration) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	left := s.limits.QueryTimeout - spent
	if left <= 0 {
		return nil, nil, status.Errorf(codes.DeadlineExceeded, "the query ran longer than %s, the server's limit (its planning took %s)",
			s.limits.QueryTimeout, spent.Round(time.Millisecond))
	}
	select {
	case s.slots <- struct{}{}:
	default:
		return nil, nil, limitError("too many concurrent queries (limit %d); retry shortly", s.limits.MaxConcurrentQueries)
	}
	// The query's own context: what is left of its time limit, and the
	// client's cancel.
	qctx, cancel := context.WithTimeout(ctx, left)
	release := func() {
		cancel()
		<-s.slots
	}
	res, err := s.sql.Query(qctx, query, args, after)
	if err != nil {
		err = s.timeoutError(ctx, qctx, err)
		release()
		return nil, nil, err
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(SeqHeader, strconv.FormatUint(res.Seq, 10)))
	ch := make(chan flight.StreamChunk, 1)
	// fail ends the stream with err, unless nobody reads it any more.
	fail := func(err error) {
		select {
		case ch <- flight.StreamChunk{Err: err}:
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	go func() {
		defer close(ch)
		defer release()
		defer res.Release()
		var rows, size int64
		lim := s.limits
		stall := time.NewTimer(lim.StalledResultTimeout)
		defer stall.Stop()
		for res.Next() {
			rec := res.RecordBatch()
			rows += rec.NumRows()
			size += RecordBytes(rec)
			switch {
			case rows > lim.MaxResultRows:
				ch <- flight.StreamChunk{Err: limitError(
					"the result has more than %d rows, the server's limit: narrow the query (WHERE, LIMIT)", lim.MaxResultRows)}
				return
			case size > lim.MaxResultBytes:
				ch <- flight.StreamChunk{Err: limitError(
					"the result is larger than %d bytes, the server's limit: narrow the query (fewer columns, WHERE, LIMIT)", lim.MaxResultBytes)}
				return
			}
			rec.Retain()
			stall.Reset(lim.StalledResultTimeout)
			select {
			case ch <- flight.StreamChunk{Data: rec}:
			case <-qctx.Done():
				// A result cut short must not look complete.
				rec.Release()
				fail(s.timeoutError(ctx, qctx, qctx.Err()))
				return
			case <-stall.C:
				rec.Release()
				s.log.Warn("a client stopped reading its query's result; the query is stopped", "timeout", lim.StalledResultTimeout)
				fail(limitError("the client read nothing for %s: the query was stopped", lim.StalledResultTimeout))
				return
			}
		}
		if err := res.Err(); err != nil {
			fail(s.timeoutError(ctx, qctx, err))
		}
	}()
	return res.Schema(), ch, nil
}

// schema passes query through the gate and returns its schemas, within
// the query time limit (preparing runs nothing, but binding may be slow,
// and a SQL worker may be starting).
func (s *Server) schema(ctx context.Context, query string) (*arrow.Schema, []arrow.DataType, error) {
	qctx, cancel := context.WithTimeout(ctx, s.limits.QueryTimeout)
	defer cancel()
	schema, params, err := s.sql.Schema(qctx, query)
	if err != nil {
		return nil, nil, s.timeoutError(ctx, qctx, err)
	}
	return schema, params, nil
}

// timeoutError names the query time limit when it, and not the client,
// ended the query.
func (s *Server) timeoutError(rpc, qctx context.Context, err error) error {
	if rpc.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return status.Errorf(codes.DeadlineExceeded, "the query ran longer than %s, the server's limit", s.limits.QueryTimeout)
	}
	return err
}

// parked holds plans between the call that plans them (the PlanScan
// action, GetFlightInfo of a plan command) and DoGet, each for at most
// ttl, at most max at once; drop releases one that nobody took in time.
type parked[T comparable] struct {
	ttl  time.Duration
	max  int
	drop func(T)

	mu sync.Mutex
	m  map[string]T
}

func newParked[T comparable](ttl time.Duration, maxN int, drop func(T)) *parked[T] {
	return &parked[T]{ttl: ttl, max: maxN, drop: drop, m: make(map[string]T)}
}

// park stores x and returns its id; x is dropped if it is not taken
// within the TTL.
func (p *parked[T]) park(x T) (string, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	p.mu.Lock()
	if len(p.m) >= p.max {
		p.mu.Unlock()
		p.drop(x)
		return "", limitError("too many plans not yet fetched (limit %d): fetch (DoGet) what you plan", p.max)
	}
	p.m[id] = x
	p.mu.Unlock()
	time.AfterFunc(p.ttl, func() {
		var zero T
		if x := p.take(id); x != zero {
			p.drop(x)
		}
	})
	return id, nil
}

// take removes and returns what is parked under id, or the zero value.
func (p *parked[T]) take(id string) T {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.m[id]
	delete(p.m, id)
	return x
}

// A ticket names a query, the sequence it must see, and how much of its
// time limit its planning took (milliseconds):
// "q3|<after>|<spent>|s|<sql>" for a statement, "q3|<after>|<spent>|p|<handle>"
// for a prepared statement (run with the parameters bound when it is
// fetched). A ticket is the client's: DoGet trusts nothing in it (the SQL
// goes through the gate again; a forged sequence only makes the query
// wait, and a forged planning time only gives it the time it would have
// had, within its time limit).
type ticket struct {
	after         uint64
	spent         time.Duration
	kind, payload string
}

func (t ticket) encode() ([]byte, error) {
	return flightsql.CreateStatementQueryTicket([]byte("q3|" + strconv.FormatUint(t.after, 10) + "|" +
		strconv.FormatInt(t.spent.Milliseconds(), 10) + "|" + t.kind + "|" + t.payload))
}

func parseTicket(handle []byte) (ticket, error) {
	bad := nserror.New(nserror.InvalidInput, "not a flightns statement ticket")
	parts := strings.SplitN(string(handle), "|", 5)
	if len(parts) != 5 || parts[0] != "q3" || (parts[3] != "s" && parts[3] != "p") {
		return ticket{}, bad
	}
	after, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return ticket{}, bad
	}
	ms, err := strconv.ParseUint(parts[2], 10, 32)
	if err != nil {
		return ticket{}, bad
	}
	return ticket{after: after, spent: time.Duration(ms) * time.Millisecond, kind: parts[3], payload: parts[4]}, nil
}

// ConsistencyHeader chooses what a query waits for: "latest" (the
// default) waits until every change acknowledged anywhere before the query
// (table versions included) is visible to SQL; "visible" reads what the
// SQL engine has applied, without waiting or asking Redis.
const ConsistencyHeader = "x-flightns-consistency"

// after is the catalog sequence a query planned now must see, as rpc's
// consistency header asks: with "latest", the head of the commit log,
// whose materialization it also hurries (Flush).
func (s *Server) after(rpc context.Context) (uint64, error) {
	md, _ := metadata.FromIncomingContext(rpc)
	switch c := firstValue(md.Get(ConsistencyHeader)); c {
	case "", "latest":
	case "visible":
		return 0, nil
	default:
		return 0, nserror.New(nserror.InvalidInput, "%s %q: want latest or visible", ConsistencyHeader, c)
	}
	h, err := s.table.Head(rpc)
	if err != nil {
		return 0, nserror.New(nserror.ServiceUnavailable,
			"cannot tell what the newest change is (%v); send %s: visible to read what the server has", err, ConsistencyHeader)
	}
	s.table.Flush(h)
	return h, nil
}

func firstValue(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// tableSQL runs queries in this process's SQL engine.
type tableSQL struct{ t *manifesttable.Table }

func (q tableSQL) Schema(ctx context.Context, query string) (*arrow.Schema, []arrow.DataType, error) {
	return q.t.QuerySchema(ctx, query)
}

func (q tableSQL) Query(ctx context.Context, query string, args []any, after uint64) (*manifesttable.Result, error) {
	return q.t.QueryAfter(ctx, after, query, args...)
}

package flightserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// A query runs once. GetFlightInfo passes the text through the gate and,
// when a slot is free, starts it at once: the running query's result
// schema goes into the FlightInfo, and the query waits, parked under a
// random id the ticket carries, for the DoGet that streams it — so a
// statement is planned once, not once for its schema and again for its
// run. A started query holds its slot; one nobody fetches within
// StalledResultTimeout is stopped and its slot freed, and at most
// MaxStartedQueries wait at once. Without a free slot (or once that many
// wait), GetFlightInfo only plans the statement (nothing of it runs) and
// its DoGet runs it. Either way the ticket names the query and the
// catalog sequence it must see — with the "latest" consistency, the head
// of the commit log when it was planned — so any DoGet that finds no
// started query (expired, or sent to another server) runs it from the
// ticket. DoGet streams the result batch by batch as DuckDB computes it,
// under the query time limit (counted from the planning); a client that
// stops reading for StalledResultTimeout loses its query and its slot.

// running is a query started in the SQL engine, holding a slot: its
// result and its time limit; id is its ticket's query id ("" for none),
// by which CancelFlightInfo finds it.
type running struct {
	res       *sqlengine.Result
	qctx      context.Context
	cancel    context.CancelFunc
	id        string
	cancelled atomic.Bool
}

// errCancelled ends a query CancelFlightInfo (or CancelQuery) cancelled.
var errCancelled = status.Error(codes.Canceled, "the query was cancelled (CancelFlightInfo)")

// liveQueries finds queries by their ticket's query id: those a DoGet
// streams, and the ids cancelled before a DoGet ran them (remembered for
// cancelledTTL, so that DoGet fails instead of running the query).
type liveQueries struct {
	mu        sync.Mutex
	running   map[string]*running
	cancelled map[string]time.Time
}

// cancelledTTL is how long a cancelled id is remembered, and
// maxCancelled how many at most: cancels of forged tickets cannot grow
// the set without bound (past it, a cancel stops what runs but is not
// remembered for a DoGet to come).
const (
	cancelledTTL = 15 * time.Minute
	maxCancelled = 1 << 16
)

func newLiveQueries() *liveQueries {
	return &liveQueries{running: map[string]*running{}, cancelled: map[string]time.Time{}}
}

// add records r as streaming; false if its id was cancelled already.
func (l *liveQueries) add(r *running) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, gone := l.cancelled[r.id]; gone {
		return false
	}
	l.running[r.id] = r
	return true
}

func (l *liveQueries) remove(r *running) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[r.id] == r {
		delete(l.running, r.id)
	}
}

func (l *liveQueries) isCancelled(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, gone := l.cancelled[id]
	return gone
}

// cancel stops the query streaming under id, and makes any later DoGet
// of it fail.
func (l *liveQueries) cancel(id string) {
	l.mu.Lock()
	now := time.Now()
	for k, at := range l.cancelled {
		if now.Sub(at) > cancelledTTL {
			delete(l.cancelled, k)
		}
	}
	if len(l.cancelled) < maxCancelled {
		l.cancelled[id] = now
	}
	r := l.running[id]
	l.mu.Unlock()
	if r != nil {
		r.cancelled.Store(true)
		r.cancel() // the stream sees its context end and says why
	}
}

// liveID is the id under which the query of a ticket's started id runs
// for the caller of ctx: its own (bindingOf), so that a cancel by
// another principal finds nothing ("" for none).
func liveID(ctx context.Context, started string) string {
	if started == "" {
		return ""
	}
	return bindingOf(ctx) + "|" + started
}

// release stops the query, which frees its slot.
func (s *Server) release(r *running) {
	r.res.Release()
	r.cancel()
}

// runQuery starts query and returns its stream. The slot, the engine's
// result and the time limit are released when the stream ends.
// spent is the time its planning already took of the query time limit.
func (s *Server) runQuery(ctx context.Context, id, query string, args []any, after uint64, spent time.Duration) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if id != "" && s.live.isCancelled(id) {
		return nil, nil, errCancelled
	}
	left := s.limits.QueryTimeout - spent
	if left <= 0 {
		return nil, nil, status.Errorf(codes.DeadlineExceeded, "the query ran longer than %s, the server's limit (its planning took %s)",
			s.limits.QueryTimeout, spent.Round(time.Millisecond))
	}
	r, err := s.start(ctx, ctx, query, args, after, left)
	if err != nil {
		return nil, nil, err
	}
	r.id = id
	return s.stream(ctx, r)
}

// start runs query in the SQL engine, which takes one of its slots or
// fails at once with Throttling, under a time limit of left from now,
// within base (which the client's cancel may end); rpc is the call that
// asked.
func (s *Server) start(rpc, base context.Context, query string, args []any, after uint64, left time.Duration) (*running, error) {
	scoped, err := s.scope(rpc, base)
	if err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(scoped, left)
	res, err := s.sql.Query(qctx, query, args, after)
	if err != nil {
		err = s.timeoutError(rpc, qctx, err)
		cancel()
		return nil, err
	}
	return &running{res: res, qctx: qctx, cancel: cancel}, nil
}

// startEarly starts a query GetFlightInfo planned, to be taken by the
// DoGet of the ticket whose kind and payload are what, and returns its
// id and its result schema; no id and a nil error when there is no
// query, no slot is free or MaxStartedQueries already wait (the DoGet
// runs it then).
func (s *Server) startEarly(ctx context.Context, query string, args []any, after uint64, what string) (string, *arrow.Schema, error) {
	owner := bindingOf(ctx)
	if query == "" || s.started.full(owner) {
		return "", nil, nil
	}
	// The query outlives the call that starts it: once started, only its
	// time limit, the TTL of its wait and the DoGet that takes it end it.
	// Until then (its wait for the catalog sequence included), the call's
	// client may.
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unlink := context.AfterFunc(ctx, cancel)
	r, err := s.start(ctx, base, query, args, after, s.limits.QueryTimeout)
	if !unlink() || err != nil {
		cancel()
		switch {
		case err == nil:
			s.release(r)
			err = ctx.Err()
		case nserror.CodeOf(err) == nserror.Throttling:
			return "", nil, nil // no slot free: the DoGet runs it
		}
		return "", nil, err
	}
	stopRun := r.cancel
	r.cancel = func() { stopRun(); cancel() }
	schema := r.res.Schema()
	id, err := s.started.park(r, owner, what)
	if err != nil {
		return "", schema, nil // released by park; the DoGet runs it
	}
	return id, schema, nil
}

// stream streams a running query's result to the DoGet call ctx, which
// also stops it when the client goes away.
func (s *Server) stream(ctx context.Context, r *running) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	res, qctx := r.res, r.qctx
	if r.id != "" {
		if !s.live.add(r) {
			s.release(r)
			return nil, nil, errCancelled
		}
	}
	stop := context.AfterFunc(ctx, r.cancel)
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
		defer s.release(r)
		defer stop()
		if r.id != "" {
			defer s.live.remove(r)
		}
		defer func() { // the handler's recovery does not reach this goroutine
			if v := recover(); v != nil {
				fail(s.recovered("streaming a query's result", v))
			}
		}()
		var rows, size int64
		lim := s.limits
		stall := time.NewTimer(lim.StalledResultTimeout)
		defer stall.Stop()
		for res.Next() {
			rec := res.RecordBatch()
			rows += rec.NumRows()
			size += sqlengine.RecordBytes(rec)
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
				fail(s.endError(ctx, r, qctx.Err()))
				return
			case <-stall.C:
				rec.Release()
				s.log.Warn("a client stopped reading its query's result; the query is stopped", "timeout", lim.StalledResultTimeout)
				fail(limitError("the client read nothing for %s: the query was stopped", lim.StalledResultTimeout))
				return
			}
		}
		if err := res.Err(); err != nil {
			fail(s.endError(ctx, r, err))
		} else if r.cancelled.Load() {
			fail(errCancelled) // cancelled after its last batch: say so
		}
	}()
	return res.Schema(), ch, nil
}

// schema passes query through the gate and returns its schemas, within
// the query time limit (preparing runs nothing, but binding may be slow,
// and a SQL worker may be starting).
func (s *Server) schema(ctx context.Context, query string) (*arrow.Schema, []arrow.DataType, error) {
	scoped, err := s.scope(ctx, ctx)
	if err != nil {
		return nil, nil, err
	}
	qctx, cancel := context.WithTimeout(scoped, s.limits.QueryTimeout)
	defer cancel()
	schema, params, err := s.sql.Schema(qctx, query)
	if err != nil {
		return nil, nil, s.timeoutError(ctx, qctx, err)
	}
	return schema, params, nil
}

// scope is base limited to what the caller of rpc may read
// (sqlengine.Scope): a caller whose access comes from namespace grants
// sees their rows alone, filtered by the engine.
func (s *Server) scope(rpc, base context.Context) (context.Context, error) {
	all, subtrees, err := s.svc.Access().Readable(rpc)
	if err != nil || all {
		return base, err
	}
	sc := &sqlengine.Scope{Sep: api.Delimiter}
	for _, t := range subtrees {
		sc.Subtrees = append(sc.Subtrees, t.String())
	}
	return sqlengine.WithScope(base, sc), nil
}

// endError is why a streaming query ended early: a cancellation, its
// time limit (timeoutError), or err.
func (s *Server) endError(rpc context.Context, r *running, err error) error {
	if r.cancelled.Load() {
		return errCancelled
	}
	return s.timeoutError(rpc, r.qctx, err)
}

// timeoutError names the query time limit when it, and not the client,
// ended the query.
func (s *Server) timeoutError(rpc, qctx context.Context, err error) error {
	if rpc.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return status.Errorf(codes.DeadlineExceeded, "the query ran longer than %s, the server's limit", s.limits.QueryTimeout)
	}
	return err
}

// shares counts what one pool of the server holds, in all and by owner
// (a principal's binding, bindingOf), against the pool's limit and each
// owner's share of it: one principal cannot fill a pool every caller
// needs. Its holder guards it with its own lock.
type shares struct {
	noun    string // what the pool holds, for the errors
	advice  string // what a refused caller should do
	max     int
	share   int
	n       int
	byOwner map[string]int
}

func newShares(noun, advice string, maxN, share int) shares {
	return shares{noun: noun, advice: advice, max: maxN, share: share, byOwner: make(map[string]int)}
}

// admit is nil when owner may add one more, else the Throttling error
// saying which limit stands in the way.
func (s *shares) admit(owner string) error {
	switch {
	case s.n >= s.max:
		return limitError("too many %s (limit %d): %s", s.noun, s.max, s.advice)
	case s.byOwner[owner] >= s.share:
		return limitError("too many %s of yours: %d, your share of the server's %d (the limit per principal); %s", s.noun, s.share, s.max, s.advice)
	}
	return nil
}

func (s *shares) add(owner string) { s.n++; s.byOwner[owner]++ }

func (s *shares) remove(owner string) {
	s.n--
	if s.byOwner[owner]--; s.byOwner[owner] <= 0 {
		delete(s.byOwner, owner)
	}
}

func (s *shares) clear() { s.n, s.byOwner = 0, make(map[string]int) }

// parked holds what a call made for a later DoGet — plans (the PlanScan
// action, GetFlightInfo of a plan command) and started queries — each
// for at most ttl, at most max at once and at most share for one owner
// (a principal's binding, bindingOf); drop releases one that nobody took
// in time. An entry is found only by its id together with its owner and
// what it is for: to anyone else it does not exist.
type parked[T comparable] struct {
	noun      string // what is parked, for the errors
	ttl       time.Duration
	drop      func(T)
	recovered func(where string, v any) error // a panic of drop, in its timer

	mu     sync.Mutex
	m      map[string]parkedEntry[T]
	shares shares
}

type parkedEntry[T any] struct {
	x     T
	owner string
}

func newParked[T comparable](noun string, ttl time.Duration, maxN, share int, drop func(T), recovered func(string, any) error) *parked[T] {
	return &parked[T]{noun: noun, ttl: ttl, drop: drop, recovered: recovered, m: make(map[string]parkedEntry[T]),
		shares: newShares(noun+" not yet fetched", "fetch (DoGet) what you plan", maxN, share)}
}

// newQueryID is a random id for a query or a plan.
func newQueryID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// full reports whether nothing more may be parked for owner: the pool or
// owner's share of it is full.
func (p *parked[T]) full(owner string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shares.admit(owner) != nil
}

// park stores x for owner and returns its id; x is dropped if it is not
// taken within the TTL. Only a take that names the same owner and what
// finds it. Past the pool's limit or owner's share, x is dropped and the
// error (Throttling) says which.
func (p *parked[T]) park(x T, owner, what string) (string, error) {
	id := newQueryID()
	p.mu.Lock()
	if err := p.shares.admit(owner); err != nil {
		p.mu.Unlock()
		p.drop(x)
		return "", err
	}
	key := id + "|" + owner + "|" + what
	p.m[key] = parkedEntry[T]{x: x, owner: owner}
	p.shares.add(owner)
	p.mu.Unlock()
	time.AfterFunc(p.ttl, func() {
		defer func() {
			if v := recover(); v != nil {
				_ = p.recovered("dropping unfetched "+p.noun, v)
			}
		}()
		var zero T
		if x := p.takeKey(key); x != zero {
			p.drop(x)
		}
	})
	return id, nil
}

// take removes and returns what is parked under id for owner and what,
// or the zero value.
func (p *parked[T]) take(id, owner, what string) T { return p.takeKey(id + "|" + owner + "|" + what) }

func (p *parked[T]) takeKey(key string) T {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[key]
	if !ok {
		var zero T
		return zero
	}
	delete(p.m, key)
	p.shares.remove(e.owner)
	return e.x
}

// dropAll drops everything parked.
func (p *parked[T]) dropAll() {
	p.mu.Lock()
	all := p.m
	p.m = make(map[string]parkedEntry[T])
	p.shares.clear()
	p.mu.Unlock()
	for _, e := range all {
		p.drop(e.x)
	}
}

func (p *parked[T]) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// A ticket names a query, the sequence it must see, how much of its time
// limit its planning took (milliseconds), and the id of the query
// GetFlightInfo started for it, if any:
// "q4|<after>|<spent>|s|<started>|<sql>" for a statement,
// "q4|<after>|<spent>|p|<started>|<handle>" for a prepared statement (run
// with the parameters bound when it was planned, or else when it is
// fetched). A ticket is the client's: DoGet trusts nothing in it (the SQL
// goes through the gate again; a forged sequence only makes the query
// wait, a forged planning time only gives it the time it would have had,
// within its time limit, and a started query is found only by its random
// id together with the very text or handle it runs).
type ticket struct {
	after         uint64
	spent         time.Duration
	kind, payload string
	started       string
}

// what is the ticket's query, as a started query is parked under.
func (t ticket) what() string { return t.kind + "|" + t.payload }

func (t ticket) encode() ([]byte, error) {
	return flightsql.CreateStatementQueryTicket([]byte("q4|" + strconv.FormatUint(t.after, 10) + "|" +
		strconv.FormatInt(t.spent.Milliseconds(), 10) + "|" + t.kind + "|" + t.started + "|" + t.payload))
}

func parseTicket(handle []byte) (ticket, error) {
	bad := nserror.New(nserror.InvalidInput, "not a flightns statement ticket")
	parts := strings.SplitN(string(handle), "|", 6)
	if len(parts) != 6 || parts[0] != "q4" || (parts[3] != "s" && parts[3] != "p") {
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
	return ticket{after: after, spent: time.Duration(ms) * time.Millisecond, kind: parts[3], started: parts[4], payload: parts[5]}, nil
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

func (q tableSQL) Query(ctx context.Context, query string, args []any, after uint64) (*sqlengine.Result, error) {
	return q.t.QueryAfter(ctx, after, query, args...)
}

func (q tableSQL) MaxQueries() int { return q.t.MaxQueries() }

// Query runs query with args for the caller of ctx (auth.WithPrincipal)
// as a Flight SQL statement runs: through the gate, in the caller's
// scope, in one of the shared slots, under the query time limit and the
// result limits, seeing the catalog's latest change. The web console's
// SQL runs here. Ending ctx stops the query; the caller reads the channel
// to its end (releasing each batch).
func (s *Server) Query(ctx context.Context, query string, args ...any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	start := time.Now()
	after, err := s.after(ctx)
	if err != nil {
		return nil, nil, err
	}
	return s.runQuery(ctx, newQueryID(), query, args, after, time.Since(start))
}

package flightserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// SeqHeader is the response header that names the catalog sequence a
// query's result reflects: every row of one result is read at that one
// sequence.
const SeqHeader = "x-flightns-catalog-seq"

// sqlServer answers the Flight SQL commands. Each method is short and
// hands off to the manifest table's SQL engine; statement tickets carry
// their SQL, prepared statements live in a set with an idle TTL.
type sqlServer struct {
	flightsql.BaseServer
	s *Server
}

var errNoTransactions = nserror.New(nserror.InvalidInput, "transactions are not supported: every query reads one consistent catalog sequence")

// infoFor is the FlightInfo of a command answered by one DoGet of the
// command itself.
func (q *sqlServer) infoFor(desc *flight.FlightDescriptor, schema *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		FlightDescriptor: desc,
		Schema:           flight.SerializeSchema(schema, q.s.alloc),
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// GetFlightInfoStatement plans an ad-hoc query: the gate, its schema, and
// a ticket that runs it.
func (q *sqlServer) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return nil, errNoTransactions
	}
	return q.plannedInfo(ctx, desc, nil, ticket{kind: "s", payload: cmd.GetQuery()}, cmd.GetQuery(), nil)
}

// PollFlightInfoStatement answers ADBC's incremental execution: the
// query is planned (and started, when a slot is free) as GetFlightInfo
// does, and the answer is complete at once (progress 1, no descriptor to
// poll again): its one endpoint streams the whole result.
func (q *sqlServer) PollFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	return polled(q.GetFlightInfoStatement(ctx, cmd, desc))
}

// PollFlightInfoPreparedStatement is PollFlightInfoStatement for a
// prepared statement.
func (q *sqlServer) PollFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	return polled(q.GetFlightInfoPreparedStatement(ctx, cmd, desc))
}

// polled is a FlightInfo as a complete PollInfo.
func polled(info *flight.FlightInfo, err error) (*flight.PollInfo, error) {
	if err != nil {
		return nil, err
	}
	done := 1.0
	return &flight.PollInfo{Info: info, Progress: &done}, nil
}

// plannedInfo returns the FlightInfo whose ticket t runs query with args
// (t's sequence and planning time are filled in here). It starts the
// query when it can (see exec.go); otherwise it plans it, unless schema
// is already known.
func (q *sqlServer) plannedInfo(ctx context.Context, desc *flight.FlightDescriptor, schema *arrow.Schema, t ticket, query string, args []any) (*flight.FlightInfo, error) {
	start := time.Now()
	after, err := q.s.after(ctx)
	if err != nil {
		return nil, err
	}
	id, started, err := q.s.startEarly(ctx, query, args, after, t.what())
	switch {
	case err != nil:
		return nil, err
	case started != nil:
		schema = started
	case schema == nil:
		if schema, _, err = q.s.schema(ctx, query); err != nil {
			return nil, err
		}
	}
	if id == "" { // not started: still an id, for CancelFlightInfo
		id = newQueryID()
	}
	t.after, t.spent, t.started = after, time.Since(start), id
	tk, err := t.encode()
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tk}}},
		FlightDescriptor: desc,
		Schema:           flight.SerializeSchema(schema, q.s.alloc),
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// GetSchemaStatement returns an ad-hoc query's result schema.
func (q *sqlServer) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	schema, _, err := q.s.schema(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, q.s.alloc)}, nil
}

// DoGetStatement runs the query a ticket names and streams its result.
func (q *sqlServer) DoGetStatement(ctx context.Context, tk flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	t, err := parseTicket(tk.GetStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	id := liveID(ctx, t.started)
	if r := q.s.started.take(t.started, bindingOf(ctx), t.what()); r != nil {
		r.id = id
		return q.s.stream(ctx, r)
	}
	if t.kind == "p" {
		return q.runPrepared(ctx, id, []byte(t.payload), t.after, t.spent)
	}
	return q.s.runQuery(ctx, id, t.payload, nil, t.after, t.spent)
}

// statementTicket reads the flightns statement ticket of an endpoint's
// ticket; a missing one, or one that is not flightns's, is InvalidInput.
func statementTicket(tk *flight.Ticket) (ticket, error) {
	if tk == nil {
		return ticket{}, nserror.New(nserror.InvalidInput, "no ticket: not a flightns statement endpoint")
	}
	tq, err := flightsql.GetStatementQueryTicket(tk)
	if err != nil {
		return ticket{}, nserror.New(nserror.InvalidInput, "not a flightns statement ticket")
	}
	return parseTicket(tq.GetStatementHandle())
}

// CancelFlightInfo cancels the queries of a FlightInfo's endpoints (and
// CancelQuery, which arrow-go hands here): one GetFlightInfo started
// and nobody fetched is stopped, its slot freed; one a DoGet streams is
// interrupted, and the stream ends with Canceled; one not run yet never
// runs (its DoGet fails with Canceled). A ticket is its holder's
// capability: its random query id, with the principal that holds it
// (auth.go), is what finds the query; endpoints without a flightns
// ticket are passed over.
func (q *sqlServer) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	st := flight.CancelStatusNotCancellable
	for _, ep := range req.GetInfo().GetEndpoint() {
		t, err := statementTicket(ep.GetTicket())
		if err != nil || t.started == "" {
			continue
		}
		q.s.live.cancel(liveID(ctx, t.started))
		if r := q.s.started.take(t.started, bindingOf(ctx), t.what()); r != nil {
			q.s.release(r)
		}
		st = flight.CancelStatusCancelled
	}
	return flight.CancelFlightInfoResult{Status: st}, nil
}

// RenewFlightEndpoint answers a statement's endpoint as it is: its ticket
// carries no expiration time because it does not expire — a DoGet that
// comes after a started query was dropped runs the query from the ticket
// (exec.go) — so there is nothing to extend. A request without an
// endpoint, or whose endpoint has no ticket or one that is not
// flightns's, is InvalidArgument.
func (q *sqlServer) RenewFlightEndpoint(_ context.Context, req *flight.RenewFlightEndpointRequest) (*flight.FlightEndpoint, error) {
	ep := req.GetEndpoint()
	if ep == nil {
		return nil, nserror.New(nserror.InvalidInput, "RenewFlightEndpoint needs the endpoint to renew")
	}
	if _, err := statementTicket(ep.GetTicket()); err != nil {
		return nil, nserror.New(nserror.InvalidInput, "not a flightns statement endpoint")
	}
	return ep, nil
}

// DoPutCommandStatementUpdate refuses: SQL is read-only. The text goes
// through the gate like any other, so the refusal names its statement.
func (q *sqlServer) DoPutCommandStatementUpdate(ctx context.Context, cmd flightsql.StatementUpdate) (int64, error) {
	if _, _, err := q.s.schema(ctx, cmd.GetQuery()); err != nil {
		return 0, err
	}
	return 0, errUpdateOfQuery
}

var errUpdateOfQuery = nserror.New(nserror.PermissionDenied, "an update of a query changes nothing: run it with Execute (or prepare it); flightns SQL only reads")

// DoPutPreparedStatementUpdate refuses: SQL is read-only.
func (q *sqlServer) DoPutPreparedStatementUpdate(context.Context, flightsql.PreparedStatementUpdate, flight.MessageReader) (int64, error) {
	return 0, manifesttable.ErrReadOnly
}

// DoPutCommandStatementIngest refuses: SQL is read-only.
func (q *sqlServer) DoPutCommandStatementIngest(context.Context, flightsql.StatementIngest, flight.MessageReader) (int64, error) {
	return 0, manifesttable.ErrReadOnly
}

// BeginTransaction refuses: there are no transactions.
func (q *sqlServer) BeginTransaction(context.Context, flightsql.ActionBeginTransactionRequest) ([]byte, error) {
	return nil, errNoTransactions
}

// CreatePreparedStatement prepares a query: it returns the result schema
// (JDBC treats a statement without one as an update), the parameter
// schema, IsUpdate=false, and a handle that lives until closed or idle for
// the prepared-statement TTL.
func (q *sqlServer) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var none flightsql.ActionCreatePreparedStatementResult
	if len(req.GetTransactionId()) > 0 {
		return none, errNoTransactions
	}
	schema, ptypes, err := q.s.schema(ctx, req.GetQuery())
	if err != nil {
		return none, err
	}
	fields := make([]arrow.Field, len(ptypes))
	for i, t := range ptypes {
		fields[i] = arrow.Field{Name: "$" + strconv.Itoa(i+1), Type: t, Nullable: true}
	}
	params := arrow.NewSchema(fields, nil)
	handle, err := q.s.prepared.add(&prepared{query: req.GetQuery(), schema: schema, params: params, owner: bindingOf(ctx)})
	if err != nil {
		return none, err
	}
	isUpdate := false
	return flightsql.ActionCreatePreparedStatementResult{
		Handle: handle, DatasetSchema: schema, ParameterSchema: params, IsUpdate: &isUpdate,
	}, nil
}

// ClosePreparedStatement forgets a handle; closing an unknown one is not
// an error (it may have expired).
func (q *sqlServer) ClosePreparedStatement(ctx context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	q.s.prepared.remove(req.GetPreparedStatementHandle(), bindingOf(ctx))
	return nil
}

// GetFlightInfoPreparedStatement plans a prepared query: its ticket runs
// it with the parameters bound when it is fetched.
func (q *sqlServer) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	handle := cmd.GetPreparedStatementHandle()
	p, err := q.s.prepared.get(handle, bindingOf(ctx))
	if err != nil {
		return nil, err
	}
	query := p.query
	if len(p.args) != len(p.params.Fields()) || len(p.more) > 0 {
		query = "" // not started: its DoGet says what is missing, or runs each row set
	}
	return q.plannedInfo(ctx, desc, p.schema, ticket{kind: "p", payload: string(handle)}, query, p.args)
}

// runPrepared runs a prepared statement with its bound parameters, under
// the query id of its ticket (id; "" for none).
func (q *sqlServer) runPrepared(ctx context.Context, id string, handle []byte, after uint64, spent time.Duration) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	p, err := q.s.prepared.get(handle, bindingOf(ctx))
	if err != nil {
		return nil, nil, err
	}
	if len(p.args) != len(p.params.Fields()) {
		return nil, nil, nserror.New(nserror.InvalidInput, "the prepared query takes %d parameters and %d are bound", len(p.params.Fields()), len(p.args))
	}
	schema, first, err := q.s.runQuery(ctx, id, p.query, p.args, after, spent)
	if err != nil || len(p.more) == 0 {
		return schema, first, err
	}
	// Several row sets: the query runs once per set, one after the other
	// (one slot at a time, within one time limit), their results in one
	// stream, in the order of the sets.
	out := make(chan flight.StreamChunk, 1)
	began := time.Now()
	go func() {
		defer close(out)
		defer func() { // the handler's recovery does not reach this goroutine
			if v := recover(); v != nil {
				select {
				case out <- flight.StreamChunk{Err: q.s.recovered("streaming a prepared query's row sets", v)}:
				case <-ctx.Done():
				}
			}
		}()
		if !relay(ctx, first, out) {
			return
		}
		for _, args := range p.more {
			_, next, err := q.s.runQuery(ctx, id, p.query, args, after, spent+time.Since(began))
			if err != nil {
				select {
				case out <- flight.StreamChunk{Err: err}:
				case <-ctx.Done():
				}
				return
			}
			if !relay(ctx, next, out) {
				return
			}
		}
	}()
	return schema, out, nil
}

// relay passes one query's stream on to out until it ends (true) or
// fails or its client goes (false); what is left of it is drained.
func relay(ctx context.Context, in <-chan flight.StreamChunk, out chan<- flight.StreamChunk) bool {
	defer func() {
		for c := range in {
			if c.Data != nil {
				c.Data.Release()
			}
		}
	}()
	for c := range in {
		select {
		case out <- c:
		case <-ctx.Done():
			if c.Data != nil {
				c.Data.Release()
			}
			return false
		}
		if c.Err != nil {
			return false
		}
	}
	return true
}

// GetSchemaPreparedStatement returns a prepared query's result schema.
func (q *sqlServer) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	p, err := q.s.prepared.get(cmd.GetPreparedStatementHandle(), bindingOf(ctx))
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(p.schema, q.s.alloc)}, nil
}

// DoGetPreparedStatement runs a prepared query with its bound parameters
// (for clients that fetch with the command itself as the ticket).
func (q *sqlServer) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	after, err := q.s.after(ctx)
	if err != nil {
		return nil, nil, err
	}
	return q.runPrepared(ctx, "", cmd.GetPreparedStatementHandle(), after, 0)
}

// MaxParameterSets bounds the row sets one bind may hold.
const MaxParameterSets = 1024

// DoPutPreparedStatementQuery binds parameters: one column per
// parameter, one row per set (at least one, at most MaxParameterSets);
// with several, the query runs once per set and answers their results
// one after the other.
func (q *sqlServer) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, r flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	handle := cmd.GetPreparedStatementHandle()
	owner := bindingOf(ctx)
	p, err := q.s.prepared.get(handle, owner)
	if err != nil {
		return nil, err
	}
	var sets [][]any
	for r.Next() {
		rec := r.RecordBatch()
		if err := validParams(rec); err != nil {
			return nil, err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if len(sets) == MaxParameterSets {
				return nil, limitError("a bind holds at most %d rows of parameters", MaxParameterSets)
			}
			args, err := rowValues(rec, i)
			if err != nil {
				return nil, err
			}
			if want := len(p.params.Fields()); len(args) != want {
				return nil, nserror.New(nserror.InvalidInput, "the prepared query takes %d parameters, %d were bound", want, len(args))
			}
			sets = append(sets, args)
		}
	}
	if err := r.Err(); err != nil {
		return nil, nserror.New(nserror.InvalidInput, "reading the parameters: %v", err)
	}
	if len(sets) == 0 {
		return nil, nserror.New(nserror.InvalidInput, "bind at least one row of parameters (got none)")
	}
	q.s.prepared.bind(handle, owner, sets)
	return handle, nil
}

// prepared is one prepared query and its bound parameters, bound to the
// principal that prepared it (owner: bindingOf).
type prepared struct {
	query  string
	schema *arrow.Schema
	params *arrow.Schema
	args   []any   // the first row set bound
	more   [][]any // the sets after it
	owner  string
	used   time.Time
}

// preparedSet holds the prepared statements of every client, each until
// it is closed or idle for ttl; at most max at once, and at most share
// of one principal. A handle finds its statement only for the principal
// that prepared it: to another one it is unknown.
type preparedSet struct {
	ttl time.Duration
	now func() time.Time

	mu     sync.Mutex
	m      map[string]*prepared
	shares shares
}

func newPreparedSet(ttl time.Duration, maxN, share int) *preparedSet {
	return &preparedSet{ttl: ttl, now: time.Now, m: make(map[string]*prepared),
		shares: newShares("open prepared statements", "close the ones you are done with", maxN, share)}
}

func (ps *preparedSet) add(p *prepared) ([]byte, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	handle := []byte(hex.EncodeToString(b[:]))
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := ps.now()
	for k, old := range ps.m {
		if now.Sub(old.used) > ps.ttl {
			ps.deleteLocked(k)
		}
	}
	if err := ps.shares.admit(p.owner); err != nil {
		return nil, err
	}
	p.used = now
	ps.m[string(handle)] = p
	ps.shares.add(p.owner)
	return handle, nil
}

func (ps *preparedSet) deleteLocked(handle string) {
	p, ok := ps.m[handle]
	if !ok {
		return
	}
	delete(ps.m, handle)
	ps.shares.remove(p.owner)
}

// errUnknownPrepared answers a handle that names no live statement of
// the caller's: never prepared, closed, expired, or another principal's.
func (ps *preparedSet) errUnknownPrepared() error {
	return nserror.New(nserror.InvalidInput,
		"unknown or expired prepared statement (statements expire after %s idle): prepare it again", ps.ttl)
}

// get returns a copy of a live prepared statement of owner's and marks it
// used.
func (ps *preparedSet) get(handle []byte, owner string) (prepared, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[string(handle)]
	if !ok || p.owner != owner {
		return prepared{}, ps.errUnknownPrepared()
	}
	now := ps.now()
	if now.Sub(p.used) > ps.ttl {
		ps.deleteLocked(string(handle))
		return prepared{}, ps.errUnknownPrepared()
	}
	p.used = now
	return *p, nil
}

func (ps *preparedSet) bind(handle []byte, owner string, sets [][]any) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.m[string(handle)]; ok && p.owner == owner {
		p.args, p.more = sets[0], sets[1:]
	}
}

// remove closes owner's statement; another principal's stays open.
func (ps *preparedSet) remove(handle []byte, owner string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.m[string(handle)]; ok && p.owner == owner {
		ps.deleteLocked(string(handle))
	}
}

func (ps *preparedSet) len() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.m)
}

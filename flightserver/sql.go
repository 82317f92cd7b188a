package flightserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
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

// GetFlightInfoStatement plans an ad-hoc query: its result schema, and a
// ticket that carries the SQL to DoGet.
func (q *sqlServer) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return nil, errNoTransactions
	}
	schema, _, err := q.s.table.QuerySchema(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	ticket, err := flightsql.CreateStatementQueryTicket([]byte(cmd.GetQuery()))
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		FlightDescriptor: desc,
		Schema:           flight.SerializeSchema(schema, q.s.alloc),
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// GetSchemaStatement returns an ad-hoc query's result schema.
func (q *sqlServer) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	schema, _, err := q.s.table.QuerySchema(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, q.s.alloc)}, nil
}

// DoGetStatement runs the query a statement ticket carries.
func (q *sqlServer) DoGetStatement(ctx context.Context, t flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return q.run(ctx, string(t.GetStatementHandle()), nil)
}

// run executes one query under the limits and streams its batches. The
// query holds a concurrency slot and its time limit until its last batch
// is sent or the client goes away.
func (q *sqlServer) run(ctx context.Context, query string, args []any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	lim := q.s.limits
	select {
	case q.s.slots <- struct{}{}:
	default:
		return nil, nil, status.Errorf(codes.ResourceExhausted,
			"too many concurrent queries (limit %d); retry shortly", lim.MaxConcurrentQueries)
	}
	qctx, cancel := context.WithTimeout(ctx, lim.QueryTimeout)
	err := q.catchUp(qctx)
	var res *manifesttable.Result
	if err == nil {
		res, err = q.s.table.Query(qctx, query, args...)
	}
	if err != nil {
		err = q.timeoutError(ctx, qctx, err)
		cancel()
		<-q.s.slots
		return nil, nil, err
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(SeqHeader, strconv.FormatUint(res.Seq, 10)))
	ch := make(chan flight.StreamChunk, 1)
	go func() {
		defer func() { <-q.s.slots }()
		defer cancel()
		defer close(ch)
		defer res.Release()
		var rows, size int64
		fail := func(err error) { ch <- flight.StreamChunk{Err: err} }
		for res.Next() {
			rec := res.RecordBatch()
			rows += rec.NumRows()
			size += recordBytes(rec)
			switch {
			case lim.MaxResultRows > 0 && rows > lim.MaxResultRows:
				fail(status.Errorf(codes.ResourceExhausted,
					"the result has more than %d rows, the server's limit: narrow the query (WHERE, LIMIT)", lim.MaxResultRows))
				return
			case lim.MaxResultBytes > 0 && size > lim.MaxResultBytes:
				fail(status.Errorf(codes.ResourceExhausted,
					"the result is larger than %d bytes, the server's limit: narrow the query (fewer columns, WHERE, LIMIT)", lim.MaxResultBytes))
				return
			case qctx.Err() != nil:
				fail(q.timeoutError(ctx, qctx, qctx.Err()))
				return
			}
			rec.Retain()
			select {
			case ch <- flight.StreamChunk{Data: rec}:
			case <-ctx.Done():
				rec.Release()
				return
			}
		}
		if err := res.Err(); err != nil {
			fail(q.timeoutError(ctx, qctx, err))
		}
	}()
	return res.Schema(), ch, nil
}

// ConsistencyHeader chooses what a query waits for: "latest" (the
// default) waits until every change acknowledged anywhere before the query
// (table versions included) is visible to SQL; "visible" reads what this
// server has applied, without waiting or asking Redis.
const ConsistencyHeader = "x-flightns-consistency"

// catchUp waits as the query's consistency asks.
func (q *sqlServer) catchUp(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	switch c := firstValue(md.Get(ConsistencyHeader)); c {
	case "", "latest":
	case "visible":
		return nil
	default:
		return nserror.New(nserror.InvalidInput, "%s %q: want latest or visible", ConsistencyHeader, c)
	}
	if err := q.s.table.WaitCaughtUp(ctx); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return nserror.New(nserror.ServiceUnavailable,
			"cannot tell what the newest change is (%v); send %s: visible to read what this server has", err, ConsistencyHeader)
	}
	return nil
}

func firstValue(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// timeoutError names the query time limit when it, and not the client,
// ended the query.
func (q *sqlServer) timeoutError(ctx, qctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return status.Errorf(codes.DeadlineExceeded, "the query ran longer than %s, the server's limit", q.s.limits.QueryTimeout)
	}
	return err
}

// DoPutCommandStatementUpdate refuses: SQL is read-only.
func (q *sqlServer) DoPutCommandStatementUpdate(context.Context, flightsql.StatementUpdate) (int64, error) {
	return 0, manifesttable.ErrReadOnly
}

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
	schema, ptypes, err := q.s.table.QuerySchema(ctx, req.GetQuery())
	if err != nil {
		return none, err
	}
	fields := make([]arrow.Field, len(ptypes))
	for i, t := range ptypes {
		fields[i] = arrow.Field{Name: "$" + strconv.Itoa(i+1), Type: t, Nullable: true}
	}
	params := arrow.NewSchema(fields, nil)
	handle, err := q.s.prepared.add(&prepared{query: req.GetQuery(), schema: schema, params: params})
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
func (q *sqlServer) ClosePreparedStatement(_ context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	q.s.prepared.remove(req.GetPreparedStatementHandle())
	return nil
}

// GetFlightInfoPreparedStatement plans a prepared query with its bound
// parameters.
func (q *sqlServer) GetFlightInfoPreparedStatement(_ context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	p, err := q.s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return q.infoFor(desc, p.schema), nil
}

// GetSchemaPreparedStatement returns a prepared query's result schema.
func (q *sqlServer) GetSchemaPreparedStatement(_ context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	p, err := q.s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(p.schema, q.s.alloc)}, nil
}

// DoGetPreparedStatement runs a prepared query with its bound parameters.
func (q *sqlServer) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	p, err := q.s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	if len(p.args) != len(p.params.Fields()) {
		return nil, nil, nserror.New(nserror.InvalidInput, "the prepared query takes %d parameters and %d are bound", len(p.params.Fields()), len(p.args))
	}
	return q.run(ctx, p.query, p.args)
}

// DoPutPreparedStatementQuery binds parameters: exactly one row, one
// column per parameter.
func (q *sqlServer) DoPutPreparedStatementQuery(_ context.Context, cmd flightsql.PreparedStatementQuery, r flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	handle := cmd.GetPreparedStatementHandle()
	p, err := q.s.prepared.get(handle)
	if err != nil {
		return nil, err
	}
	var args []any
	rows := int64(0)
	for r.Next() {
		rec := r.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rows += rec.NumRows()
		if rows > 1 {
			break
		}
		if args, err = rowValues(rec, 0); err != nil {
			return nil, err
		}
	}
	if err := r.Err(); err != nil {
		return nil, nserror.New(nserror.InvalidInput, "reading the parameters: %v", err)
	}
	if rows != 1 {
		return nil, nserror.New(nserror.InvalidInput, "bind exactly one row of parameters (got %d)", rows)
	}
	if want := len(p.params.Fields()); len(args) != want {
		return nil, nserror.New(nserror.InvalidInput, "the prepared query takes %d parameters, %d were bound", want, len(args))
	}
	q.s.prepared.bind(handle, args)
	return handle, nil
}

// prepared is one prepared query and its bound parameters.
type prepared struct {
	query  string
	schema *arrow.Schema
	params *arrow.Schema
	args   []any
	used   time.Time
}

// preparedSet holds the prepared statements of every client, each until
// it is closed or idle for ttl; at most max at once.
type preparedSet struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu sync.Mutex
	m  map[string]*prepared
}

func newPreparedSet(ttl time.Duration, maxN int) *preparedSet {
	return &preparedSet{ttl: ttl, max: maxN, now: time.Now, m: make(map[string]*prepared)}
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
			delete(ps.m, k)
		}
	}
	if len(ps.m) >= ps.max {
		return nil, status.Errorf(codes.ResourceExhausted, "too many open prepared statements (limit %d): close the ones you are done with", ps.max)
	}
	p.used = now
	ps.m[string(handle)] = p
	return handle, nil
}

// get returns a copy of a live prepared statement and marks it used.
func (ps *preparedSet) get(handle []byte) (prepared, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[string(handle)]
	now := ps.now()
	if !ok || now.Sub(p.used) > ps.ttl {
		delete(ps.m, string(handle))
		return prepared{}, nserror.New(nserror.InvalidInput,
			"unknown or expired prepared statement (statements expire after %s idle): prepare it again", ps.ttl)
	}
	p.used = now
	return *p, nil
}

func (ps *preparedSet) bind(handle []byte, args []any) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.m[string(handle)]; ok {
		p.args = args
	}
}

func (ps *preparedSet) remove(handle []byte) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.m, string(handle))
}

func (ps *preparedSet) len() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.m)
}

// recordBytes is the size of a batch's buffers.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}

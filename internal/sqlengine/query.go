//go:build duckdb_arrow

package sqlengine

import (
	"context"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2/arrowmapping"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/flightns/flightns/nserror"
)

// interruptEvery is how often a stopped request re-asserts its interrupt
// while DuckDB has not returned (DuckDB clears an interrupt when a new
// task starts).
const interruptEvery = 100 * time.Millisecond

// request is one query's hold on the engine: a concurrency slot, a new
// connection in a read-only transaction, and an interrupter that stops
// whatever the connection runs once ctx ends (deadline, cancel).
type request struct {
	e      *DB
	pool   chan struct{} // the slot's
	conn   *duckConn
	id     uint64 // DuckDB's connection id (table functions find ctx by it)
	scope  *Scope // what it may see (nil: everything; scope.go)
	stopIn func()
	once   sync.Once
}

// begin takes a slot of pool (waiting for one within ctx) and opens the
// request. Queries that run and statements only planned (a schema) have
// pools of their own, so planning never waits behind running queries.
func (e *DB) begin(ctx context.Context, pool chan struct{}) (*request, error) {
	if pool == e.slots {
		// A query runs at once or not at all: a caller past the bound is
		// told to retry rather than queued behind queries that may run
		// for minutes.
		select {
		case pool <- struct{}{}:
		default:
			return nil, nserror.New(nserror.Throttling, "too many concurrent queries (limit %d); retry shortly", cap(pool))
		}
	} else {
		select {
		case pool <- struct{}{}:
		case <-ctx.Done():
			return nil, nserror.New(nserror.Throttling, "every SQL planning slot is busy (limit %d): %w", cap(pool), ctx.Err())
		}
	}
	conn, err := e.duck.connect()
	if err != nil {
		<-pool
		return nil, err
	}
	r := &request{e: e, pool: pool, conn: conn, id: connectionID(conn), scope: ScopeFrom(ctx)}
	e.ctxs.Store(r.id, ctx)
	r.stopIn = interrupter(ctx, conn, interruptEvery)
	open := "USE " + DatabaseName + "; "
	if r.scope != nil {
		open = setScope(r.scope)
	}
	if err := conn.run(open + "BEGIN TRANSACTION READ ONLY"); err != nil {
		r.end()
		return nil, err
	}
	return r, nil
}

// end releases everything the request holds; it may be called more than
// once.
func (r *request) end() {
	r.once.Do(func() {
		r.stopIn()
		_ = r.conn.run("ROLLBACK")
		r.e.ctxs.Delete(r.id)
		r.conn.close()
		<-r.pool
	})
}

// screened refuses q, for a scoped request, unless it passes screen.
func (r *request) screened(q string) error {
	if r.scope == nil {
		return nil
	}
	return r.screen(q)
}

// admit passes q through the gate (admit), a scoped request's through
// its screen first.
func (r *request) admit(q string, args []any) (*admitted, error) {
	if err := r.screened(q); err != nil {
		return nil, err
	}
	return admit(r.conn, q, args)
}

func connectionID(conn *duckConn) uint64 {
	var cc mapping.ClientContext
	mapping.ConnectionGetClientContext(conn.c, &cc)
	defer mapping.DestroyClientContext(&cc)
	return uint64(mapping.ClientContextGetConnectionId(cc))
}

// Query runs one read-only statement, classified by the gate, and
// streams its result, which reports the catalog sequence it reflects:
// binding the statement takes the transaction's snapshot, so when no
// commit began or ended around the bind, the sequence visible before it
// is the snapshot's; otherwise the transaction's _meta row says.
func (e *DB) Query(ctx context.Context, q string, args ...any) (*Result, error) {
	r, err := e.begin(ctx, e.slots)
	if err != nil {
		return nil, err
	}
	g := e.commits.Load()
	seq := e.Visible()
	if args == nil {
		args = []any{}
	}
	a, err := r.admit(q, args)
	if err == nil && (g%2 != 0 || e.commits.Load() != g) {
		// The bind took the snapshot; the transaction names its sequence.
		if seq, err = r.conn.uint64Of("SELECT seq FROM _meta"); err != nil {
			mapping.DestroyPrepare(&a.ps)
		}
	}
	if err == nil {
		err = a.pend()
	}
	if err != nil {
		r.end()
		return nil, stopped(ctx, err)
	}
	dr := &duckResult{req: r, a: a, refs: 1}
	fail := func(err error) (*Result, error) {
		dr.Release()
		return nil, stopped(ctx, err)
	}
	if mapping.ExecutePending(a.pending, &dr.res) == mapping.StateError {
		dr.hasRes = true
		return fail(duckError(mapping.ResultError(&dr.res), mapping.ResultErrorType(&dr.res)))
	}
	dr.hasRes = true
	if dr.schema, dr.opts, err = resultSchema(&dr.res); err != nil {
		return fail(err)
	}
	dr.hasOpts = true
	return &Result{RecordReader: dr, Seq: seq, release: dr.Release}, nil
}

// stopped names the reason when ctx, not the statement, ended the query.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nserror.New(nserror.ServiceUnavailable, "query stopped: %w", ctx.Err())
	}
	return err
}

// Schema returns the Arrow schema of a query's result and the Arrow types
// of its parameters, from the prepared statement: nothing runs.
func (e *DB) Schema(ctx context.Context, q string) (*arrow.Schema, []arrow.DataType, error) {
	r, err := e.begin(ctx, e.planSlots)
	if err != nil {
		return nil, nil, err
	}
	defer r.end()
	a, err := r.admit(q, nil)
	nparams := mapping.IdxT(0)
	if err == nil {
		nparams = mapping.NParams(a.ps)
		err = a.pend()
	}
	if err != nil && nparams > 0 && nserror.CodeOf(err) != nserror.PermissionDenied && ctx.Err() == nil {
		// NULL parameters did not fit (a LIMIT, a cast): its schema is the
		// prepared statement's; running it checks it with its values.
		return e.preparedSchema(ctx, q)
	}
	if err != nil {
		return nil, nil, stopped(ctx, err)
	}
	defer func() {
		// The pending result may have scheduled the statement's tasks;
		// interrupted, destroying it does not wait for them.
		r.conn.interrupt()
		a.destroy()
	}()
	schema, opts, err := arrowSchemaOf(r.conn, a.ps)
	if err == nil {
		arrowmapping.DestroyArrowOptions(&opts)
	}
	if (err != nil && mapping.NParams(a.ps) > 0) || (err == nil && untypedParams(a.ps)) {
		// A statement whose result types hang on its parameters (a
		// table function's argument, a column that is a parameter
		// DuckDB cannot type): its types are those of a run with the
		// planning arguments (planningArgs), started but never fetched
		// from — what a client binding the types paramTypes gives it
		// gets.
		schema, err = schemaOfRun(a)
	}
	if err != nil {
		return nil, nil, stopped(ctx, err)
	}
	return schema, paramTypes(a.ps), nil
}

// preparedSchema is the schema of a statement from its prepared form
// alone, in a request of its own.
func (e *DB) preparedSchema(ctx context.Context, q string) (*arrow.Schema, []arrow.DataType, error) {
	r, err := e.begin(ctx, e.planSlots)
	if err != nil {
		return nil, nil, err
	}
	defer r.end()
	if err := r.screened(q); err != nil {
		return nil, nil, err
	}
	ps, err := classify(r.conn, q, 0)
	if err != nil {
		return nil, nil, stopped(ctx, err)
	}
	defer mapping.DestroyPrepare(&ps)
	schema, opts, err := arrowSchemaOf(r.conn, ps)
	if err != nil {
		return nil, nil, err
	}
	arrowmapping.DestroyArrowOptions(&opts)
	return schema, paramTypes(ps), nil
}

// paramTypes are the Arrow types of a statement's parameters.
func paramTypes(ps mapping.PreparedStatement) []arrow.DataType {
	params := make([]arrow.DataType, mapping.NParams(ps))
	for i := range params {
		params[i] = paramArrowType(mapping.ParamType(ps, mapping.IdxT(i+1)))
	}
	return params
}

// planningArgs are the arguments a statement only planned is bound with:
// NULL of its type for each parameter DuckDB typed, and an empty string
// for one it cannot type (a client binds a string there: paramArrowType),
// so that a result column that is such a parameter has the type it has
// when the statement runs.
func planningArgs(ps mapping.PreparedStatement) []any {
	args := make([]any, mapping.NParams(ps))
	for i := range args {
		if untyped(mapping.ParamType(ps, mapping.IdxT(i+1))) {
			args[i] = ""
		}
	}
	return args
}

// untyped reports whether DuckDB could not type a parameter (the client
// binds a string: paramArrowType).
func untyped(t mapping.Type) bool {
	return t != mapping.TypeVarchar && paramArrowType(t) == arrow.BinaryTypes.String
}

// untypedParams reports whether any parameter of ps is untyped.
func untypedParams(ps mapping.PreparedStatement) bool {
	for i := range int(mapping.NParams(ps)) {
		if untyped(mapping.ParamType(ps, mapping.IdxT(i+1))) {
			return true
		}
	}
	return false
}

// schemaOfRun is the result schema of an admitted statement bound with
// its planning arguments; the run stops before its first chunk.
func schemaOfRun(a *admitted) (*arrow.Schema, error) {
	var res mapping.Result
	defer mapping.DestroyResult(&res)
	if mapping.ExecutePending(a.pending, &res) == mapping.StateError {
		return nil, duckError(mapping.ResultError(&res), mapping.ResultErrorType(&res))
	}
	schema, opts, err := resultSchema(&res)
	if err != nil {
		return nil, err
	}
	arrowmapping.DestroyArrowOptions(&opts)
	return schema, nil
}

// paramArrowType is the Arrow type a client should bind for a parameter
// DuckDB inferred as t; a parameter DuckDB cannot type takes a string.
func paramArrowType(t mapping.Type) arrow.DataType {
	switch t {
	case mapping.TypeBoolean:
		return arrow.FixedWidthTypes.Boolean
	case mapping.TypeTinyInt, mapping.TypeSmallInt, mapping.TypeInteger, mapping.TypeBigInt,
		mapping.TypeUTinyInt, mapping.TypeUSmallInt, mapping.TypeUInteger:
		return arrow.PrimitiveTypes.Int64
	case mapping.TypeUBigInt:
		return arrow.PrimitiveTypes.Uint64
	case mapping.TypeFloat, mapping.TypeDouble:
		return arrow.PrimitiveTypes.Float64
	case mapping.TypeBlob:
		return arrow.BinaryTypes.Binary
	case mapping.TypeTimestamp, mapping.TypeTimestampTZ:
		return arrow.FixedWidthTypes.Timestamp_us
	case mapping.TypeDate:
		return arrow.FixedWidthTypes.Date32
	default:
		return arrow.BinaryTypes.String
	}
}

// duckResult streams a query's result: each Next fetches one chunk from
// DuckDB, which computes it then, so a result never exists whole.
type duckResult struct {
	req    *request
	a      *admitted
	res    mapping.Result
	opts   arrowmapping.ArrowOptions
	schema *arrow.Schema

	hasRes, hasOpts bool

	mu   sync.Mutex
	refs int64
	cur  arrow.RecordBatch
	err  error
	done bool
}

var _ array.RecordReader = (*duckResult)(nil)

func (r *duckResult) Schema() *arrow.Schema { return r.schema }

func (r *duckResult) Retain() {
	r.mu.Lock()
	r.refs++
	r.mu.Unlock()
}

// Release frees the result and ends its request (the connection, the
// transaction, the slot) with the last reference.
func (r *duckResult) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs--; r.refs != 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	// An engine thread may be running a task of the statement; destroying
	// its result waits for that task, which an interrupt ends.
	r.req.conn.interrupt()
	r.done = true
	if r.hasRes {
		mapping.DestroyResult(&r.res)
	}
	if r.hasOpts {
		arrowmapping.DestroyArrowOptions(&r.opts)
	}
	r.a.destroy()
	r.req.end()
}

func (r *duckResult) Next() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.done || r.err != nil {
		return false
	}
	chunk := mapping.FetchChunk(r.res)
	if chunk.Ptr == nil {
		if msg := mapping.ResultError(&r.res); msg != "" {
			ctx, _ := r.req.e.ctxs.Load(r.req.id)
			err := duckError(msg, mapping.ResultErrorType(&r.res))
			if c, ok := ctx.(context.Context); ok {
				err = stopped(c, err)
			}
			r.err = err
		}
		r.done = true
		return false
	}
	defer mapping.DestroyDataChunk(&chunk)
	rec, ed := arrowmapping.DataChunkToArrowArray(r.opts, r.schema, chunk)
	if err := errorData(ed); err != nil {
		r.err = err
		return false
	}
	r.cur = rec
	return true
}

func (r *duckResult) RecordBatch() arrow.RecordBatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// Record is RecordBatch (array.RecordReader's older name).
func (r *duckResult) Record() arrow.RecordBatch { return r.RecordBatch() }

func (r *duckResult) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// requestContext is the context of the request running on DuckDB
// connection id (for table functions, which DuckDB calls without one).
func (e *DB) requestContext(id uint64) context.Context {
	if c, ok := e.ctxs.Load(id); ok {
		return c.(context.Context)
	}
	return context.Background()
}

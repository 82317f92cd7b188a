//go:build duckdb_arrow

package sqlengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2/arrowmapping"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/flightns/flightns/nserror"
)

// This file is the thin layer over DuckDB's C API (duckdb-go's mapping
// package) that the engine is built on. flightns does not use duckdb-go's
// database/sql driver: its prepare executes every statement of a text but
// the last, it materializes whole results, and it hides the connection
// that an interrupt needs. Here every statement is one prepared
// statement, results stream chunk by chunk, and a connection can be
// interrupted from another goroutine.

// duckDB is one DuckDB database instance.
type duckDB struct {
	db mapping.Database
}

// openDuck opens an in-memory database with the given settings, each set
// before the database exists (so lock_configuration covers them all).
func openDuck(settings [][2]string) (*duckDB, error) {
	var cfg mapping.Config
	if mapping.CreateConfig(&cfg) == mapping.StateError {
		return nil, errors.New("sqlengine: DuckDB: cannot create a configuration")
	}
	defer mapping.DestroyConfig(&cfg)
	for _, s := range settings {
		if mapping.SetConfig(cfg, s[0], s[1]) == mapping.StateError {
			return nil, fmt.Errorf("sqlengine: DuckDB: setting %s=%q refused", s[0], s[1])
		}
	}
	d := &duckDB{}
	var msg string
	if mapping.OpenExt(":memory:", &d.db, cfg, &msg) == mapping.StateError {
		return nil, fmt.Errorf("sqlengine: opening DuckDB: %s", msg)
	}
	return d, nil
}

func (d *duckDB) close() { mapping.Close(&d.db) }

// duckConn is one connection. It is used by one goroutine at a time,
// except interrupt, which any goroutine may call.
type duckConn struct {
	c mapping.Connection
	// prepared holds the statements execPrepared keeps, by text.
	prepared map[string]mapping.PreparedStatement
}

func (d *duckDB) connect() (*duckConn, error) {
	c := &duckConn{}
	if mapping.Connect(d.db, &c.c) == mapping.StateError {
		return nil, errors.New("sqlengine: DuckDB: cannot open a connection")
	}
	return c, nil
}

func (c *duckConn) close() {
	for _, ps := range c.prepared {
		mapping.DestroyPrepare(&ps)
	}
	c.prepared = nil
	mapping.Disconnect(&c.c)
}

// interrupt stops what the connection runs now (a statement, a fetch).
func (c *duckConn) interrupt() { mapping.Interrupt(c.c) }

// exec runs one statement of flightns's own (never a caller's text) with
// its parameters bound.
func (c *duckConn) exec(q string, args ...any) error {
	ps, err := c.prepare(q)
	if err != nil {
		return err
	}
	defer mapping.DestroyPrepare(&ps)
	return execute(ps, args)
}

// execute binds args to a prepared statement and runs it.
func execute(ps mapping.PreparedStatement, args []any) error {
	if err := bindArgs(ps, args); err != nil {
		return err
	}
	var res mapping.Result
	defer mapping.DestroyResult(&res)
	if mapping.ExecutePrepared(ps, &res) == mapping.StateError {
		return duckError(mapping.ResultError(&res), mapping.ResultErrorType(&res))
	}
	return nil
}

// execPrepared is exec for a text of flightns's own that the connection
// runs again and again: it is prepared once and kept (the text is the
// key, so it must be a constant, never built from values). DuckDB binds
// it again by itself when the catalog changed since (a column added).
// Parsing, binding and planning a statement cost this machine's DuckDB
// about as much as running one of the engine's.
func (c *duckConn) execPrepared(q string, args ...any) error {
	ps, ok := c.prepared[q]
	if !ok {
		var err error
		if ps, err = c.prepare(q); err != nil {
			return err
		}
		if c.prepared == nil {
			c.prepared = map[string]mapping.PreparedStatement{}
		}
		c.prepared[q] = ps
	}
	return execute(ps, args)
}

// appendArrow appends rec's rows to the columns cols (rec's columns, in
// order) of table with an appender, in the connection's transaction if
// one is open: nothing is parsed or planned, where an INSERT over a view
// of the record cost three statements. Columns not in cols take their
// defaults; DuckDB casts what does not match the table's types and
// checks its constraints.
func (c *duckConn) appendArrow(table string, cols []string, rec arrow.RecordBatch) error {
	if int(rec.NumCols()) != len(cols) {
		return fmt.Errorf("sqlengine: %d columns named for a record of %d", len(cols), rec.NumCols())
	}
	var ap mapping.Appender
	if mapping.AppenderCreateExt(c.c, "", "", table, &ap) == mapping.StateError {
		err := appenderError(ap)
		mapping.AppenderDestroy(&ap)
		return err
	}
	closed := false
	defer func() {
		if !closed {
			// Destroying an appender flushes what it holds: drop it first.
			mapping.AppenderClear(ap)
		}
		mapping.AppenderDestroy(&ap)
	}()
	for _, col := range cols {
		if mapping.AppenderAddColumn(ap, col) == mapping.StateError {
			return appenderError(ap)
		}
	}
	conv, ed := arrowmapping.SchemaFromArrow(c.c, rec.Schema())
	if err := errorData(ed); err != nil {
		return err
	}
	defer arrowmapping.DestroyArrowConvertedSchema(&conv)
	// A data chunk holds at most a vector's rows.
	for start := int64(0); start < rec.NumRows(); start += chunkRows {
		part := rec.NewSlice(start, min(start+chunkRows, rec.NumRows()))
		chunk, ed := arrowmapping.DataChunkFromArrow(c.c, part, conv)
		part.Release()
		if err := errorData(ed); err != nil {
			return err
		}
		st := mapping.AppendDataChunk(ap, chunk)
		mapping.DestroyDataChunk(&chunk)
		if st == mapping.StateError {
			return appenderError(ap)
		}
	}
	if mapping.AppenderClose(ap) == mapping.StateError {
		return appenderError(ap)
	}
	closed = true
	return nil
}

// chunkRows is the most rows of a DuckDB data chunk (its vector size).
const chunkRows = 2048

// appenderError is an appender's error.
func appenderError(ap mapping.Appender) error {
	return errorData(mapping.AppenderErrorData(ap))
}

// run runs a text of flightns's own (no parameters; several statements
// allowed) in one call: no prepared statement, so no transaction of its
// own around a prepare. A request's BEGIN and ROLLBACK take a third of
// the time this way.
func (c *duckConn) run(q string) error {
	var res mapping.Result
	defer mapping.DestroyResult(&res)
	if mapping.Query(c.c, q, &res) == mapping.StateError {
		return fmt.Errorf("%s: %w", q, duckError(mapping.ResultError(&res), mapping.ResultErrorType(&res)))
	}
	return nil
}

// execAll runs statements of flightns's own, in order.
func (c *duckConn) execAll(qs ...string) error {
	for _, q := range qs {
		if err := c.exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// uint64Of runs a query of flightns's own whose first value is a
// non-NULL UBIGINT.
func (c *duckConn) uint64Of(q string) (uint64, error) {
	var res mapping.Result
	defer mapping.DestroyResult(&res)
	if mapping.Query(c.c, q, &res) == mapping.StateError {
		return 0, duckError(mapping.ResultError(&res), mapping.ResultErrorType(&res))
	}
	chunk := mapping.FetchChunk(res)
	if chunk.Ptr == nil || mapping.DataChunkGetSize(chunk) == 0 {
		return 0, fmt.Errorf("sqlengine: %s: no row", q)
	}
	defer mapping.DestroyDataChunk(&chunk)
	return *(*uint64)(mapping.VectorGetData(mapping.DataChunkGetVector(chunk, 0))), nil
}

// prepare prepares one statement of flightns's own.
func (c *duckConn) prepare(q string) (mapping.PreparedStatement, error) {
	var ps mapping.PreparedStatement
	if mapping.Prepare(c.c, q, &ps) == mapping.StateError {
		err := prepareError(mapping.PrepareError(ps))
		mapping.DestroyPrepare(&ps)
		return ps, err
	}
	return ps, nil
}

// bindArgs binds Go values to a prepared statement's parameters: nil,
// bool, int64 and smaller, uint64, float64, string, []byte, time.Time.
func bindArgs(ps mapping.PreparedStatement, args []any) error {
	if n := int(mapping.NParams(ps)); n != len(args) {
		return nserror.New(nserror.InvalidInput, "the statement takes %d parameters, %d were given", n, len(args))
	}
	for i, a := range args {
		idx := mapping.IdxT(i + 1)
		var st mapping.State
		switch v := a.(type) {
		case nil:
			st = mapping.BindNull(ps, idx)
		case bool:
			st = mapping.BindBoolean(ps, idx, v)
		case int:
			st = mapping.BindInt64(ps, idx, int64(v))
		case int32:
			st = mapping.BindInt64(ps, idx, int64(v))
		case int64:
			st = mapping.BindInt64(ps, idx, v)
		case uint64:
			st = mapping.BindUInt64(ps, idx, v)
		case float64:
			st = mapping.BindDouble(ps, idx, v)
		case string:
			st = mapping.BindVarchar(ps, idx, v)
		case []byte:
			st = mapping.BindBlob(ps, idx, v)
		case time.Time:
			st = mapping.BindTimestampTZ(ps, idx, mapping.NewTimestamp(v.UnixMicro()))
		default:
			return nserror.New(nserror.InvalidInput, "parameter %d: a %T cannot be bound", i+1, a)
		}
		if st == mapping.StateError {
			return nserror.New(nserror.InvalidInput, "parameter %d: DuckDB refused the value %v", i+1, a)
		}
	}
	return nil
}

// duckErrorTypes maps the names DuckDB prefixes its messages with ("Binder
// Error: …") to its error types, for the errors (of prepare) that come
// without a type.
var duckErrorTypes = map[string]mapping.ErrorType{
	"Out of Range": mapping.ErrorTypeOutOfRange, "Conversion": mapping.ErrorTypeConversion,
	"Mismatch Type": mapping.ErrorTypeMismatchType, "Divide by Zero": mapping.ErrorTypeDivideByZero,
	"Invalid type": mapping.ErrorTypeInvalidType, "TransactionContext": mapping.ErrorTypeTransaction,
	"Not implemented": mapping.ErrorTypeNotImplemented, "Catalog": mapping.ErrorTypeCatalog,
	"Parser": mapping.ErrorTypeParser, "Binder": mapping.ErrorTypeBinder, "Syntax": mapping.ErrorTypeSyntax,
	"Permission": mapping.ErrorTypePermission, "Out of Memory": mapping.ErrorTypeOutOfMemory,
	"INTERRUPT": mapping.ErrorTypeInterrupt, "Invalid Input": mapping.ErrorTypeInvalidInput,
	"Parameter Not Resolved": mapping.ErrorTypeParameterNotResolved, "Parameter Not Allowed": mapping.ErrorTypeParameterNotAllowed,
	"Dependency": mapping.ErrorTypeDependency, "INTERNAL": mapping.ErrorTypeInternal, "FATAL": mapping.ErrorTypeFatal,
	"Invalid Configuration": mapping.ErrorTypeInvalidConfiguration, "Settings": mapping.ErrorTypeSettings,
	"Constraint": mapping.ErrorTypeConstraint, "Sequence": mapping.ErrorTypeSequence, "IO": mapping.ErrorTypeErrorIO,
}

// prepareError is the error of a failed prepare, typed by its prefix.
func prepareError(msg string) error {
	name, _, ok := strings.Cut(msg, " Error: ")
	t, known := duckErrorTypes[name]
	if !ok || !known {
		t = mapping.ErrorTypeInvalid
	}
	return duckError(msg, t)
}

// duckError gives a DuckDB error its Lance code: the caller's mistakes
// (parse, bind, types, values) are InvalidInput; what the sandbox forbids
// is PermissionDenied; exhausted memory is Throttling (gRPC
// ResourceExhausted); an interrupt is ServiceUnavailable (the query was
// stopped: by its deadline, its client or shutdown); DuckDB's own faults
// are Internal.
func duckError(msg string, t mapping.ErrorType) error {
	msg = strings.TrimSpace(msg)
	code := nserror.InvalidInput
	switch t {
	case mapping.ErrorTypePermission:
		code = nserror.PermissionDenied
	case mapping.ErrorTypeOutOfMemory:
		code = nserror.Throttling
	case mapping.ErrorTypeInterrupt:
		code = nserror.ServiceUnavailable
	case mapping.ErrorTypeInternal, mapping.ErrorTypeFatal, mapping.ErrorTypeNullPointer, mapping.ErrorTypeConnection,
		mapping.ErrorTypeScheduler, mapping.ErrorTypeErrorIO:
		code = nserror.Internal
		if strings.Contains(msg, "std::bad_alloc") {
			// An allocation failed while DuckDB built its error (the
			// process's data segment is capped): out of memory too.
			code = nserror.Throttling
		}
	case mapping.ErrorTypeInvalidInput, mapping.ErrorTypeInvalidConfiguration, mapping.ErrorTypeSettings:
		if strings.Contains(msg, "configuration has been locked") {
			code = nserror.PermissionDenied
		}
	}
	return nserror.New(code, "%s", msg)
}

// arrowSchemaOf is the Arrow schema of a prepared statement's result, and
// the options that convert its chunks (the caller destroys them).
func arrowSchemaOf(conn *duckConn, ps mapping.PreparedStatement) (*arrow.Schema, arrowmapping.ArrowOptions, error) {
	var opts arrowmapping.ArrowOptions
	arrowmapping.ConnectionGetArrowOptions(conn.c, &opts)
	schema, err := arrowSchema(opts, mapping.PreparedStatementColumnCount(ps),
		func(i mapping.IdxT) string { return mapping.PreparedStatementColumnName(ps, i) },
		func(i mapping.IdxT) mapping.LogicalType { return mapping.PreparedStatementColumnLogicalType(ps, i) })
	if err != nil {
		arrowmapping.DestroyArrowOptions(&opts)
	}
	return schema, opts, err
}

// resultSchema is the Arrow schema of a result, and the options that
// convert its chunks (the caller destroys them).
func resultSchema(res *mapping.Result) (*arrow.Schema, arrowmapping.ArrowOptions, error) {
	opts := arrowmapping.ResultGetArrowOptions(res)
	schema, err := arrowSchema(opts, mapping.ColumnCount(res),
		func(i mapping.IdxT) string { return mapping.ColumnName(res, i) },
		func(i mapping.IdxT) mapping.LogicalType { return mapping.ColumnLogicalType(res, i) })
	if err != nil {
		arrowmapping.DestroyArrowOptions(&opts)
	}
	return schema, opts, err
}

// arrowSchema is the Arrow schema of n columns with these names and
// DuckDB types.
func arrowSchema(opts arrowmapping.ArrowOptions, n mapping.IdxT, name func(mapping.IdxT) string, typ func(mapping.IdxT) mapping.LogicalType) (*arrow.Schema, error) {
	names := make([]string, n)
	types := make([]mapping.LogicalType, n)
	for i := range n {
		names[i], types[i] = name(i), typ(i)
	}
	defer func() {
		for i := range types {
			mapping.DestroyLogicalType(&types[i])
		}
	}()
	schema, ed := arrowmapping.NewArrowSchema(opts, types, names)
	if err := errorData(ed); err != nil {
		return nil, nserror.New(nserror.InvalidInput, "the result's types have no Arrow form: %v", err)
	}
	return schema, nil
}

// errorData turns DuckDB error data into an error (nil when none).
func errorData(ed mapping.ErrorData) error {
	defer mapping.DestroyErrorData(&ed)
	if !mapping.ErrorDataHasError(ed) {
		return nil
	}
	return duckError(mapping.ErrorDataMessage(ed), mapping.ErrorDataErrorType(ed))
}

// interrupter interrupts conn when ctx ends, and again every
// interval while the call it guards has not returned (DuckDB clears an
// interrupt when a new task starts). stop ends it.
func interrupter(ctx context.Context, conn *duckConn, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			conn.interrupt()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

//go:build duckdb_arrow

package manifesttable

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightns/flightns/nserror"
)

// engine is the SQL engine over __manifest: an in-process DuckDB,
// locked down (no files, no network, no extensions, configuration locked,
// bounded threads and memory), holding the table's rows with their history.
//
// Two physical tables keep the rows: _objects (namespaces and tables) and
// _versions (table versions, without an object_type column). Each row has
// the catalog sequence range in which it is current: [_seq_from, _seq_to).
// The view __manifest is their union at the newest sequence; the table
// macro manifest_at(n) is the same at sequence n. Because the view puts the
// constant 'table_version' in the versions branch, a filter on object_type
// folds away there and a filter on object_id uses the ART index: a point
// look-up stays under a millisecond at millions of rows.
//
// One writer connection applies segments, each in one transaction that
// also records the sequence it reached in _meta; a query runs in a
// transaction of its own, so it sees one sequence, which it reports.
type engine struct {
	connector *duckdb.Connector
	db        *sql.DB

	wmu    sync.Mutex // guards the writer and the column set
	writer *sql.Conn
	extra  Columns
	raw    map[string]arrow.DataType

	readers chan driver.Conn // connections for queries

	selects  sync.Map     // query text -> is a single SELECT
	selectsN atomic.Int64 // entries in selects (bounded)

	// commits is a sequence lock over the rows queries see: odd while a
	// commit that changes them is in flight, incremented again once it is
	// visible. A query that saw the same even value before and after its
	// statement read exactly the state of visible.
	commits atomic.Uint64

	vmu     sync.Mutex
	visible uint64 // sequence of the last applied segment
	oldest  uint64 // oldest sequence whose state is queryable
	changed *sync.Cond
}

// EngineConfig bounds the SQL engine.
type EngineConfig struct {
	// Threads DuckDB may use (default 2).
	Threads int
	// MemoryLimit, e.g. "2GB" (default "4GB"). It bounds the data and every
	// query together.
	MemoryLimit string
	// MaxQueries is the number of queries that run at once (default 8);
	// more wait.
	MaxQueries int
}

func (c EngineConfig) dsn() string {
	threads, mem := c.Threads, c.MemoryLimit
	if threads <= 0 {
		threads = 2
	}
	if mem == "" {
		mem = "4GB"
	}
	return fmt.Sprintf("?enable_external_access=false&autoinstall_known_extensions=false&autoload_known_extensions=false"+
		"&allow_community_extensions=false&lock_configuration=true&threads=%d&memory_limit=%s", threads, mem)
}

func openEngine(ctx context.Context, cfg EngineConfig) (*engine, error) {
	// Every connection works in a database named "flightns" (an in-memory
	// database attached by the first connection), so that the catalog name
	// Flight SQL clients see (flightns.main.__manifest) also works in SQL.
	var attach sync.Once
	var attachErr error
	c, err := duckdb.NewConnector(cfg.dsn(), func(ex driver.ExecerContext) error {
		attach.Do(func() {
			_, attachErr = ex.ExecContext(context.Background(), `ATTACH ':memory:' AS `+DatabaseName, nil)
		})
		if attachErr != nil {
			return attachErr
		}
		_, err := ex.ExecContext(context.Background(), `USE `+DatabaseName, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("manifesttable: opening DuckDB: %w", err)
	}
	e := &engine{connector: c, db: sql.OpenDB(c), extra: Columns{}, raw: map[string]arrow.DataType{}}
	e.changed = sync.NewCond(&e.vmu)
	if e.writer, err = e.db.Conn(ctx); err != nil {
		_ = e.close()
		return nil, err
	}
	ddl := []string{
		`CREATE TABLE _objects (` + columnsDDL(true) + `, _seq_from UBIGINT NOT NULL, _seq_to UBIGINT)`,
		`CREATE TABLE _versions (` + columnsDDL(false) + `, _seq_from UBIGINT NOT NULL, _seq_to UBIGINT)`,
		`CREATE INDEX _objects_id ON _objects (object_id)`,
		`CREATE INDEX _versions_id ON _versions (object_id)`,
		`CREATE TABLE _meta (seq UBIGINT NOT NULL, oldest UBIGINT NOT NULL)`,
		`INSERT INTO _meta VALUES (0, 0)`,
	}
	for _, q := range ddl {
		if _, err := e.writer.ExecContext(ctx, q); err != nil {
			_ = e.close()
			return nil, fmt.Errorf("manifesttable: %s: %w", q, err)
		}
	}
	if err := e.createViews(ctx); err != nil {
		_ = e.close()
		return nil, err
	}
	n := cfg.MaxQueries
	if n <= 0 {
		n = 8
	}
	e.readers = make(chan driver.Conn, n)
	for range n {
		conn, err := c.Connect(ctx)
		if err != nil {
			_ = e.close()
			return nil, err
		}
		e.readers <- conn
	}
	return e, nil
}

func (e *engine) close() error {
	if e.readers != nil {
		for len(e.readers) > 0 {
			_ = (<-e.readers).Close()
		}
	}
	if e.writer != nil {
		_ = e.writer.Close()
	}
	return e.db.Close()
}

// sqlType is the DuckDB type of an extra column.
func sqlType(t ColumnType) string {
	switch t {
	case ColBool:
		return "BOOLEAN"
	case ColInt32:
		return "INTEGER"
	case ColInt64:
		return "BIGINT"
	case ColUint64:
		return "UBIGINT"
	case ColFloat64:
		return "DOUBLE"
	case ColBinary:
		return "BLOB"
	case ColDate32:
		return "DATE"
	case ColTimestamp:
		return "TIMESTAMPTZ"
	}
	return "VARCHAR"
}

// baseDDL lists the base columns and their DuckDB types.
var baseDDL = []struct{ name, typ string }{
	{ColObjectID, "VARCHAR NOT NULL"}, {ColObjectType, "VARCHAR NOT NULL"}, {ColLocation, "VARCHAR"},
	{ColMetadata, "VARCHAR"}, {ColBaseObjects, "VARCHAR[]"}, {ColTableVersion, "UBIGINT"},
	{ColManifestPath, "VARCHAR"}, {ColManifestSize, "UBIGINT"}, {ColCommittedAt, "TIMESTAMPTZ"},
	{ColTxnID, "VARCHAR"}, {ColReadVersion, "UBIGINT"}, {ColReadBranch, "VARCHAR"}, {ColReadTag, "VARCHAR"},
	{ColSpecID, "INTEGER"},
}

func columnsDDL(objects bool) string {
	var parts []string
	for _, c := range baseDDL {
		if !objects && c.name == ColObjectType {
			continue
		}
		parts = append(parts, quoteIdent(c.name)+" "+c.typ)
	}
	return strings.Join(parts, ", ")
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// columnList is the __manifest columns in order, for the views.
func (e *engine) columnList() []string {
	cols := make([]string, 0, len(baseDDL)+len(e.extra)+len(e.raw))
	for _, c := range baseDDL {
		cols = append(cols, c.name)
	}
	cols = append(cols, e.extra.Names()...)
	return append(cols, sortedKeys(e.raw)...)
}

// createViews (re)creates __manifest, its convenience views and the time
// travel macro for the current column set.
func (e *engine) createViews(ctx context.Context) error {
	cols := e.columnList()
	var obj, ver []string
	for _, c := range cols {
		q := quoteIdent(c)
		obj = append(obj, q)
		if c == ColObjectType {
			ver = append(ver, `'table_version' AS object_type`)
		} else {
			ver = append(ver, q)
		}
	}
	union := func(cond string) string {
		return `SELECT ` + strings.Join(obj, ", ") + ` FROM _objects WHERE ` + cond +
			` UNION ALL SELECT ` + strings.Join(ver, ", ") + ` FROM _versions WHERE ` + cond
	}
	stmts := []string{
		`CREATE OR REPLACE VIEW __manifest AS ` + union(`_seq_to IS NULL`),
		`CREATE OR REPLACE MACRO manifest_at(n) AS TABLE ` + union(`_seq_from <= n AND (_seq_to IS NULL OR _seq_to > n)`),
		`CREATE OR REPLACE VIEW namespaces AS SELECT object_id, metadata, committed_at FROM __manifest WHERE object_type = 'namespace'`,
		`CREATE OR REPLACE VIEW tables AS SELECT * EXCLUDE (object_type, table_version, manifest_path, manifest_size) FROM __manifest WHERE object_type = 'table'`,
		`CREATE OR REPLACE VIEW table_versions AS SELECT object_id AS table_id, table_version AS version, manifest_path, manifest_size, committed_at, txn_id, metadata FROM __manifest WHERE object_type = 'table_version'`,
	}
	for _, q := range stmts {
		if _, err := e.writer.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("manifesttable: %s: %w", q, err)
		}
	}
	return nil
}

// addColumns adds extra columns the engine does not have yet.
func (e *engine) addColumns(ctx context.Context, extra Columns, raw map[string]arrow.DataType) error {
	added := false
	for _, name := range extra.Names() {
		t := extra[name]
		if have, ok := e.extra[name]; ok {
			if have != t {
				return nserror.New(nserror.InvalidInput, "column %s is %s, not %s", name, have, t)
			}
			continue
		}
		for _, tbl := range []string{"_objects", "_versions"} {
			if _, err := e.writer.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s %s`, tbl, quoteIdent(name), sqlType(t))); err != nil {
				return err
			}
		}
		e.extra[name] = t
		added = true
	}
	for _, name := range sortedKeys(raw) {
		if _, ok := e.raw[name]; ok {
			continue
		}
		if _, ok := e.extra[name]; ok {
			continue
		}
		for _, tbl := range []string{"_objects", "_versions"} {
			if _, err := e.writer.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s VARCHAR`, tbl, quoteIdent(name))); err != nil {
				return err
			}
		}
		e.raw[name] = raw[name]
		added = true
	}
	if added {
		return e.createViews(ctx)
	}
	return nil
}

// insertRows appends rows (to _objects or _versions by type), row i
// current over [from[i], to[i]) (to[i] 0: still current), through an
// Arrow view.
func (e *engine) insertRows(ctx context.Context, conn driver.Conn, rows []Row, from, to []uint64) error {
	var parts [2]struct {
		rows     []Row
		from, to []uint64
	}
	for i := range rows {
		p := &parts[0]
		if rows[i].ObjectType == TypeTableVersion {
			p = &parts[1]
		}
		p.rows = append(p.rows, rows[i])
		p.from = append(p.from, from[i])
		p.to = append(p.to, to[i])
	}
	for i, table := range []string{"_objects", "_versions"} {
		p := parts[i]
		if len(p.rows) == 0 {
			continue
		}
		rec := buildRecord(Schema(e.extra, e.raw, false), rawAsString(p.rows, e.raw), nil)
		err := e.insertRecord(ctx, conn, table, rec, p.from, p.to)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// rawAsString turns Raw extras into their string form, the DuckDB type of
// such columns.
func rawAsString(rows []Row, raw map[string]arrow.DataType) []Row {
	if len(raw) == 0 {
		return rows
	}
	out := append([]Row(nil), rows...)
	for i := range out {
		if len(out[i].Extra) == 0 {
			continue
		}
		m := make(map[string]any, len(out[i].Extra))
		for k, v := range out[i].Extra {
			if r, ok := v.(Raw); ok {
				v = r.Value
			}
			m[k] = v
		}
		out[i].Extra = m
	}
	return out
}

var viewSeq struct {
	sync.Mutex
	n int
}

func nextViewName() string {
	viewSeq.Lock()
	defer viewSeq.Unlock()
	viewSeq.n++
	return fmt.Sprintf("_arrow_in_%d", viewSeq.n)
}

// insertRecord inserts rec into table, with _seq_from from seqs (one per
// row).
//
// The Arrow view it goes through is read with SELECT * over exactly the
// table's columns in the table's order: DuckDB pushes projections and
// filters down into Arrow scans, and this Arrow stream applies neither, so
// a scan that is not of every column would read the wrong ones.
func (e *engine) insertRecord(ctx context.Context, conn driver.Conn, table string, rec arrow.RecordBatch, from, to []uint64) error {
	ar, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		return err
	}
	var cols []string
	for _, c := range e.columnList() {
		if table == "_versions" && c == ColObjectType {
			continue
		}
		cols = append(cols, c)
	}
	proj, err := projectRecord(rec, cols, from, to)
	if err != nil {
		return err
	}
	defer proj.Release()
	rr, err := array.NewRecordReader(proj.Schema(), []arrow.RecordBatch{proj})
	if err != nil {
		return err
	}
	defer rr.Release()
	name := nextViewName()
	release, err := ar.RegisterView(rr, name)
	if err != nil {
		return err
	}
	defer release()
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = quoteIdent(c)
	}
	q := fmt.Sprintf(`INSERT INTO %s (%s, _seq_from, _seq_to) SELECT * FROM %s`, table, strings.Join(quoted, ", "), name)
	_, err = conn.(driver.ExecerContext).ExecContext(ctx, q, nil)
	return err
}

// projectRecord builds a record of rec's columns named cols, in that
// order (all-null columns for names rec lacks), plus _seq_from and _seq_to
// (to nil or 0: NULL).
func projectRecord(rec arrow.RecordBatch, cols []string, from, to []uint64) (arrow.RecordBatch, error) {
	n := rec.NumRows()
	var fields []arrow.Field
	var arrs []arrow.Array
	var made []arrow.Array
	for _, c := range cols {
		idx := rec.Schema().FieldIndices(c)
		if len(idx) == 0 {
			a := array.MakeArrayOfNull(memAlloc, arrow.BinaryTypes.String, int(n))
			made = append(made, a)
			fields = append(fields, arrow.Field{Name: c, Type: a.DataType(), Nullable: true})
			arrs = append(arrs, a)
			continue
		}
		fields = append(fields, rec.Schema().Field(idx[0]))
		arrs = append(arrs, rec.Column(idx[0]))
	}
	if int64(len(from)) != n || (to != nil && int64(len(to)) != n) {
		return nil, fmt.Errorf("manifesttable: %d sequences for %d rows", len(from), n)
	}
	b := array.NewUint64Builder(memAlloc)
	b.AppendValues(from, nil)
	fromCol := b.NewArray()
	for i := range int(n) {
		if to == nil || to[i] == 0 {
			b.AppendNull()
		} else {
			b.Append(to[i])
		}
	}
	toCol := b.NewArray()
	b.Release()
	made = append(made, fromCol, toCol)
	fields = append(fields, arrow.Field{Name: "_seq_from", Type: arrow.PrimitiveTypes.Uint64},
		arrow.Field{Name: "_seq_to", Type: arrow.PrimitiveTypes.Uint64, Nullable: true})
	arrs = append(arrs, fromCol, toCol)
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, n)
	for _, a := range made {
		a.Release()
	}
	return out, nil
}

// insertMixed inserts a record holding both kinds of rows, one run of
// same-table rows at a time (a snapshot is sorted by type, so there are few).
func (e *engine) insertMixed(ctx context.Context, conn driver.Conn, rec arrow.RecordBatch, seq uint64) error {
	idx := rec.Schema().FieldIndices(ColObjectType)
	if len(idx) == 0 {
		return errors.New("manifesttable: a snapshot batch without object_type")
	}
	types := rec.Column(idx[0]).(*array.String)
	n := int(rec.NumRows())
	for start := 0; start < n; {
		isVer := types.Value(start) == TypeTableVersion
		end := start + 1
		for end < n && (types.Value(end) == TypeTableVersion) == isVer {
			end++
		}
		part := rec.NewSlice(int64(start), int64(end))
		seqs := make([]uint64, end-start)
		for i := range seqs {
			seqs[i] = seq
		}
		table := "_objects"
		if isVer {
			table = "_versions"
		}
		err := e.insertRecord(ctx, conn, table, part, seqs, nil)
		part.Release()
		if err != nil {
			return err
		}
		start = end
	}
	return nil
}

// applySegment applies one segment in one transaction. A change's existed
// flag says whether its key may have a current row from before the segment
// (a put of a new key needs no retirement of an old row).
//
// Changes apply in order: the first change to a key that existed retires
// its row (its _seq_to becomes the change's sequence); a row put by the
// segment itself and changed again later in it is inserted already
// retired. So every sequence inside a segment is exact for time travel.
func (e *engine) applySegment(ctx context.Context, seg *segment) error {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	type retire struct {
		key Key
		seq uint64
	}
	var retires []retire
	var puts []Row
	var from, to []uint64
	pending := map[Key]int{}
	touched := map[Key]bool{}
	extra, raw := Columns{}, map[string]arrow.DataType{}
	for _, c := range seg.Changes {
		k := c.row.Key()
		if i, ok := pending[k]; ok {
			to[i] = c.seq
			delete(pending, k)
		} else if !touched[k] && c.existed {
			retires = append(retires, retire{k, c.seq})
		}
		touched[k] = true
		if c.del {
			continue
		}
		pending[k] = len(puts)
		puts = append(puts, c.row)
		from = append(from, c.seq)
		to = append(to, 0)
		for name, v := range c.row.Extra {
			if r, ok := v.(Raw); ok {
				raw[name] = r.Type
			}
		}
	}
	if err := extra.merge(stripRaw(puts)); err != nil {
		return err
	}
	if err := e.addColumns(ctx, extra, raw); err != nil {
		return err
	}
	return e.writer.Raw(func(dc any) error {
		conn := dc.(driver.Conn)
		ex := conn.(driver.ExecerContext)
		if _, err := ex.ExecContext(ctx, "BEGIN TRANSACTION", nil); err != nil {
			return err
		}
		var err error
		for _, r := range retires {
			if r.key.Type == TypeTableVersion {
				_, err = ex.ExecContext(ctx, `UPDATE _versions SET _seq_to = ? WHERE object_id = ? AND table_version = ? AND _seq_to IS NULL`,
					[]driver.NamedValue{{Ordinal: 1, Value: r.seq}, {Ordinal: 2, Value: r.key.ID}, {Ordinal: 3, Value: r.key.Version}})
			} else {
				_, err = ex.ExecContext(ctx, `UPDATE _objects SET _seq_to = ? WHERE object_id = ? AND object_type = ? AND _seq_to IS NULL`,
					[]driver.NamedValue{{Ordinal: 1, Value: r.seq}, {Ordinal: 2, Value: r.key.ID}, {Ordinal: 3, Value: r.key.Type}})
			}
			if err != nil {
				break
			}
		}
		if err == nil && len(puts) > 0 {
			err = e.insertRows(ctx, conn, puts, from, to)
		}
		if err == nil {
			_, err = ex.ExecContext(ctx, "UPDATE _meta SET seq = ?", []driver.NamedValue{{Ordinal: 1, Value: seg.Last}})
		}
		if err == nil {
			e.commits.Add(1)
			defer e.commits.Add(1)
			_, err = ex.ExecContext(ctx, "COMMIT", nil)
		}
		if err != nil {
			_, _ = ex.ExecContext(context.WithoutCancel(ctx), "ROLLBACK", nil)
			return fmt.Errorf("manifesttable: applying segment %d..%d: %w", seg.First, seg.Last, err)
		}
		e.setVisible(seg.Last)
		return nil
	})
}

func (e *engine) setVisible(seq uint64) {
	e.vmu.Lock()
	if seq > e.visible {
		e.visible = seq
	}
	e.vmu.Unlock()
	e.changed.Broadcast()
}

// Visible returns the newest sequence queries see.
func (e *engine) Visible() uint64 {
	e.vmu.Lock()
	defer e.vmu.Unlock()
	return e.visible
}

// waitVisible waits until sequence seq is visible to queries.
func (e *engine) waitVisible(ctx context.Context, seq uint64) error {
	stop := context.AfterFunc(ctx, func() {
		e.vmu.Lock()
		e.changed.Broadcast()
		e.vmu.Unlock()
	})
	defer stop()
	e.vmu.Lock()
	defer e.vmu.Unlock()
	for e.visible < seq {
		if err := ctx.Err(); err != nil {
			return nserror.New(nserror.ServiceUnavailable, "sequence %d is not visible yet (at %d): %w", seq, e.visible, err)
		}
		e.changed.Wait()
	}
	return nil
}

// loadFrozen inserts the rows of a frozen index into empty tables,
// current from its sequence.
func (e *engine) loadFrozen(ctx context.Context, f *frozen) error {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if err := e.addColumns(ctx, f.extra, f.raw); err != nil {
		return err
	}
	schema := Schema(f.extra, f.raw, false)
	return e.writer.Raw(func(dc any) error {
		e.commits.Add(1) // queries during the load read _meta
		defer e.commits.Add(1)
		conn := dc.(driver.Conn)
		for {
			rows := f.next(rowGroupRows)
			if len(rows) == 0 {
				break
			}
			rec := buildRecord(schema, rows, nil)
			srec := castRawColumns(rec, f.raw)
			rec.Release()
			err := e.insertMixed(ctx, conn, srec, f.seq)
			srec.Release()
			if err != nil {
				return err
			}
		}
		_, err := conn.(driver.ExecerContext).ExecContext(ctx, "UPDATE _meta SET seq = ?, oldest = ?",
			[]driver.NamedValue{{Ordinal: 1, Value: f.seq}, {Ordinal: 2, Value: f.seq}})
		if err != nil {
			return err
		}
		e.vmu.Lock()
		e.oldest = f.seq
		e.vmu.Unlock()
		e.setVisible(f.seq)
		return nil
	})
}

// castRawColumns turns columns of types flightns does not model into
// strings (their DuckDB type). The returned record is the caller's.
func castRawColumns(rec arrow.RecordBatch, raw map[string]arrow.DataType) arrow.RecordBatch {
	if len(raw) == 0 {
		rec.Retain()
		return rec
	}
	fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
	cols := append([]arrow.Array(nil), rec.Columns()...)
	var made []arrow.Array
	for i, f := range fields {
		if _, ok := raw[f.Name]; !ok {
			continue
		}
		b := array.NewStringBuilder(memAlloc)
		for j := 0; j < cols[i].Len(); j++ {
			if cols[i].IsNull(j) {
				b.AppendNull()
			} else {
				b.Append(cols[i].ValueStr(j))
			}
		}
		cols[i] = b.NewArray()
		made = append(made, cols[i])
		b.Release()
		fields[i] = arrow.Field{Name: f.Name, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	for _, a := range made {
		a.Release()
	}
	return out
}

// query runs one read-only statement and reports the catalog sequence its
// result reflects. Usually the statement runs alone (its own snapshot) and
// the commit sequence lock names the sequence: no commit began or ended
// while it ran. When one did, the statement runs again in a read-only
// transaction that first reads the sequence from _meta.
func (e *engine) query(ctx context.Context, q string, args ...any) (*Result, error) {
	var conn driver.Conn
	select {
	case conn = <-e.readers:
	case <-ctx.Done():
		return nil, nserror.New(nserror.Throttling, "too many queries at once: %w", ctx.Err())
	}
	ok := false
	defer func() {
		if !ok {
			e.readers <- conn
		}
	}()
	if err := e.checkReadOnly(ctx, conn, q); err != nil {
		return nil, err
	}
	ar, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		return nil, err
	}
	if g := e.commits.Load(); g%2 == 0 {
		seq := e.Visible()
		rr, err := ar.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, queryError(ctx, err)
		}
		if e.commits.Load() == g {
			ok = true
			return &Result{RecordReader: rr, Seq: seq, release: func() {
				rr.Release()
				e.readers <- conn
			}}, nil
		}
		rr.Release()
	}
	ex := conn.(driver.ExecerContext)
	if _, err := ex.ExecContext(ctx, "BEGIN TRANSACTION READ ONLY", nil); err != nil {
		return nil, err
	}
	endTxn := func() { _, _ = ex.ExecContext(context.WithoutCancel(ctx), "ROLLBACK", nil) }
	seq, err := e.metaSeq(ctx, conn)
	if err != nil {
		endTxn()
		return nil, err
	}
	rr, err := ar.QueryContext(ctx, q, args...)
	if err != nil {
		endTxn()
		return nil, queryError(ctx, err)
	}
	ok = true
	return &Result{RecordReader: rr, Seq: seq, release: func() {
		rr.Release()
		endTxn()
		e.readers <- conn
	}}, nil
}

// metaSeq reads the applied sequence in conn's transaction (its snapshot
// is taken by this first statement).
func (e *engine) metaSeq(ctx context.Context, conn driver.Conn) (uint64, error) {
	rows, err := conn.(driver.QueryerContext).QueryContext(ctx, "SELECT seq FROM _meta", nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = rows.Close() }()
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err != nil {
		return 0, err
	}
	seq, _ := dest[0].(uint64)
	return seq, nil
}

// schema returns the Arrow schema of a query's result, and the Arrow types
// of its parameters, without running it over data: the query runs wrapped
// in LIMIT 0 with every parameter NULL.
func (e *engine) schema(ctx context.Context, q string) (*arrow.Schema, []arrow.DataType, error) {
	var conn driver.Conn
	select {
	case conn = <-e.readers:
	case <-ctx.Done():
		return nil, nil, nserror.New(nserror.Throttling, "too many queries at once: %w", ctx.Err())
	}
	defer func() { e.readers <- conn }()
	if err := e.checkReadOnly(ctx, conn, q); err != nil {
		return nil, nil, err
	}
	st, err := conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, nil, nserror.New(nserror.InvalidInput, "%v", cleanDuckErr(err))
	}
	ds := st.(*duckdb.Stmt)
	params := make([]arrow.DataType, ds.NumInput())
	for i := range params {
		t, _ := ds.ParamType(i + 1)
		params[i] = paramArrowType(t)
	}
	_ = st.Close()
	ar, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		return nil, nil, err
	}
	wrapped := "SELECT * FROM (" + strings.TrimRight(strings.TrimSpace(q), ";") + ") AS _flightns_q LIMIT 0"
	args := make([]any, len(params))
	rr, err := ar.QueryContext(ctx, wrapped, args...)
	if err != nil {
		return nil, nil, queryError(ctx, err)
	}
	defer rr.Release()
	return rr.Schema(), params, nil
}

// paramArrowType is the Arrow type a client should bind for a parameter
// DuckDB inferred as t; a parameter DuckDB cannot type takes a string.
func paramArrowType(t duckdb.Type) arrow.DataType {
	switch t {
	case duckdb.TYPE_BOOLEAN:
		return arrow.FixedWidthTypes.Boolean
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT,
		duckdb.TYPE_UTINYINT, duckdb.TYPE_USMALLINT, duckdb.TYPE_UINTEGER:
		return arrow.PrimitiveTypes.Int64
	case duckdb.TYPE_UBIGINT:
		return arrow.PrimitiveTypes.Uint64
	case duckdb.TYPE_FLOAT, duckdb.TYPE_DOUBLE:
		return arrow.PrimitiveTypes.Float64
	case duckdb.TYPE_BLOB:
		return arrow.BinaryTypes.Binary
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_TZ:
		return arrow.FixedWidthTypes.Timestamp_us
	case duckdb.TYPE_DATE:
		return arrow.FixedWidthTypes.Date32
	default:
		return arrow.BinaryTypes.String
	}
}

// checkReadOnly refuses every statement but a single SELECT. The verdict
// for a text is remembered (the schema never makes a SELECT something
// else).
func (e *engine) checkReadOnly(ctx context.Context, conn driver.Conn, q string) error {
	if plainSelect(q) {
		return nil
	}
	if ok, seen := e.selects.Load(q); seen {
		if ok.(bool) {
			return nil
		}
		return ErrReadOnly
	}
	st, err := conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return queryError(ctx, err)
	}
	typ, err := st.(*duckdb.Stmt).StatementType()
	_ = st.Close()
	if err != nil {
		return err
	}
	isSelect := typ == duckdb.STATEMENT_TYPE_SELECT
	if e.selectsN.Add(1) < 10000 {
		e.selects.Store(q, isSelect)
	}
	if !isSelect {
		return ErrReadOnly
	}
	return nil
}

// plainSelect reports whether q is one SELECT by its text alone: it starts
// with SELECT, FROM, VALUES or "(", and holds no comment and no semicolon
// but trailing ones. Such a text parses as a single SELECT or not at all;
// every other text goes to DuckDB's parser (checkReadOnly). It saves
// preparing every new ad-hoc query twice.
func plainSelect(q string) bool {
	q = strings.TrimRight(q, " \t\r\n;")
	q = strings.TrimLeft(q, " \t\r\n")
	if strings.ContainsAny(q, ";") || strings.Contains(q, "--") || strings.Contains(q, "/*") {
		return false
	}
	if strings.HasPrefix(q, "(") {
		return true
	}
	word, _, _ := strings.Cut(q, " ")
	word, _, _ = strings.Cut(word, "\n")
	word, _, _ = strings.Cut(word, "\t")
	switch strings.ToUpper(word) {
	case "SELECT", "FROM", "VALUES":
		return true
	}
	return false
}

func queryError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nserror.New(nserror.ServiceUnavailable, "query stopped: %w", ctx.Err())
	}
	msg := cleanDuckErr(err)
	if strings.Contains(msg, "Permission Error") || strings.Contains(msg, "disabled by configuration") ||
		strings.Contains(msg, "configuration has been locked") {
		return nserror.New(nserror.PermissionDenied, "%s", msg)
	}
	return nserror.New(nserror.InvalidInput, "%s", msg)
}

func cleanDuckErr(err error) string { return strings.TrimSpace(err.Error()) }

// purgeHistory forgets rows that stopped being current at or before seq:
// time travel then reaches back to seq.
func (e *engine) purgeHistory(ctx context.Context, seq uint64) error {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	for _, q := range []string{
		`DELETE FROM _objects WHERE _seq_to IS NOT NULL AND _seq_to <= ?`,
		`DELETE FROM _versions WHERE _seq_to IS NOT NULL AND _seq_to <= ?`,
		`UPDATE _meta SET oldest = greatest(oldest, ?)`,
	} {
		if _, err := e.writer.ExecContext(ctx, q, seq); err != nil {
			return err
		}
	}
	e.vmu.Lock()
	e.oldest = max(e.oldest, seq)
	e.vmu.Unlock()
	return nil
}

package manifesttable

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/nserror"
)

// engine loads __manifest into the SQL engine (package sqlengine): it is
// a read replica of the table's Go index: segments flow into it, nothing
// flows out of it into durable state.
//
// Physical tables keep the rows: _objects (namespaces and tables) and
// _versions (table versions, without an object_type column) hold the
// current rows, _objects_past and _versions_past the rows that stopped
// being current (kept for time travel until purged). Each row has the
// catalog sequence range in which it is current: [_seq_from, _seq_to),
// _seq_to NULL in the current tables. The view __manifest is the union of
// the current tables, with no filter of its own; the table macro
// manifest_at(n) is the union of all four at sequence n.
//
// That shape is what lets DuckDB use the ART index on object_id: a table
// scan uses an index only when exactly one filter is pushed into it. So
// the current rows need no filter to tell them from history; the view
// puts the constant 'table_version' in the versions branch (a filter on
// object_type folds away there); and its table_version is coalesce(x, x),
// the same value, which a Top-N (ORDER BY version … LIMIT) cannot push
// into the scan as a second, dynamic filter. A point look-up and a
// table's newest versions are then index scans at any size.
//
// Each segment applies in one transaction of the engine's writer,
// published at the segment's last sequence; queries are the engine's
// (sqlengine.DB.Query).
type engine struct {
	db *sqlengine.DB
	// The column set, guarded by the engine's writer (touch it only
	// inside db.Write).
	extra Columns
	raw   map[string]arrow.DataType
}

func openEngine(cfg sqlengine.Config) (*engine, error) {
	db, err := sqlengine.Open(cfg,
		`CREATE TABLE _objects (`+columnsDDL(true)+`, _seq_from UBIGINT NOT NULL, _seq_to UBIGINT)`,
		`CREATE TABLE _versions (`+columnsDDL(false)+`, _seq_from UBIGINT NOT NULL, _seq_to UBIGINT)`,
		`CREATE TABLE _objects_past AS FROM _objects`,
		`CREATE TABLE _versions_past AS FROM _versions`,
		`CREATE INDEX _objects_id ON _objects (object_id)`,
		`CREATE INDEX _versions_id ON _versions (object_id)`,
		// The keys a segment retires (retire), on the writer's connection
		// alone: no query's connection sees it.
		`CREATE TEMP TABLE _retiring (id VARCHAR NOT NULL, typ VARCHAR NOT NULL, br VARCHAR NOT NULL, ver UBIGINT, seq UBIGINT NOT NULL)`,
		droppedDDL,
	)
	if err != nil {
		return nil, fmt.Errorf("manifesttable: %w", err)
	}
	e := &engine{db: db, extra: Columns{}, raw: map[string]arrow.DataType{}}
	if err := db.Write(e.createViews); err != nil {
		_ = db.Close()
		return nil, err
	}
	return e, nil
}

func (e *engine) close() error { return e.db.Close() }

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
	{ColSpecID, "INTEGER"}, {ColBranch, "VARCHAR"},
	{ColNumRows, "UBIGINT"}, {ColNumFragments, "UBIGINT"}, {ColDataBytes, "UBIGINT"}, {ColSchema, "VARCHAR"},
	{ColSmallFragments, "UBIGINT"}, {ColDeletedRows, "UBIGINT"}, {ColOperation, "VARCHAR"}, {ColLastCleanupAt, "TIMESTAMPTZ"},
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

func quoteIdent(s string) string { return sqlengine.QuoteIdent(s) }

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
func (e *engine) createViews(w *sqlengine.Writer) error {
	cols := e.columnList()
	var obj, ver []string
	for _, c := range cols {
		q := quoteIdent(c)
		obj = append(obj, q)
		switch c {
		case ColObjectType:
			ver = append(ver, `'table_version' AS object_type`)
		case ColTableVersion:
			ver = append(ver, `coalesce(`+q+`, `+q+`) AS `+q)
		default:
			ver = append(ver, q)
		}
	}
	sel := func(cols []string, table, cond string) string {
		q := `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + table
		if cond != "" {
			q += ` WHERE ` + cond
		}
		return q
	}
	const current, past = `_seq_from <= n`, `_seq_from <= n AND _seq_to > n`
	stmts := []string{
		`CREATE OR REPLACE VIEW __manifest AS ` + sel(obj, "_objects", "") + ` UNION ALL ` + sel(ver, "_versions", ""),
		`CREATE OR REPLACE MACRO manifest_at(n) AS TABLE ` + strings.Join([]string{
			sel(obj, "_objects", current), sel(obj, "_objects_past", past),
			sel(ver, "_versions", current), sel(ver, "_versions_past", past)}, " UNION ALL "),
		`CREATE OR REPLACE VIEW namespaces AS SELECT object_id, metadata, committed_at FROM __manifest WHERE object_type = 'namespace'`,
		`CREATE OR REPLACE VIEW tables AS SELECT * EXCLUDE (object_type, table_version, manifest_path, manifest_size, branch, num_rows, num_fragments, data_bytes, schema, ` +
			`small_fragments, deleted_rows, operation, last_cleanup_at) FROM __manifest WHERE object_type = 'table'`,
		// Straight from _versions: nothing of _objects to bind, plan or scan.
		`CREATE OR REPLACE VIEW dropped AS SELECT * FROM _dropped`,
		`CREATE OR REPLACE VIEW table_versions AS SELECT object_id AS table_id, branch, coalesce(table_version, table_version) AS version, manifest_path, manifest_size, committed_at, txn_id, metadata, num_rows, num_fragments, data_bytes, schema, ` +
			`small_fragments, deleted_rows, operation FROM _versions`,
		`CREATE OR REPLACE VIEW table_maintenance AS ` + maintenanceQuery(`(SELECT object_id, last_cleanup_at FROM _objects WHERE object_type = 'table')`, `_versions`),
		`CREATE OR REPLACE MACRO table_maintenance_at(n) AS TABLE ` + maintenanceQuery(
			`(SELECT object_id, last_cleanup_at FROM manifest_at(n) WHERE object_type = 'table')`,
			`(SELECT * FROM manifest_at(n) WHERE object_type = 'table_version')`),
	}
	// What a request scoped to some namespaces sees (sqlengine.Scope):
	// the same relations, of the rows in its scope.
	stmts = append(stmts, `CREATE SCHEMA IF NOT EXISTS `+sqlengine.ScopedSchema)
	for _, r := range Relations {
		col := ColObjectID
		if r.Name == "table_versions" || r.Name == "table_maintenance" {
			col = "table_id"
		}
		stmts = append(stmts, `CREATE OR REPLACE VIEW `+sqlengine.ScopedSchema+`.`+quoteIdent(r.Name)+` AS SELECT * FROM `+
			DatabaseName+`.`+SchemaName+`.`+quoteIdent(r.Name)+` WHERE `+sqlengine.ScopeFilter(quoteIdent(col), IDSeparator))
	}
	if err := w.ExecAll(stmts...); err != nil {
		return fmt.Errorf("manifesttable: %w", err)
	}
	return nil
}

// IDSeparator joins the names of an object id in object_id.
const IDSeparator = "$"

// addColumns adds extra columns the engine does not have yet.
func (e *engine) addColumns(w *sqlengine.Writer, extra Columns, raw map[string]arrow.DataType) error {
	added := false
	for _, name := range extra.Names() {
		t := extra[name]
		if have, ok := e.extra[name]; ok {
			if have != t {
				return nserror.New(nserror.InvalidInput, "column %s is %s, not %s", name, have, t)
			}
			continue
		}
		for _, tbl := range physicalTables {
			if err := w.Exec(fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s %s`, tbl, quoteIdent(name), sqlType(t))); err != nil {
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
		for _, tbl := range physicalTables {
			if err := w.Exec(fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s VARCHAR`, tbl, quoteIdent(name))); err != nil {
				return err
			}
		}
		e.raw[name] = raw[name]
		added = true
	}
	if added {
		return e.createViews(w)
	}
	return nil
}

// physicalTables are the tables that hold the rows, all with the same
// columns but for object_type (absent from the versions tables).
var physicalTables = []string{"_objects", "_objects_past", "_versions", "_versions_past"}

// tableIndex is the index in physicalTables of the table of a row of type
// typ, current or not.
func tableIndex(typ string, current bool) int {
	i := 0
	if typ == TypeTableVersion {
		i = 2
	}
	if !current {
		i++
	}
	return i
}

// retire is a current row that a change moves to the past: the change's
// sequence becomes its _seq_to.
type retire struct {
	key Key
	seq uint64
}

// retireBatch bounds the keys retired at once.
const retireBatch = 4096

// retire moves the current rows of rs to the past tables: the keys go into
// _retiring through Arrow, then one statement pair per physical table
// joins them. The statements' text never changes, so DuckDB plans each in
// a constant time, where a list of the keys in the text (a VALUES list of
// parameters) cost it a plan that grew with the segment: most of the SQL
// worker's time.
func (e *engine) retire(w *sqlengine.Writer, rs []retire) error {
	b := array.NewRecordBuilder(memAlloc, retiringSchema)
	defer b.Release()
	id, typ, br := b.Field(0).(*array.StringBuilder), b.Field(1).(*array.StringBuilder), b.Field(2).(*array.StringBuilder)
	ver, seq := b.Field(3).(*array.Uint64Builder), b.Field(4).(*array.Uint64Builder)
	var some [2]bool // some retire: [0] objects, [1] versions
	for _, r := range rs {
		id.Append(r.key.ID)
		typ.Append(r.key.Type)
		br.Append(r.key.Branch)
		if r.key.Type == TypeTableVersion {
			ver.Append(r.key.Version)
		} else {
			ver.AppendNull()
		}
		seq.Append(r.seq)
		some[boolIndex(r.key.Type == TypeTableVersion)] = true
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.InsertArrow("_retiring", []string{"id", "typ", "br", "ver", "seq"}, rec); err != nil {
		return err
	}
	for _, versions := range []bool{false, true} {
		if !some[boolIndex(versions)] {
			continue
		}
		typ, cond := TypeNamespace, `r.ver IS NULL AND c.object_id = r.id AND c.object_type = r.typ`
		if versions {
			typ, cond = TypeTableVersion, `r.ver IS NOT NULL AND c.object_id = r.id AND coalesce(c.branch, '') = r.br AND c.table_version = r.ver`
		}
		cur, past := tableOf(typ, true), tableOf(typ, false)
		if err := w.ExecPrepared(`INSERT INTO ` + past + ` SELECT c.* REPLACE (r.seq AS _seq_to) FROM ` + cur + ` c, _retiring r WHERE ` + cond); err != nil {
			return err
		}
		if err := w.ExecPrepared(`DELETE FROM ` + cur + ` c USING _retiring r WHERE ` + cond); err != nil {
			return err
		}
	}
	return w.ExecPrepared(`DELETE FROM _retiring`)
}

// boolIndex is 1 for true, 0 for false.
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// retiringSchema is the Arrow form of _retiring's rows.
var retiringSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "typ", Type: arrow.BinaryTypes.String},
	{Name: "br", Type: arrow.BinaryTypes.String}, {Name: "ver", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
}, nil)

// tableOf is the physical table of a row of type typ, current or not.
func tableOf(typ string, current bool) string { return physicalTables[tableIndex(typ, current)] }

// insertRows appends rows (to the table of their type, and of the current
// rows or the past ones), row i current over [from[i], to[i]) (to[i] 0:
// still current), through DuckDB's appender.
func (e *engine) insertRows(w *sqlengine.Writer, rows []Row, from, to []uint64) error {
	var parts [4]struct {
		rows     []Row
		from, to []uint64
	}
	for i := range rows {
		p := &parts[tableIndex(rows[i].ObjectType, to[i] == 0)]
		p.rows = append(p.rows, rows[i])
		p.from = append(p.from, from[i])
		p.to = append(p.to, to[i])
	}
	for i, table := range physicalTables {
		p := parts[i]
		if len(p.rows) == 0 {
			continue
		}
		rec := buildRecord(Schema(e.extra, e.raw, false), rawAsString(p.rows, e.raw), nil)
		err := e.insertRecord(w, table, rec, p.from, p.to)
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

// insertRecord inserts rec into table, row i current over [from[i],
// to[i]) (to nil or to[i] 0: still current). Call it inside a Publish.
func (e *engine) insertRecord(w *sqlengine.Writer, table string, rec arrow.RecordBatch, from, to []uint64) error {
	var cols []string
	for _, c := range e.columnList() {
		if strings.HasPrefix(table, "_versions") && c == ColObjectType {
			continue
		}
		cols = append(cols, c)
	}
	proj, err := projectRecord(rec, cols, from, to)
	if err != nil {
		return err
	}
	defer proj.Release()
	return w.InsertArrow(table, append(cols, "_seq_from", "_seq_to"), proj)
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
func (e *engine) insertMixed(w *sqlengine.Writer, rec arrow.RecordBatch, seq uint64) error {
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
		typ := TypeTable
		if isVer {
			typ = TypeTableVersion
		}
		err := e.insertRecord(w, tableOf(typ, true), part, seqs, nil)
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
func (e *engine) applySegment(seg *segment) error {
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
	err := e.db.Write(func(w *sqlengine.Writer) error {
		if err := e.addColumns(w, extra, raw); err != nil {
			return err
		}
		return w.Publish(seg.Last, func() error {
			for start := 0; start < len(retires); start += retireBatch {
				if err := e.retire(w, retires[start:min(start+retireBatch, len(retires))]); err != nil {
					return err
				}
			}
			if len(puts) == 0 {
				return nil
			}
			return e.insertRows(w, puts, from, to)
		})
	})
	if err != nil {
		return fmt.Errorf("manifesttable: applying segment %d..%d: %w", seg.First, seg.Last, err)
	}
	return nil
}

// loadFrozen inserts the rows of a frozen index into empty tables,
// current from its sequence.
func (e *engine) loadFrozen(f *frozen) error { return e.load(f, false) }

// reload replaces every row, history included, with those of a frozen
// index, current from its sequence.
func (e *engine) reload(f *frozen) error { return e.load(f, true) }

func (e *engine) load(f *frozen, replace bool) error {
	return e.db.Write(func(w *sqlengine.Writer) error {
		if err := e.addColumns(w, f.extra, f.raw); err != nil {
			return err
		}
		schema := Schema(f.extra, f.raw, false)
		// One transaction: no query sees part of the load.
		return w.Replace(f.seq, func() error {
			if replace {
				var clear []string
				for _, t := range physicalTables {
					clear = append(clear, `DELETE FROM `+t)
				}
				if err := w.ExecAll(clear...); err != nil {
					return err
				}
			}
			for {
				rows := f.next(rowGroupRows)
				if len(rows) == 0 {
					return nil
				}
				rec := buildRecord(schema, rows, nil)
				srec := castRawColumns(rec, f.raw)
				rec.Release()
				err := e.insertMixed(w, srec, f.seq)
				srec.Release()
				if err != nil {
					return err
				}
			}
		})
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

// purgeHistory forgets rows that stopped being current at or before seq:
// time travel then reaches back to seq.
func (e *engine) purgeHistory(seq uint64) error {
	return e.db.Write(func(w *sqlengine.Writer) error {
		err := w.ExecAll(
			fmt.Sprintf(`DELETE FROM %s WHERE _seq_to <= %d`, tableOf(TypeTable, false), seq),
			fmt.Sprintf(`DELETE FROM %s WHERE _seq_to <= %d`, tableOf(TypeTableVersion, false), seq))
		if err != nil {
			return err
		}
		return w.Forget(seq)
	})
}

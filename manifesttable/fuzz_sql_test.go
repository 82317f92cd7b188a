package manifesttable

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/nserror"
)

// The sandbox fuzzers (FuzzSQL here, FuzzSQLGrammar in
// fuzz_grammar_test.go) run caller SQL against one real catalog and check,
// after every input, what issue 14 asks of the SQL surface:
//
//   - nothing panics or crashes;
//   - every path (Table.Query, with and without bound parameters, and
//     Table.QuerySchema, the prepared path) either ran the text as a read
//     or failed with InvalidInput, PermissionDenied, Throttling or
//     ServiceUnavailable (a timeout), and it did not hang;
//   - the gate never admits a statement that writes: DuckDB's read-only
//     transaction, the second line, must never be what stops one;
//   - a text refused for holding several statements was refused before any
//     of it was bound (the fuzz_probe table function counts its binds);
//   - the engine's object catalog is what it was: __manifest and the
//     tables behind it (row counts and a hash over every column), the
//     tables, views, macros, types, sequences, schemas, indexes and
//     databases DuckDB lists, its secrets (which DuckDB cannot list under
//     the engine's lockdown: the fingerprint records that it cannot), and
//     its global settings.

const (
	// fuzzTimeout bounds each call an input makes.
	fuzzTimeout = 2 * time.Second
	// fuzzSlack is how long past its deadline a call may take to return.
	// DuckDB is interrupted at the deadline, but it cannot stop inside one
	// long step (a repeat() of a gigabyte); in flightns serve the SQL
	// worker process bounds those (package sqlworker,
	// TestRunawayQueriesStayWithinTheirBounds). In this process the slack
	// only catches hangs.
	fuzzSlack = 20 * time.Second
)

// reporter is what the checks need of a *testing.T.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// sandbox is one catalog and its engine, opened once per fuzzer.
type sandbox struct {
	tb    *Table
	want  string       // the engine's fingerprint before any input
	binds atomic.Int64 // binds of fuzz_probe
}

func newSandbox(f *testing.F) *sandbox {
	f.Helper()
	e := newTenv(f)
	tb := e.open()
	f.Cleanup(func() { _ = tb.Close() })
	s := &sandbox{tb: tb}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seq, err := tb.Append(ctx, sampleChanges())
	if err == nil {
		err = tb.WaitDurable(ctx, seq)
	}
	if err == nil {
		err = tb.WaitVisible(ctx, seq)
	}
	if err != nil {
		f.Fatal(err)
	}
	err = tb.RegisterTableFunction(ctx, sqlengine.TableFunc{Name: "fuzz_probe", Args: 1,
		Bind: func(_ context.Context, args []string) (*arrow.Schema, []arrow.RecordBatch, error) {
			s.binds.Add(1)
			schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)
			b := array.NewRecordBuilder(memAlloc, schema)
			defer b.Release()
			b.Field(0).(*array.StringBuilder).Append(args[0])
			return schema, []arrow.RecordBatch{b.NewRecordBatch()}, nil
		}})
	if err != nil {
		f.Fatal(err)
	}
	s.want = s.fingerprint()
	if strings.Contains(s.want, "error: ") {
		f.Fatalf("the engine's fingerprint cannot be taken:\n%s", s.want)
	}
	if again := s.fingerprint(); again != s.want {
		f.Fatalf("the engine's fingerprint is not stable:\n%s", fingerprintDiff(s.want, again))
	}
	return s
}

// fingerprintSQL lists everything of the engine a query must not change:
// each query is one line of the fingerprint (they run at once).
var fingerprintSQL = []string{
	`SELECT concat_ws(chr(10),
 (SELECT '__manifest ' || count(*) || ' ' || coalesce(sum(hash(m)), 0) FROM __manifest m),
 (SELECT '_objects ' || count(*) || ' ' || coalesce(sum(hash(o)), 0) FROM _objects o),
 (SELECT '_versions ' || count(*) || ' ' || coalesce(sum(hash(v)), 0) FROM _versions v),
 (SELECT '_meta ' || count(*) || ' ' || coalesce(sum(hash(x)), 0) FROM _meta x),
 (SELECT 'manifest_at ' || count(*) || ' ' || coalesce(sum(hash(m)), 0) FROM manifest_at(1) m),
 (SELECT 'manifest_at(now) ' || count(*) || ' ' || coalesce(sum(hash(m)), 0) FROM manifest_at(1000000) m))`,
	`SELECT concat_ws(chr(10),
 (SELECT 'tables ' || coalesce(string_agg(concat_ws(' ', database_name, schema_name, table_name, temporary, column_count, sql), ' | '
   ORDER BY database_name, schema_name, table_name), '') FROM duckdb_tables()),
 (SELECT 'views ' || coalesce(string_agg(concat_ws(' ', database_name, schema_name, view_name, temporary, sql), ' | '
   ORDER BY database_name, schema_name, view_name), '') FROM duckdb_views() WHERE NOT internal),
 (SELECT 'types ' || coalesce(string_agg(concat_ws(' ', database_name, schema_name, type_name, logical_type), ' | '
   ORDER BY database_name, schema_name, type_name), '') FROM duckdb_types() WHERE NOT internal),
 (SELECT 'sequences ' || coalesce(string_agg(concat_ws(' ', database_name, schema_name, sequence_name, temporary, start_value, last_value), ' | '
   ORDER BY database_name, schema_name, sequence_name), '') FROM duckdb_sequences()),
 (SELECT 'schemas ' || coalesce(string_agg(concat_ws(' ', database_name, schema_name), ' | '
   ORDER BY database_name, schema_name), '') FROM duckdb_schemas()),
 (SELECT 'indexes ' || coalesce(string_agg(concat_ws(' ', database_name, schema_name, index_name, table_name, sql), ' | '
   ORDER BY database_name, schema_name, index_name), '') FROM duckdb_indexes()),
 (SELECT 'databases ' || coalesce(string_agg(concat_ws(' ', database_name, path, type, readonly, internal), ' | '
   ORDER BY database_name), '') FROM duckdb_databases()),
 (SELECT 'logs ' || count(*) FROM duckdb_logs))`,
	// Macros and table macros (and any function not DuckDB's own).
	`SELECT 'functions ' || coalesce(string_agg(concat_ws(' ', database_name, schema_name, function_name, function_type, macro_definition), ' | '
   ORDER BY database_name, schema_name, function_name, function_type, macro_definition), '')
 FROM duckdb_functions() WHERE NOT internal OR function_type IN ('macro', 'table_macro') AND database_name <> 'system'`,
	// The settings named in issue 14 (readable when they change), and
	// every global one.
	`SELECT 'settings ' || string_agg(name || '=' || coalesce(value, 'NULL'), ' ' ORDER BY name)
   FILTER (WHERE name IN ('threads', 'memory_limit', 'max_temp_directory_size', 'enable_external_access', 'lock_configuration'))
   || chr(10) || 'global settings ' || sum(hash(name, value)) FILTER (WHERE scope = 'GLOBAL') FROM duckdb_settings()`,
	// The secrets. Under the engine's lockdown DuckDB cannot list them (it
	// would read its persistent secret directory): the line then says so.
	`SELECT 'secrets ' || coalesce(string_agg(concat_ws(' ', name, type, provider, persistent, storage, scope), ' | ' ORDER BY name), '') FROM duckdb_secrets()`,
}

// fingerprint is the engine's object catalog, taken through Table.Query
// (it is an ordinary read), one line per kind of object.
func (s *sandbox) fingerprint() string {
	lines := make([]string, len(fingerprintSQL))
	var wg sync.WaitGroup
	for i, q := range fingerprintSQL {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lines[i] = s.scalar(q)
		}()
	}
	wg.Wait()
	if last := len(lines) - 1; strings.HasPrefix(lines[last], "error: ") {
		// Its message varies: the first listing fails on the directory,
		// later ones on the half-initialized secret manager.
		lines[last] = "secrets cannot be listed"
	}
	return strings.Join(lines, "\n")
}

// scalar is a query's first value, or its error.
func (s *sandbox) scalar(q string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.tb.Query(ctx, q)
	if err != nil {
		return "error: " + firstLine(err.Error())
	}
	defer res.Release()
	out := "error: no row"
	for res.Next() {
		if rec := res.RecordBatch(); rec.NumRows() > 0 && out == "error: no row" {
			out = cell(rec.Column(0), 0)
		}
	}
	if err := res.Err(); err != nil {
		return "error: " + firstLine(err.Error())
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// fingerprintDiff shows the lines of two fingerprints that differ.
func fingerprintDiff(was, is string) string {
	a, b := strings.Split(was, "\n"), strings.Split(is, "\n")
	var out []string
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			out = append(out, "  was: "+x, "  now: "+y)
		}
	}
	return strings.Join(out, "\n")
}

// checkCatalog fails the input if the engine's objects changed. The new
// state becomes the reference, so that only the input that changed it
// is blamed.
func (s *sandbox) checkCatalog(t reporter, q string) {
	t.Helper()
	if got := s.fingerprint(); got != s.want {
		was := s.want
		s.want = got
		t.Errorf("%q changed the engine's objects (or broke the engine):\n%s", q, fingerprintDiff(was, got))
	}
}

// allowedCode says whether a refusal or failure has one of the codes the
// SQL surface may answer a caller's text with.
func allowedCode(c nserror.Code) bool {
	switch c {
	case nserror.InvalidInput, nserror.PermissionDenied, nserror.Throttling, nserror.ServiceUnavailable:
		return true
	}
	return false
}

var multiRefusal = regexp.MustCompile(`^the SQL text holds (\d+) statements: `)

// refusedAsMulti says whether err is the gate's refusal of a text of
// several statements, and of how many.
func refusedAsMulti(err error) (int, bool) {
	if err == nil || nserror.CodeOf(err) != nserror.PermissionDenied {
		return 0, false
	}
	m := multiRefusal.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	var n int
	_, _ = fmt.Sscan(m[1], &n)
	return n, true
}

// refusedByGate says whether err is one of the gate's own refusals.
func refusedByGate(err error) bool {
	if err == nil || nserror.CodeOf(err) != nserror.PermissionDenied {
		return false
	}
	msg := err.Error()
	_, multi := refusedAsMulti(err)
	return multi || strings.Contains(msg, " statements are refused: flightns SQL only reads") ||
		strings.HasPrefix(msg, "flightns cannot tell what this EXPLAIN explains")
}

// stoppedByReadOnly says whether err is DuckDB's read-only transaction
// stopping a write: the gate let a writing statement through.
func stoppedByReadOnly(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "transaction is launched in read-only mode") ||
		strings.Contains(err.Error(), "read-only transaction"))
}

// query runs q through Table.Query and reads its whole result. ran is true
// when the statement started (Query returned a result); err is Query's
// error or the stream's.
func (s *sandbox) query(t reporter, q string, args ...any) (ran bool, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fuzzTimeout)
	defer cancel()
	start := time.Now()
	res, err := s.tb.Query(ctx, q, args...)
	if err == nil {
		ran = true
		for res.Next() {
		}
		err = res.Err()
		res.Release()
	}
	s.checkCall(t, "Query", q, args, time.Since(start), err)
	return ran, err
}

// schema runs q through Table.QuerySchema.
func (s *sandbox) schema(t reporter, q string) ([]arrow.DataType, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fuzzTimeout)
	defer cancel()
	start := time.Now()
	_, params, err := s.tb.QuerySchema(ctx, q)
	s.checkCall(t, "QuerySchema", q, nil, time.Since(start), err)
	return params, err
}

// checkCall holds one call to the invariants every path shares.
func (s *sandbox) checkCall(t reporter, path, q string, args []any, took time.Duration, err error) {
	t.Helper()
	if took > fuzzTimeout+fuzzSlack {
		t.Errorf("%s(%q, %v) took %v: a %v deadline must stop it within %v", path, q, args, took.Round(time.Millisecond), fuzzTimeout, fuzzSlack)
	}
	if err == nil {
		return
	}
	if c := nserror.CodeOf(err); !allowedCode(c) {
		t.Errorf("%s(%q, %v): code %v (%d), want InvalidInput, PermissionDenied, Throttling or ServiceUnavailable: %v", path, q, args, c, int(c), err)
	}
	if stoppedByReadOnly(err) {
		t.Errorf("%s(%q, %v): the gate admitted a statement that writes; DuckDB's read-only transaction stopped it: %v", path, q, args, err)
	}
}

// argsFor is a value for each parameter of the given types (nil: n
// strings).
func argsFor(params []arrow.DataType, n int, text string) []any {
	if params == nil {
		params = make([]arrow.DataType, n)
	}
	args := make([]any, len(params))
	for i, p := range params {
		switch {
		case p == nil || text != "":
			args[i] = text
		case arrow.TypeEqual(p, arrow.PrimitiveTypes.Int64):
			args[i] = int64(1)
		case arrow.TypeEqual(p, arrow.PrimitiveTypes.Uint64):
			args[i] = uint64(1)
		case arrow.TypeEqual(p, arrow.PrimitiveTypes.Float64):
			args[i] = 1.5
		case arrow.TypeEqual(p, arrow.FixedWidthTypes.Boolean):
			args[i] = true
		case arrow.TypeEqual(p, arrow.BinaryTypes.Binary):
			args[i] = []byte("1")
		case arrow.TypeEqual(p, arrow.FixedWidthTypes.Timestamp_us), arrow.TypeEqual(p, arrow.FixedWidthTypes.Date32):
			args[i] = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		default:
			args[i] = "1"
		}
	}
	return args
}

// hostileArg is the text bound as every parameter in a second run.
const hostileArg = "1'; DROP VIEW tables; SELECT '1"

// sqlRun is what the paths did with one text.
type sqlRun struct {
	ran       bool  // Query (without parameters) started the statement
	err       error // its error
	schemaErr error // QuerySchema's
	boundRan  bool  // a run with bound parameters started
	boundErr  error
	binds     int64 // binds of fuzz_probe during all of it
}

// exercise runs q on every path: QuerySchema, Query, and for a text with
// parameters (or a "?"), Query with typed values bound and with a hostile
// string bound. It checks the invariants every text shares, except the
// catalog's (checkCatalog).
func (s *sandbox) exercise(t reporter, q string, nParams int) sqlRun {
	t.Helper()
	var r sqlRun
	before := s.binds.Load()
	var params []arrow.DataType
	params, r.schemaErr = s.schema(t, q)
	if r.schemaErr != nil {
		params = nil
	}
	r.ran, r.err = s.query(t, q)
	if n := max(len(params), nParams); n > 0 || strings.Contains(q, "?") {
		if n == 0 {
			n = 1
		}
		r.boundRan, r.boundErr = s.query(t, q, argsFor(params, n, "")...)
		if ran, _ := s.query(t, q, argsFor(params, n, hostileArg)...); ran {
			r.boundRan = true
		}
	}
	r.binds = s.binds.Load() - before

	// A text the gate refuses is refused on every path.
	if refusedByGate(r.err) && r.schemaErr == nil {
		t.Errorf("%q: Query refused it (%v) but QuerySchema admitted it", q, r.err)
	}
	if refusedByGate(r.schemaErr) && (r.ran || r.boundRan) {
		t.Errorf("%q: QuerySchema refused it (%v) but Query ran it", q, r.schemaErr)
	}
	// Several statements are refused before any is bound.
	_, multiQ := refusedAsMulti(r.err)
	_, multiS := refusedAsMulti(r.schemaErr)
	if (multiQ || multiS) && r.binds != 0 {
		t.Errorf("%q: refused for holding several statements, yet fuzz_probe was bound %d times", q, r.binds)
	}
	if multiQ != multiS && r.err != nil && r.schemaErr != nil {
		t.Errorf("%q: Query and QuerySchema disagree on its statements: %v / %v", q, r.err, r.schemaErr)
	}
	return r
}

// FuzzSQL: no statement text — DDL, DML, COPY, ATTACH, SET, PRAGMA,
// several statements joined with ";", comments, string tricks, nonsense —
// changes the engine's objects or panics: on every path a text either
// runs as a read or fails with an allowed code (see sandbox).
func FuzzSQL(f *testing.F) {
	for _, q := range fuzzSQLSeeds() {
		f.Add(q)
	}
	s := newSandbox(f)
	f.Fuzz(func(t *testing.T, q string) {
		s.exercise(t, q, 0)
		s.checkCatalog(t, q)
	})
}

// fuzzAttacks are statements that must never run, each also joined
// before and after a SELECT (testdata/fuzz/FuzzSQL holds issue 14's).
var fuzzAttacks = []string{
	"DELETE FROM _objects", "DETACH flightns", "USE memory", "ROLLBACK", "CREATE TEMP TABLE t (a INT)",
	"SELECT * FROM fuzz_probe('x')",
}

// fuzzSQLSeeds are FuzzSQL's seeds, a few of each kind of statement
// (testdata/fuzz/FuzzSQL holds the attacks of issue 14 and the inputs
// that broke an invariant).
func fuzzSQLSeeds() []string {
	seeds := []string{
		// reads, and the original seeds
		"SELECT count(*) FROM __manifest", "FROM __manifest", "VALUES (1)", "(SELECT 1)", "select/**/1",
		"SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM glob('/*')", "DELETE FROM _objects",
		"INSERT INTO _objects SELECT * FROM _objects", "UPDATE _meta SET seq = 0", "DROP TABLE _versions",
		// comments
		"-- x\nSELECT 1", "/* ; DROP TABLE _meta */ SELECT 1", "/* /* */ DROP TABLE _meta; */ SELECT 1",
		"SELECT 1 -- ; DROP TABLE _meta", "EXPLAIN ANALYZE /* /* */ */ DELETE FROM _meta",
		// string tricks
		"SELECT 'a;b'; DROP TABLE _meta", "SELECT $$;DROP TABLE _meta;$$", `SELECT E'\\'; DROP TABLE _meta; --'`,
		`SELECT 1 AS "a""b; DROP VIEW tables"`, "SELECT 'unterminated; DROP TABLE _meta",
		// EXPLAIN and EXPLAIN ANALYZE of writes
		"EXPLAIN DELETE FROM _meta", "EXPLAIN ANALYZE INSERT INTO _meta VALUES (9, 9)", "EXPLAIN ANALYZE CREATE TEMP TABLE pwn AS SELECT 1",
		"EXPLAIN (ANALYZE) DELETE FROM _meta", "EXPLAIN ANALYZE EXPLAIN SELECT 1", "EXPLAIN ANALYZE SET threads = 1",
		// PIVOT
		"PIVOT __manifest ON object_type USING count(*)", "PIVOT __manifest ON object_type IN ('namespace', 'table') USING count(*)",
		// PRAGMA
		"PRAGMA table_info('_meta')", "PRAGMA threads = 64", "PRAGMA force_checkpoint", "PRAGMA import_database('x')",
		// CALL
		"CALL checkpoint()", "CALL enable_logging()", "CALL query('SELECT 1')", "CALL fuzz_probe('x')",
		// ATTACH, DETACH, USE, SET, RESET, SET VARIABLE
		"ATTACH ':memory:' AS flightns", "DETACH DATABASE IF EXISTS memory", "USE flightns.main", "SET GLOBAL threads = 1",
		"RESET memory_limit", "SET VARIABLE v = 1", "SET lock_configuration = false",
		// transactions
		"BEGIN", "COMMIT", "ROLLBACK",
		// CREATE TEMP, and every kind of object
		"CREATE TEMP VIEW tables AS SELECT 1", "CREATE TEMP MACRO manifest_at(n) AS TABLE SELECT 1",
		"CREATE OR REPLACE VIEW namespaces AS SELECT 'forged' AS object_id", "CREATE MACRO m(x) AS x + 1",
		"CREATE TYPE t AS STRUCT(a INT)", "CREATE SEQUENCE s", "CREATE SCHEMA s", "CREATE TEMP SECRET s (TYPE s3, KEY_ID 'k', SECRET 'v')",
		// INSTALL, LOAD, COPY, EXPORT, IMPORT
		"INSTALL httpfs", "LOAD httpfs", "COPY _objects TO 'x.csv'", "COPY FROM DATABASE flightns TO memory",
		"EXPORT DATABASE 'x'", "IMPORT DATABASE 'x'",
		// CHECKPOINT, VACUUM, ANALYZE
		"CHECKPOINT", "VACUUM", "ANALYZE _objects",
		// table functions with side effects
		"SELECT * FROM checkpoint()", "SELECT * FROM force_checkpoint()", "SELECT * FROM enable_logging()",
		"SELECT * FROM truncate_duckdb_logs()", "SELECT * FROM query('SELECT count(*) FROM __manifest')",
		"SELECT * FROM query('DROP VIEW tables')", "SELECT * FROM query_table(['_objects', '_versions'], true)",
		"SELECT * FROM duckdb_secrets()",
		// parameters
		"SELECT ?", "SELECT * FROM manifest_at(?)", "SELECT ?; DROP TABLE _meta", "SELECT * FROM fuzz_probe(?)", "SELECT $1, $2",
	}
	for _, a := range fuzzAttacks {
		seeds = append(seeds, a+"; SELECT 1", "SELECT count(*) FROM __manifest;\n"+a)
	}
	return seeds
}

package manifesttable

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/flightns/flightns/nserror"
)

// FuzzSQLGrammar composes statements from DuckDB's grammar, driven by the
// fuzz input's bytes: every statement type (queries of every form, PRAGMA
// read and write forms, EXPLAIN [ANALYZE] of anything, and every
// statement that is not a query), one or several joined with ";",
// wrapped in comments and whitespace, with string tricks inside, aimed at
// the engine's real objects (__manifest, _objects, _versions, _meta, the
// views namespaces, tables and table_versions, the macro manifest_at, the
// database flightns). Besides what every text must hold (see sandbox):
//
//   - a text of two or more non-empty statements is refused with
//     PermissionDenied, naming how many, on every path, before any of it
//     is bound or run;
//   - a single statement that is not a query is refused on every path
//     (QuerySchema too: the gate must not admit it), and nothing of it
//     runs;
//   - a single query that touches no files runs, and its schema is given
//     (an EXPLAIN the gate cannot take apart may be refused instead).
func FuzzSQLGrammar(f *testing.F) {
	for _, seed := range grammarSeeds() {
		f.Add(seed)
	}
	s := newSandbox(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		in := generateSQL(data)
		r := s.exercise(t, in.text, in.params)
		switch {
		case len(in.kinds) >= 2:
			checkMulti(t, in, r)
		case len(in.kinds) == 1:
			checkSingle(t, in, r)
		}
		s.checkCatalog(t, in.text)
	})
}

// checkMulti: several statements are refused whole, before anything of
// them is bound or run.
func checkMulti(t reporter, in generated, r sqlRun) {
	t.Helper()
	if r.ran || r.boundRan {
		t.Errorf("%q: %d statements, and Query ran them", in.text, len(in.kinds))
	}
	if r.binds != 0 {
		t.Errorf("%q: %d statements, and fuzz_probe was bound %d times", in.text, len(in.kinds), r.binds)
	}
	for path, err := range map[string]error{"Query": r.err, "QuerySchema": r.schemaErr} {
		if err == nil {
			t.Errorf("%q: %d statements, and %s admitted them", in.text, len(in.kinds), path)
			continue
		}
		if n, ok := refusedAsMulti(err); ok {
			if n != len(in.kinds) {
				t.Errorf("%q: %s counted %d statements, it holds %d", in.text, path, n, len(in.kinds))
			}
			continue
		}
		// Otherwise DuckDB could not split the text (a parse error, a
		// PRAGMA it could not expand): InvalidInput, before anything of
		// it was prepared.
		if nserror.CodeOf(err) != nserror.InvalidInput {
			t.Errorf("%q: %d statements, and %s refused them with %v, not as several statements", in.text, len(in.kinds), path, err)
		}
	}
}

// checkSingle holds one statement to what its kind must do.
func checkSingle(t reporter, in generated, r sqlRun) {
	t.Helper()
	switch in.kinds[0] {
	case kindQuery:
		err := r.err
		if in.params > 0 {
			err = r.boundErr
		}
		for path, err := range map[string]error{"Query": err, "QuerySchema": r.schemaErr} {
			if err != nil && !explainNotUnderstood(in.text, err) {
				t.Errorf("%q: a query that touches no files failed on %s: %v", in.text, path, err)
			}
		}
	case kindWrite, kindWriteQ:
		if r.ran || r.boundRan {
			t.Errorf("%q: not a query, and Query ran it (%v)", in.text, r.err)
		}
		if r.schemaErr == nil {
			t.Errorf("%q: not a query, and QuerySchema admitted it", in.text)
		}
	}
}

// explainNotUnderstood says whether err is the gate refusing an EXPLAIN it
// cannot take apart (comments it does not skip, options it does not
// read): a refusal on the safe side, not a failure of the query.
func explainNotUnderstood(text string, err error) bool {
	return strings.Contains(strings.ToUpper(text), "EXPLAIN") && nserror.CodeOf(err) == nserror.PermissionDenied &&
		strings.HasPrefix(err.Error(), "flightns cannot tell what this EXPLAIN explains")
}

// stmtKind is what the gate must do with a statement.
type stmtKind int

const (
	// kindQuery only reads and touches no files: it runs.
	kindQuery stmtKind = iota
	// kindRead only reads, but may fail (files, side-effect table
	// functions, EXPLAIN of a PRAGMA): it runs or fails, and changes
	// nothing.
	kindRead
	// kindWrite is not a query: refused.
	kindWrite
	// kindWriteQ is not a query but starts with a query's keyword
	// (EXPLAIN, WITH, PRAGMA): refused.
	kindWriteQ
)

func (k stmtKind) String() string {
	return [...]string{"query", "read", "write", "write led by a query keyword"}[k]
}

// generated is one fuzz input's SQL text and what it holds.
type generated struct {
	text   string
	kinds  []stmtKind // one per non-empty statement
	params int        // ? placeholders
}

// grammar draws choices from the fuzz input: each choice takes one byte
// (0 once the input is used up, so that every input ends in defaults).
type grammar struct {
	in     []byte
	pos    int
	params int
}

func (g *grammar) byte() byte {
	if g.pos >= len(g.in) {
		return 0
	}
	b := g.in[g.pos]
	g.pos++
	return b
}

// n picks a number in [0, k).
func (g *grammar) n(k int) int { return int(g.byte()) % k }

// of picks one of xs.
func (g *grammar) of(xs ...string) string { return xs[g.n(len(xs))] }

// maybe is s or "" (mostly "", and "" once the input is used up).
func (g *grammar) maybe(s string) string {
	if g.n(3) == 1 {
		return s
	}
	return ""
}

// sp is the space between two tokens: mostly a blank, sometimes a
// comment (DuckDB ends a line comment at \n or \r; block comments nest).
func (g *grammar) sp() string {
	switch g.n(32) {
	case 22:
		return "\n"
	case 23:
		return "\t"
	case 24:
		return " /* c */ "
	case 25:
		return " -- c\n"
	case 26:
		return " --c\r"
	case 27:
		return "/**/"
	case 28:
		return " /* a /* nested */ b */ "
	case 29:
		return "\r\n"
	case 30:
		return " /* ; DROP VIEW tables; */ "
	case 31:
		return " -- ; DROP VIEW tables\n"
	}
	return " "
}

// w joins tokens with spaces drawn by sp ("" tokens are left out).
func (g *grammar) w(tokens ...string) string {
	var b strings.Builder
	first := true
	for _, t := range tokens {
		if t == "" {
			continue
		}
		if !first {
			b.WriteString(g.sp())
		}
		first = false
		b.WriteString(t)
	}
	return b.String()
}

// relation is something a query reads.
type relation struct {
	names []string // how it may be written
	cols  []string // some of its columns
	named bool     // a table or view (DESCRIBE, TABLE, PRAGMA table_info take it)
}

var manifestCols = []string{"object_id", "object_type", "location", "metadata", "base_objects", "table_version",
	"manifest_path", "manifest_size", "committed_at", "txn_id", "partition_spec_id", "partition_field_1"}

var relations = []relation{
	{names: []string{"__manifest", `"__manifest"`, "flightns.__manifest", "flightns.main.__manifest", `"flightns"."main"."__manifest"`, "main.__manifest"},
		cols: manifestCols, named: true},
	{names: []string{"_objects", "flightns._objects", `"_objects"`}, cols: []string{"object_id", "object_type", "location", "metadata", "_seq_from", "_seq_to"}, named: true},
	{names: []string{"_versions", "flightns.main._versions"}, cols: []string{"object_id", "table_version", "manifest_path", "manifest_size", "_seq_from", "_seq_to"}, named: true},
	{names: []string{"_meta", "flightns._meta", `"_meta"`}, cols: []string{"seq", "oldest"}, named: true},
	{names: []string{"namespaces", "flightns.main.namespaces"}, cols: []string{"object_id", "metadata", "committed_at"}, named: true},
	{names: []string{"tables", `"tables"`, "flightns.tables"}, cols: []string{"object_id", "location", "metadata", "base_objects"}, named: true},
	{names: []string{"table_versions", "flightns.main.table_versions"}, cols: []string{"table_id", "version", "manifest_path", "txn_id"}, named: true},
	{names: []string{"manifest_at(1)", "manifest_at(3)", "flightns.manifest_at(5)", "manifest_at(18446744073709551615)", "main.manifest_at(0)"}, cols: manifestCols},
	{names: []string{"fuzz_probe('x')", "fuzz_probe('; DROP VIEW tables')", "fuzz_probe(NULL)"}, cols: []string{"v"}},
	{names: []string{"range(3)", "generate_series(1, 4)"}, cols: []string{"range", "generate_series"}},
	{names: []string{"duckdb_tables()", "duckdb_views()", "duckdb_schemas()"}, cols: []string{"database_name", "schema_name"}},
	{names: []string{"duckdb_databases()", "pragma_database_size()"}, cols: []string{"database_name"}},
	{names: []string{"query_table('_meta')", "query_table(['_meta', '_meta'])"}, cols: []string{"seq", "oldest"}},
	{names: []string{"query('SELECT object_id FROM __manifest')", "query('FROM namespaces SELECT object_id')"}, cols: []string{"object_id"}},
}

// rel picks a relation, named ones only when named is set.
func (g *grammar) rel(named bool) (string, relation) {
	r := relations[g.n(len(relations))]
	if named && !r.named {
		r = relations[g.n(7)]
	}
	i := g.n(len(r.names))
	if r.names[0] == "range(3)" {
		// range's column is range, generate_series's generate_series
		return r.names[i], relation{names: r.names[i : i+1], cols: r.cols[i : i+1]}
	}
	return r.names[i], r
}

// table picks a name a write may aim at: the engine's tables, views and
// macro, qualified or not, or a new name.
func (g *grammar) table() string {
	return g.of("__manifest", "_objects", "_versions", "_meta", "namespaces", "tables", "table_versions", "manifest_at",
		"flightns._objects", "flightns.main._versions", `"_meta"`, "flightns.main.tables", "pwn", "flightns.pwn",
		"memory.pwn", "temp.pwn", `"x; DROP VIEW tables"`)
}

// col picks a column of r.
func (g *grammar) col(r relation) string { return r.cols[g.n(len(r.cols))] }

// str is a string literal, with tricks: quotes, semicolons and comment
// markers inside, dollar quoting, escape strings.
func (g *grammar) str() string {
	return g.of(`'a'`, `'a;b'`, `'it''s; DROP VIEW tables'`, `'--'`, `'/*'`, `$$;DROP VIEW tables;$$`, `$q$ $$ ; DROP VIEW tables; $q$`,
		`E'a\'b; DROP VIEW tables; --'`, `E'\\'`, `'SELECT 1; DROP VIEW tables'`, `''`, `'namespace'`, `'prod'`)
}

// ident is a column alias, quoted or not.
func (g *grammar) ident() string {
	return g.of("v", `"v"`, `"a;b"`, `"x"" ; DROP VIEW tables; --"`, `"--"`, "x1")
}

// param is a placeholder, counted.
func (g *grammar) param() string {
	g.params++
	return "?"
}

// item is one scalar expression over r.
func (g *grammar) item(r relation) string {
	c := g.col(r)
	switch g.n(9) {
	case 0:
		return g.w(c+"::VARCHAR", "AS", g.ident())
	case 1:
		return "length(" + c + "::VARCHAR)"
	case 2:
		return "coalesce(" + c + "::VARCHAR, " + g.str() + ")"
	case 3:
		return g.str()
	case 4:
		return fmt.Sprint(g.n(100))
	case 5:
		return g.w(c, "IS", "NULL")
	case 6:
		return "hash(" + c + ")"
	}
	return c
}

// items is a select list over r.
func (g *grammar) items(r relation) string {
	switch g.n(5) {
	case 0:
		return "*"
	case 1:
		return "count(*)"
	}
	list := []string{g.item(r)}
	for len(list) < 4 && g.n(3) == 1 {
		list = append(list, g.item(r))
	}
	return strings.Join(list, ", ")
}

// pred is a condition over r.
func (g *grammar) pred(r relation, depth int) string {
	c := g.col(r)
	switch g.n(10) {
	case 0:
		return g.w(c, "IS NOT NULL")
	case 1:
		return g.w(c+"::VARCHAR", "=", g.str())
	case 2:
		return g.w(c+"::VARCHAR", "LIKE", "'%'")
	case 3:
		return g.w(c+"::VARCHAR", "=", g.param())
	case 4:
		if depth < 2 {
			sr, rr := g.rel(false)
			return g.w(c+"::VARCHAR", "IN", "(SELECT", g.col(rr)+"::VARCHAR", "FROM", sr+")")
		}
	case 5:
		if depth < 2 {
			sr, _ := g.rel(false)
			return g.w("EXISTS", "(SELECT", "1", "FROM", sr+")")
		}
	case 6:
		if depth < 2 {
			return g.w(g.pred(r, depth+1), g.of("AND", "OR"), g.pred(r, depth+1))
		}
	case 7:
		return g.w("NOT", "("+g.pred(r, depth+1)+")")
	}
	return "true"
}

// selectCore is SELECT … FROM … with optional clauses: a query that
// touches no files.
func (g *grammar) selectCore(depth int) string {
	name, r := g.rel(false)
	return g.w("SELECT", g.maybe("DISTINCT"), g.items(r), "FROM", name, g.maybe(g.w("AS", "t")),
		g.maybe(g.w("WHERE", g.pred(r, depth))), g.maybe(g.w("ORDER", "BY", "1")),
		g.maybe(g.w("LIMIT", fmt.Sprint(g.n(10)))), g.maybe(g.w("OFFSET", "1")))
}

// oneColumn is a query of one VARCHAR column named v.
func (g *grammar) oneColumn() string {
	name, r := g.rel(false)
	return g.w("SELECT", g.col(r)+"::VARCHAR", "AS", "v", "FROM", name, g.maybe(g.w("WHERE", g.pred(r, 2))))
}

// query is any query form that runs (depth bounds nesting).
func (g *grammar) query(depth int) string {
	if depth > 2 {
		return g.selectCore(depth)
	}
	switch g.n(22) {
	case 0:
		return g.w("SELECT", g.str(), "AS", g.ident(), ",", fmt.Sprint(g.n(1000)))
	case 1:
		return g.w(g.oneColumn(), g.of("UNION", "UNION ALL", "INTERSECT", "EXCEPT", "UNION BY NAME"), g.oneColumn())
	case 2:
		return g.w("WITH", g.maybe("RECURSIVE"), "x", "AS", g.maybe(g.of("MATERIALIZED", "NOT MATERIALIZED")),
			"("+g.oneColumn()+")", "SELECT", "v", "FROM", "x", g.maybe("WHERE v IS NOT NULL"))
	case 3:
		return g.w("VALUES", "(1,", g.str()+"),", "(2,", g.str()+")")
	case 4:
		name, _ := g.rel(true)
		return g.w("TABLE", name)
	case 5:
		name, r := g.rel(false)
		return g.w("FROM", name, g.maybe(g.w("SELECT", g.items(r))))
	case 6:
		name, _ := g.rel(true)
		return g.w(g.of("DESCRIBE", "DESC", "SHOW", "SUMMARIZE"), name)
	case 7:
		return g.w(g.of("DESCRIBE", "SUMMARIZE"), g.selectCore(depth+1))
	case 8:
		return g.of("SHOW TABLES", "SHOW ALL TABLES", "SHOW DATABASES")
	case 9:
		return g.pragmaRead()
	case 10:
		return g.of(
			"PIVOT __manifest ON object_type IN ('namespace', 'table') USING count(*)",
			"PIVOT __manifest ON object_type IN ('namespace', 'table') USING count(*) GROUP BY object_id",
			"PIVOT_WIDER __manifest ON object_type IN ('namespace') USING count(*)",
			"UNPIVOT _meta ON seq, oldest INTO NAME k VALUE v",
			"PIVOT_LONGER _meta ON seq, oldest INTO NAME k VALUE v",
			"SELECT * FROM __manifest PIVOT (count(*) FOR object_type IN ('namespace', 'table') GROUP BY object_id)",
			"SELECT * FROM _meta UNPIVOT (v FOR k IN (seq, oldest))")
	case 11:
		return g.w("EXPLAIN", g.maybe(g.of("ANALYZE", "ANALYSE")), g.maybe("(FORMAT json)"), g.explainable(depth+1))
	case 12:
		return g.w("SELECT", "*", "FROM", "("+g.selectCore(depth+1)+")", "AS", "s")
	case 13:
		name, _ := g.rel(false)
		return g.w("SELECT", "(SELECT", "count(*)", "FROM", name+")")
	case 14:
		n1, r1 := g.rel(false)
		n2, r2 := g.rel(false)
		join := g.of("CROSS JOIN", "POSITIONAL JOIN", "JOIN", "LEFT JOIN", "FULL JOIN")
		on := ""
		if join != "CROSS JOIN" && join != "POSITIONAL JOIN" {
			on = g.w("ON", "a."+g.col(r1)+"::VARCHAR", "=", "b."+g.col(r2)+"::VARCHAR")
		}
		return g.w("SELECT", "a."+g.col(r1)+"::VARCHAR,", "b."+g.col(r2)+"::VARCHAR", "FROM", n1, "AS", "a",
			join, n2, "AS", "b", on, "LIMIT", "5")
	case 15:
		name, r := g.rel(false)
		c := g.col(r)
		return g.w("SELECT", c+",", "row_number()", "OVER", "(ORDER BY", c+"::VARCHAR)", "FROM", name)
	case 16:
		return "(" + g.selectCore(depth+1) + ")"
	case 17:
		return g.w("SELECT", g.param()+"::VARCHAR", "AS", g.ident())
	case 18:
		return g.w("SELECT", "count(*)", "FROM", "manifest_at("+g.param()+"::UBIGINT)")
	case 19:
		return g.of("SELECT * FROM checkpoint()", "SELECT * FROM checkpoint('flightns')", "SELECT * FROM unnest([1, 2])",
			"SELECT * FROM repeat_row(1, num_rows := 2)", "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
			"SELECT current_setting('threads')", "SELECT getvariable('v')", "SELECT * FROM duckdb_settings() WHERE name = 'threads'",
			"SELECT * FROM pragma_table_info('_meta')", "SELECT count(*) FROM duckdb_logs", "SELECT * FROM sql_auto_complete('SEL')")
	}
	return g.selectCore(depth)
}

// explainable is a query EXPLAIN takes (not a PRAGMA, not parenthesized).
func (g *grammar) explainable(depth int) string {
	for {
		q := g.query(depth)
		if !strings.HasPrefix(q, "PRAGMA") && !strings.HasPrefix(q, "(") && !strings.HasPrefix(q, "EXPLAIN") {
			return q
		}
	}
}

func (g *grammar) pragmaRead() string {
	_, r := g.rel(true)
	name := strings.ReplaceAll(r.names[0], `"`, "")
	return g.of("PRAGMA database_list", "PRAGMA show_tables", "PRAGMA show_tables_expanded", "PRAGMA version",
		"PRAGMA platform", "PRAGMA database_size", "PRAGMA collations", "PRAGMA metadata_info", "PRAGMA user_agent",
		"PRAGMA table_info('"+name+"')", "PRAGMA storage_info('_meta')", "PRAGMA storage_info('_objects')")
}

// read is a statement that only reads but may fail: it touches files,
// calls table functions with side effects, or explains a PRAGMA.
func (g *grammar) read() string {
	return g.of("SELECT * FROM force_checkpoint()", "SELECT * FROM force_checkpoint('memory')", "SELECT * FROM enable_logging()",
		"SELECT * FROM disable_logging()", "SELECT * FROM truncate_duckdb_logs()", "SELECT * FROM read_csv('/etc/passwd')",
		"SELECT * FROM glob('/*')", "SELECT * FROM read_text('x')", "SELECT * FROM 'x.csv'", "SELECT * FROM duckdb_secrets()",
		"SELECT * FROM duckdb_extensions()", "SELECT * FROM which_secret('s3://b/k', 's3')", "SELECT * FROM query('DROP VIEW tables')",
		"SELECT * FROM query('SELECT 1; DROP VIEW tables')", "SELECT nextval('s')", "SELECT setseed(0.5)",
		"EXPLAIN PRAGMA database_list", "SELECT * FROM read_parquet('s3://b/k.parquet')", "SELECT * FROM 'https://example.com/x.csv'",
		"SELECT * FROM manifest_at('x')", "SELECT * FROM fuzz_probe(NULL, NULL)",
		"EXPLAIN (SELECT 1)", "SELECT * FROM duckdb_functions() WHERE NOT internal")
}

// write is a statement that is not a query, of each type DuckDB has.
func (g *grammar) write(depth int) (string, stmtKind) {
	t := g.table()
	sel := func() string { return g.selectCore(2) }
	switch g.n(34) {
	case 0:
		return g.w("INSERT", g.maybe(g.of("OR REPLACE", "OR IGNORE")), "INTO", t, g.maybe("BY NAME"),
			g.of("VALUES (1, 2)", "DEFAULT VALUES", sel(), "SELECT * FROM "+t), g.maybe("RETURNING *")), kindWrite
	case 1:
		return g.w("UPDATE", t, "SET", g.of("seq", "location", "object_id", "metadata"), "=", g.of(g.str(), "0", "NULL"),
			g.maybe("WHERE true"), g.maybe("RETURNING *")), kindWrite
	case 2:
		return g.w("DELETE", "FROM", t, g.maybe("WHERE true"), g.maybe("RETURNING *")), kindWrite
	case 3:
		return g.w("TRUNCATE", g.maybe("TABLE"), t), kindWrite
	case 4:
		return g.w("MERGE", "INTO", t, "USING", "(SELECT 1 AS seq)", "AS", "s", "ON", "(s.seq = "+t+".seq)",
			g.of("WHEN MATCHED THEN DELETE", "WHEN MATCHED THEN UPDATE SET seq = 0", "WHEN NOT MATCHED THEN INSERT VALUES (1, 1)",
				"WHEN NOT MATCHED THEN DO NOTHING")), kindWrite
	case 5:
		return g.w("CREATE", g.maybe("OR REPLACE"), g.maybe(g.of("TEMP", "TEMPORARY")), "TABLE", g.maybe("IF NOT EXISTS"), t,
			g.of("(a INT)", "AS "+sel(), "AS SELECT 42 AS x")), kindWrite
	case 6:
		return g.w("CREATE", g.maybe("OR REPLACE"), g.maybe("TEMP"), "VIEW", t, "AS", sel()), kindWrite
	case 7:
		return g.w("CREATE", g.maybe("OR REPLACE"), g.maybe("TEMP"), g.of("MACRO", "FUNCTION"), g.of("manifest_at", "m", "flightns.manifest_at"),
			g.of("(n) AS TABLE "+sel(), "(x) AS x + 1", "(n) AS TABLE SELECT 'forged' AS object_id")), kindWrite
	case 8:
		return g.w("CREATE", g.maybe("OR REPLACE"), "TYPE", g.of("mood", "flightns.t"), "AS", g.of("ENUM ('a', 'b')", "STRUCT(a INT)", "VARCHAR")), kindWrite
	case 9:
		return g.w("CREATE", g.maybe("OR REPLACE"), g.maybe("TEMP"), "SEQUENCE", g.maybe("IF NOT EXISTS"), g.of("s", "flightns.s"), g.maybe("START 5")), kindWrite
	case 10:
		return g.w("CREATE", "SCHEMA", g.maybe("IF NOT EXISTS"), g.of("s", "flightns.s", "memory.s", "temp.s")), kindWrite
	case 11:
		return g.w("CREATE", g.maybe("UNIQUE"), "INDEX", g.of("i", "_objects_id"), "ON", t, "("+g.of("seq", "object_id")+")"), kindWrite
	case 12:
		return g.w("CREATE", g.maybe("OR REPLACE"), g.maybe(g.of("PERSISTENT", "TEMPORARY")), "SECRET", g.of("s", "flightns"),
			"(TYPE s3, KEY_ID 'k', SECRET 'v')"), kindWrite
	case 13:
		return g.w("ALTER", "TABLE", t, g.of("ADD COLUMN z INT", "DROP COLUMN location", "RENAME TO pwn",
			"RENAME COLUMN location TO l", "ALTER COLUMN location SET DEFAULT 'x'", "ALTER COLUMN location TYPE INT")), kindWrite
	case 14:
		return g.w("ALTER", "VIEW", g.maybe("IF EXISTS"), g.of("tables", "namespaces", "__manifest", "table_versions"), "RENAME TO", "pwn"), kindWrite
	case 15:
		return g.w("COMMENT", "ON", g.of("TABLE _meta", "VIEW tables", "COLUMN _meta.seq", "MACRO TABLE manifest_at", "DATABASE flightns"), "IS", g.str()), kindWrite
	case 16:
		return g.w("DROP", g.of("TABLE", "VIEW", "MACRO", "MACRO TABLE", "FUNCTION", "TYPE", "SEQUENCE", "SCHEMA", "INDEX", "SECRET"),
			g.maybe("IF EXISTS"), g.of(t, "_objects_id", "main", "flightns.main", "s"), g.maybe(g.of("CASCADE", "RESTRICT"))), kindWrite
	case 17:
		return g.w("ATTACH", g.maybe("DATABASE"), g.maybe("IF NOT EXISTS"), g.of("':memory:'", "'x.db'", "'md:'", "''"),
			g.maybe(g.w("AS", g.of("m", "flightns", "memory"))), g.maybe(g.of("(READ_ONLY)", "(TYPE sqlite)"))), kindWrite
	case 18:
		return g.w("DETACH", g.maybe("DATABASE"), g.maybe("IF EXISTS"), g.of("flightns", "memory", "m", "system", "temp")), kindWrite
	case 19:
		return g.w("USE", g.of("memory", "flightns", "flightns.main", "system", "temp", "m")), kindWrite
	case 20:
		setting := g.of("threads = 64", "memory_limit = '100GB'", "max_temp_directory_size = '100GB'", "enable_external_access = true",
			"lock_configuration = false", "temp_directory = '/tmp'", "search_path = 'memory'", "allow_unsigned_extensions = true",
			"threads TO 1", "enable_logging = true")
		return g.w("SET", g.maybe(g.of("GLOBAL", "SESSION")), setting), kindWrite
	case 21:
		return g.w("RESET", g.maybe(g.of("GLOBAL", "SESSION")), g.of("threads", "memory_limit", "max_temp_directory_size",
			"enable_external_access", "lock_configuration", "search_path")), kindWrite
	case 22:
		return g.w(g.of("SET VARIABLE v = 1", "SET VARIABLE v = ("+sel()+")", "RESET VARIABLE v")), kindWrite
	case 23:
		return g.of("BEGIN", "BEGIN TRANSACTION", "BEGIN TRANSACTION READ WRITE", "START TRANSACTION", "COMMIT", "END",
			"ROLLBACK", "ABORT", "COMMIT TRANSACTION"), kindWrite
	case 24:
		if g.n(2) == 0 {
			return g.w("COPY", t, "FROM", g.of("'x.csv'", "'/dev/stdin'", "'s3://b/k'"), g.maybe("(FORMAT parquet)")), kindWrite
		}
		return g.w("COPY", g.of(t, "("+sel()+")"), "TO", g.of("'x.csv'", "'/dev/stdout'", "'s3://b/k'"),
			g.maybe("(FORMAT parquet)")), kindWrite
	case 25:
		return g.of("COPY FROM DATABASE flightns TO memory", "EXPORT DATABASE 'x'", "EXPORT DATABASE 'x' (FORMAT parquet)",
			"IMPORT DATABASE 'x'"), kindWrite
	case 26:
		return g.of("LOAD httpfs", "LOAD 'x.duckdb_extension'", "INSTALL httpfs", "FORCE INSTALL httpfs FROM community",
			"UPDATE EXTENSIONS"), kindWrite
	case 27:
		return g.w("CALL", g.of("checkpoint()", "force_checkpoint()", "enable_logging()", "truncate_duckdb_logs()",
			"query('SELECT 1')", "pragma_table_info('_meta')", "fuzz_probe('x')", "manifest_at(1)", "query_table('_meta')")), kindWrite
	case 28:
		return g.of("CHECKPOINT", "CHECKPOINT flightns", "FORCE CHECKPOINT", "FORCE CHECKPOINT memory"), kindWrite
	case 29:
		return g.w(g.of("VACUUM", "VACUUM ANALYZE", "ANALYZE"), g.maybe(g.of("_meta", "_objects", "__manifest"))), kindWrite
	case 30:
		return g.w(g.of("PREPARE p AS "+sel(), "EXECUTE p", "EXECUTE p(1)", "DEALLOCATE p", "DEALLOCATE PREPARE p")), kindWrite
	case 31:
		return g.of("PIVOT __manifest ON object_type USING count(*)", "PIVOT_WIDER __manifest ON object_type",
			"PIVOT _meta ON seq"), kindWrite
	case 32:
		// led by a query keyword
		return g.w(g.of("PRAGMA enable_profiling", "PRAGMA disable_profiling", "PRAGMA enable_progress_bar", "PRAGMA threads = 4",
			"PRAGMA memory_limit = '100GB'", "PRAGMA force_checkpoint", "PRAGMA enable_checkpoint_on_shutdown",
			"PRAGMA disable_optimizer", "PRAGMA enable_verification", "PRAGMA import_database('x')", "PRAGMA profiling_output = 'x'",
			"PRAGMA enable_logging")), kindWriteQ
	case 33:
		switch g.n(3) {
		case 0:
			return g.w("WITH", "s", "AS", "(SELECT 1 AS v)", g.of("INSERT INTO _meta SELECT v, v FROM s", "DELETE FROM _meta",
				"UPDATE _meta SET seq = 0")), kindWriteQ
		case 1:
			// a data-modifying statement inside a query
			return g.w("WITH", "x", "AS", "("+g.of("DELETE FROM _objects", "INSERT INTO _meta VALUES (9, 9)", "UPDATE _meta SET seq = 0",
				"DELETE FROM _versions WHERE true")+" RETURNING *)", "SELECT", g.of("*", "count(*)"), "FROM", "x"), kindWriteQ
		}
	}
	if depth < 1 {
		return g.explainWrite(), kindWriteQ
	}
	return g.w("DELETE", "FROM", t), kindWrite
}

// explainWrite is EXPLAIN [ANALYZE] of a statement that is not a query,
// mostly of one DuckDB can explain.
func (g *grammar) explainWrite() string {
	var w string
	for i := 0; i < 4; i++ {
		w, _ = g.write(1)
		word := w[:len(w)-len(strings.TrimLeftFunc(w, unicode.IsLetter))]
		switch word {
		case "ATTACH", "DETACH", "USE", "TRUNCATE", "COMMENT", "IMPORT", "EXPORT", "ANALYZE":
			continue
		}
		break
	}
	return g.w("EXPLAIN", g.maybe(g.of("ANALYZE", "ANALYSE")), g.maybe("(FORMAT json)"), w)
}

// productions are the kinds of statement the generator makes, each with
// what the gate must do with it (writes twice: they are most kinds).
var productions = []func(g *grammar) (string, stmtKind){
	func(g *grammar) (string, stmtKind) { return g.query(0), kindQuery },
	func(g *grammar) (string, stmtKind) { return g.selectCore(0), kindQuery },
	func(g *grammar) (string, stmtKind) { return g.read(), kindRead },
	func(g *grammar) (string, stmtKind) { return g.write(0) },
	func(g *grammar) (string, stmtKind) { return g.write(0) },
	func(g *grammar) (string, stmtKind) { return g.explainWrite(), kindWriteQ },
}

// generateSQL makes a text of one or more statements from data.
func generateSQL(data []byte) generated {
	g := &grammar{in: data}
	count := [...]int{1, 1, 1, 1, 2, 2, 3, 4}[g.n(8)]
	var out generated
	var b strings.Builder
	b.WriteString(g.of("", "", "", " ", "\n", ";", " ; ", "-- lead\n", "/* lead */ ", "/* a /* nested */ b */ ", "\t\r\n", ";;",
		"--c\r", "/* ; */;"))
	for i := 0; i < count; i++ {
		if i > 0 {
			b.WriteString(g.of(";", "; ", " ;\n", ";\n-- between\n", "; /* ; */ ", ";;", "; ; ", ";\r\n", ";--c\r"))
		}
		text, kind := productions[g.n(len(productions))](g)
		b.WriteString(text)
		out.kinds = append(out.kinds, kind)
	}
	b.WriteString(g.of("", "", "", ";", " ;", ";\n", " -- tail", " /* tail */", ";;", "; -- tail\n", "\n", "--c\r"))
	out.text = b.String()
	out.params = g.params
	return out
}

// grammarSeeds are inputs that make one statement of each query form and
// of each type that is not a query, and texts of several statements
// (testdata/fuzz/FuzzSQLGrammar holds more). An input reads: how many
// statements, what comes before the first, which production, then the
// production's own choices; bytes past the end read as 0.
func grammarSeeds() [][]byte {
	var seeds [][]byte
	for c := 0; c < 21; c++ { // every query form
		seeds = append(seeds, []byte{0, 0, 0, byte(c)})
	}
	seeds = append(seeds, []byte{0, 0, 1}, []byte{0, 3, 1, 7, 1, 2, 1, 3, 1, 4, 1, 1, 5, 1})
	for c := 0; c < 24; c += 8 { // reads that may fail
		seeds = append(seeds, []byte{0, 0, 2, byte(c)})
	}
	for c := 0; c < 34; c++ { // every statement that is not a query
		seeds = append(seeds, []byte{0, 0, 3, byte(c * 5 % 17), byte(c)})
	}
	for _, c := range []byte{0, 7, 20, 27} { // EXPLAIN of some
		seeds = append(seeds, []byte{0, 0, 5, 3, c})
	}
	// several statements
	seeds = append(seeds, []byte{4, 0, 3, 1, 5}, []byte{4, 5, 3, 6, 16}, []byte{6, 7, 3, 3, 23, 0, 0, 0, 0, 0},
		[]byte{7, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	return seeds
}

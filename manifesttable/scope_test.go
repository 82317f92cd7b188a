package manifesttable

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/nserror"
)

// A query scoped to some namespaces (a caller whose access comes from
// grants) sees their rows and nothing of any other, whatever its text
// tries: the physical tables, the time-travel macro, a qualified name,
// the main schema's views, a table function reading by name, DuckDB's
// catalog functions, a CTE named like a hidden table.
func TestAScopedQuerySeesOnlyItsSubtrees(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	commit(t, tb, append(sampleChanges(),
		put(Row{ObjectType: TypeNamespace, ObjectID: "secret", Metadata: `{}`, CommittedAt: at}),
		put(Row{ObjectType: TypeNamespace, ObjectID: "products", Metadata: `{}`, CommittedAt: at}), // "prod" as a prefix, not a subtree
		put(Row{ObjectType: TypeTable, ObjectID: "secret$t", Location: "x_secret$t", Metadata: `{}`, CommittedAt: at}),
		put(Row{ObjectType: TypeTableVersion, ObjectID: "secret$t", TableVersion: 1, ManifestPath: "x_secret$t/_versions/1.manifest", CommittedAt: at}),
	)...)
	scoped := sqlengine.WithScope(context.Background(), &sqlengine.Scope{Subtrees: []string{"prod"}, Sep: IDSeparator})
	count := func(ctx context.Context, q string) (string, error) {
		res, err := tb.Query(ctx, q)
		if err != nil {
			return "", err
		}
		defer res.Release()
		var out []string
		for res.Next() {
			rec := res.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				out = append(out, cell(rec.Column(0), i))
			}
		}
		return strings.Join(out, ","), res.Err()
	}
	seen := []struct{ q, want string }{
		{"SELECT count(*) FROM __manifest", "5"},
		{"SELECT string_agg(object_id, ',' ORDER BY object_id) FROM namespaces", "prod,prod$sales"},
		{"SELECT string_agg(object_id, ',') FROM tables", "prod$sales$orders"},
		{"SELECT count(*) FROM table_versions", "2"},
		{"SELECT count(*) FROM __manifest WHERE object_id LIKE 'secret%' OR object_id = 'products'", "0"},
		{"WITH x AS (SELECT * FROM namespaces) SELECT count(*) FROM x", "2"},
		{"SELECT count(*) FROM (SELECT object_id FROM __manifest UNION ALL SELECT table_id FROM table_versions)", "7"},
		{"SELECT count(*) FROM range(3)", "3"},
	}
	for _, c := range seen {
		got, err := count(scoped, c.q)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.q, got, err, c.want)
		}
	}
	// The same catalog, unscoped: everything.
	if got, err := count(context.Background(), "SELECT count(*) FROM __manifest"); err != nil || got != "9" {
		t.Fatalf("unscoped: %q, %v", got, err)
	}
	refused := []string{
		"SELECT count(*) FROM _objects",
		"SELECT count(*) FROM _versions_past",
		"SELECT count(*) FROM main.__manifest",
		"SELECT count(*) FROM flightns.main.__manifest",
		"SELECT count(*) FROM flightns.main._objects",
		`SELECT count(*) FROM "_OBJECTS"`,
		"SELECT count(*) FROM manifest_at(1)",
		"SELECT * FROM query_table('_objects')",
		"SELECT * FROM query('SELECT * FROM _objects')",
		"SELECT * FROM duckdb_tables()",
		"SELECT estimated_size FROM duckdb_tables",
		"SELECT * FROM information_schema.tables",
		"SELECT * FROM sqlite_master",
		"SELECT (SELECT count(*) FROM _objects)",
		"SELECT 1 WHERE EXISTS (SELECT 1 FROM _versions WHERE object_id = 'secret$t')",
		"WITH _objects AS (SELECT 1) SELECT * FROM _objects",
		"SELECT count(*) FROM (WITH q AS (SELECT 1) SELECT * FROM q), _objects",
		"EXPLAIN SELECT * FROM _objects",
		"PRAGMA table_info('_objects')",
		"SHOW TABLES",
		"SELECT 1; SELECT 2",
		"PIVOT _objects ON object_type USING count(*)",
		"DESCRIBE _objects",
		"SUMMARIZE _objects",
	}
	for _, q := range refused {
		got, err := count(scoped, q)
		if err == nil {
			t.Errorf("%s: answered %q", q, got)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error names what is hidden: %v", q, err)
		}
		if c := nserror.CodeOf(err); c != nserror.PermissionDenied && c != nserror.InvalidInput {
			t.Errorf("%s: code %v: %v", q, c, err)
		}
	}
	// A scope of nothing sees nothing.
	none := sqlengine.WithScope(context.Background(), &sqlengine.Scope{Sep: IDSeparator})
	if got, err := count(none, "SELECT count(*) FROM __manifest"); err != nil || got != "0" {
		t.Errorf("an empty scope: %q, %v", got, err)
	}
	// Planning is screened too (a prepared statement's schema).
	if _, _, err := tb.QuerySchema(scoped, "SELECT * FROM _objects"); nserror.CodeOf(err) != nserror.PermissionDenied {
		t.Errorf("the schema of a hidden table: %v", err)
	}
	if s, _, err := tb.QuerySchema(scoped, "SELECT * FROM tables"); err != nil || s.NumFields() == 0 {
		t.Errorf("the schema of tables: %v, %v", s, err)
	}
}

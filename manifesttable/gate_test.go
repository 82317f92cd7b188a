package manifesttable

import (
	"context"
	"strings"
	"testing"

	"github.com/flightns/flightns/nserror"
)

// The gate admits exactly one statement that only reads, decided by
// DuckDB's parser before anything runs, and names what it refuses.
func TestTheGateAdmitsOneReadOnlyStatement(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	commit(t, tb, sampleChanges()...)
	admitted := []string{
		"SELECT 1", "  select * from __manifest ;\n", "FROM tables", "VALUES (1), (2)", "(SELECT 1) UNION (SELECT 2)",
		"WITH x AS (SELECT 1) SELECT * FROM x", "TABLE namespaces", "DESCRIBE __manifest", "SHOW TABLES", "SUMMARIZE namespaces",
		"PRAGMA database_list", "PRAGMA table_info('__manifest')", "EXPLAIN SELECT 1", "EXPLAIN ANALYZE SELECT count(*) FROM __manifest",
		"-- a comment\nSELECT 1", "/* c */ SELECT ';'", ";;SELECT 1;;", "EXPLAIN (FORMAT json) SELECT 1",
	}
	for _, q := range admitted {
		res, err := tb.Query(context.Background(), q)
		if err != nil {
			t.Errorf("%q: refused: %v", q, err)
			continue
		}
		for res.Next() {
		}
		if err := res.Err(); err != nil {
			t.Errorf("%q: %v", q, err)
		}
		res.Release()
	}
	refused := []struct {
		q, names string
		code     nserror.Code
	}{
		{"CREATE TABLE pwn AS SELECT 42 AS x; SELECT 1", "2 statements", nserror.PermissionDenied},
		{"SELECT 1; SELECT 2", "2 statements", nserror.PermissionDenied},
		{"DROP VIEW tables", "DROP", nserror.PermissionDenied},
		{"CREATE OR REPLACE MACRO manifest_at(n) AS TABLE SELECT 1", "CREATE", nserror.PermissionDenied},
		{"INSERT INTO _versions (object_id, _seq_from) VALUES ('x', 1)", "INSERT", nserror.PermissionDenied},
		{"DELETE FROM __manifest", "DELETE", nserror.PermissionDenied},
		{"UPDATE _meta SET seq = 0", "UPDATE", nserror.PermissionDenied},
		{"ATTACH ':memory:' AS m", "ATTACH", nserror.PermissionDenied},
		{"DETACH flightns", "DETACH", nserror.PermissionDenied},
		{"SET threads = 64", "SET", nserror.PermissionDenied},
		{"RESET threads", "SET", nserror.PermissionDenied},
		{"PRAGMA enable_profiling", "SET", nserror.PermissionDenied},
		{"BEGIN TRANSACTION", "TRANSACTION", nserror.PermissionDenied},
		{"USE memory", "SET", nserror.PermissionDenied},
		{"CALL pragma_version()", "CALL", nserror.PermissionDenied},
		{"CHECKPOINT", "CALL", nserror.PermissionDenied},
		{"PREPARE p AS SELECT 1", "PREPARE", nserror.PermissionDenied},
		{"SET VARIABLE x = 1", "SET", nserror.PermissionDenied},
		{"CREATE TEMP TABLE t (a INT)", "CREATE", nserror.PermissionDenied},
		{"VACUUM", "VACUUM", nserror.PermissionDenied},
		{"LOAD httpfs", "LOAD", nserror.PermissionDenied},
		{"PIVOT __manifest ON object_type", "MULTI", nserror.PermissionDenied},
		{"EXPLAIN ANALYZE CREATE TABLE pwn (a INT)", "CREATE", nserror.PermissionDenied},
		{"EXPLAIN CREATE TABLE pwn (a INT)", "CREATE", nserror.PermissionDenied},
		{"EXPLAIN ANALYZE EXPLAIN SELECT 1", "syntax error", nserror.InvalidInput},
		{"DELETE FROM nowhere", "DELETE", nserror.PermissionDenied},
		{"SELECT * FROM nowhere", "nowhere", nserror.InvalidInput},
		{"EXPLAIN /* ( */ ANALYZE DROP VIEW tables", "cannot tell", nserror.PermissionDenied},
		{"EXPLAIN ANALYZE --\rINSERT INTO _meta --\nSELECT * FROM _meta", "cannot tell", nserror.PermissionDenied},
		{"WITH x AS (DELETE FROM _objects RETURNING *) SELECT * FROM x", "write", nserror.PermissionDenied},
		{"EXPLAIN WITH x AS (INSERT INTO _meta VALUES (1, 1) RETURNING *) SELECT * FROM x", "write", nserror.PermissionDenied},
		{"EXPLAIN ANALYZE WITH x AS (DELETE FROM _versions RETURNING *) SELECT count(*) FROM x", "write", nserror.PermissionDenied},
		{"MERGE INTO _meta USING (SELECT 1 AS seq) s ON _meta.seq = s.seq WHEN MATCHED THEN DELETE", "MERGE", nserror.PermissionDenied},
		{"-- c\rDROP VIEW tables", "DROP", nserror.PermissionDenied},
		{"SELEC 1", "syntax error", nserror.InvalidInput},
		{"", "no statement", nserror.InvalidInput},
		{"   ;  ", "no statement", nserror.InvalidInput},
	}
	for _, c := range refused {
		res, err := tb.Query(context.Background(), c.q)
		if err == nil {
			res.Release()
			t.Errorf("%q: admitted", c.q)
			continue
		}
		if got := nserror.CodeOf(err); got != c.code || !strings.Contains(err.Error(), c.names) {
			t.Errorf("%q: %v (code %v), want code %v naming %q", c.q, err, got, c.code, c.names)
		}
		if _, _, err := tb.QuerySchema(context.Background(), c.q); nserror.CodeOf(err) != c.code {
			t.Errorf("%q: its schema: %v, want code %v", c.q, err, c.code)
		}
	}
	if got := rowsOf(t, tb, `SELECT count(*) FROM __manifest`); len(got) != 1 || got[0] != "5" {
		t.Fatalf("the table changed: %v", got)
	}
}

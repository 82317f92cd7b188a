//go:build duckdb_arrow

package manifesttable

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzSQL: no statement text — DDL, DML, COPY, ATTACH, SET, PRAGMA,
// several statements, nonsense — changes __manifest or panics: a query
// either runs as a read or fails with an error.
func FuzzSQL(f *testing.F) {
	for _, s := range []string{
		"SELECT count(*) FROM __manifest", "DELETE FROM _objects", "INSERT INTO _objects SELECT * FROM _objects",
		"DROP TABLE _versions", "SELECT 1; DROP TABLE _objects", "COPY _objects TO '/tmp/x.csv'",
		"ATTACH '/tmp/x.db' AS x", "SET threads = 64", "PRAGMA enable_profiling", "UPDATE _meta SET seq = 0",
		"CREATE TABLE t AS SELECT 1", "WITH x AS (DELETE FROM _objects RETURNING *) SELECT * FROM x",
		"SELECT * FROM read_csv('/etc/passwd')", "select/**/1", "(SELECT 1)", "VALUES (1)", "FROM __manifest",
		"EXPORT DATABASE '/tmp/x'", "LOAD httpfs", "CALL pragma_version()", "SELECT * FROM glob('/*')",
	} {
		f.Add(s)
	}
	e := newTenv(f)
	tb := e.open()
	f.Cleanup(func() { _ = tb.Close() })
	ctx := context.Background()
	seq, err := tb.Append(ctx, []Change{put(Row{ObjectType: TypeNamespace, ObjectID: "ns"}),
		put(Row{ObjectType: TypeTable, ObjectID: "ns$t", Location: "aa_ns$t"})})
	if err != nil {
		f.Fatal(err)
	}
	if err := tb.WaitVisible(ctx, seq); err != nil {
		f.Fatal(err)
	}
	count := func() string {
		res, err := tb.Query(ctx, "SELECT count(*)::VARCHAR || '/' || max(object_id) FROM __manifest")
		if err != nil {
			return "error: " + err.Error()
		}
		defer res.Release()
		out := ""
		for res.Next() {
			out = strings.Clone(res.RecordBatch().Column(0).ValueStr(0))
		}
		return out
	}
	want := count()
	f.Fuzz(func(t *testing.T, q string) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		res, err := tb.Query(qctx, q)
		if err == nil {
			for res.Next() {
			}
			res.Release()
		} else if errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if got := count(); got != want {
			t.Fatalf("%q changed __manifest: %s, was %s", q, got, want)
		}
	})
}

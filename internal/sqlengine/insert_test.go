//go:build duckdb_arrow

package sqlengine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// InsertArrow appends a record's rows by column name: the table's other
// columns are NULL, types are cast, more rows than a DuckDB data chunk
// holds go in, and a failure anywhere in a Publish leaves nothing of it
// (the appender's rows go to the rollback, the sequence stays).
func TestInsertArrowAppendsByNameAndRollsBackWhole(t *testing.T) {
	db, err := Open(Config{MemoryLimit: "256MB"},
		`CREATE TABLE t (extra VARCHAR, n BIGINT NOT NULL, s VARCHAR, u UBIGINT)`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	rows := 3*chunkRows + 5
	rec := func(nullAt int) arrow.RecordBatch {
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "s", Type: arrow.BinaryTypes.String},
			{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, // cast to BIGINT
			{Name: "u", Type: arrow.PrimitiveTypes.Uint64},
		}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i := range rows {
			b.Field(0).(*array.StringBuilder).Append("row")
			if i == nullAt {
				b.Field(1).(*array.Int32Builder).AppendNull()
			} else {
				b.Field(1).(*array.Int32Builder).Append(int32(i))
			}
			b.Field(2).(*array.Uint64Builder).Append(uint64(i) << 40)
		}
		return b.NewRecordBatch()
	}
	good := rec(-1)
	defer good.Release()
	insert := func(seq uint64, recs ...arrow.RecordBatch) error {
		return db.Write(func(w *Writer) error {
			return w.Publish(seq, func() error {
				for _, r := range recs {
					if err := w.InsertArrow("t", []string{"s", "n", "u"}, r); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	if err := insert(1, good); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d %d 0 %d %d row", rows, rows, rows-1, uint64(rows-1)<<40)
	if got := one(t, db, `SELECT count(*), count(n), count(extra), max(n), max(u), min(s) FROM t`); got != want {
		t.Fatalf("after the insert: %s, want %s", got, want)
	}
	// A NULL in the last chunk of the second record breaks NOT NULL: the
	// first record's rows and the second's earlier chunks are rolled back.
	bad := rec(rows - 1)
	defer bad.Release()
	err = insert(2, good, bad)
	if err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Fatalf("inserting a NULL into a NOT NULL column: %v", err)
	}
	if got := one(t, db, `SELECT count(*) FROM t`); got != fmt.Sprint(rows) {
		t.Fatalf("after the refused insert: %s rows, want %d", got, rows)
	}
	if db.Visible() != 1 {
		t.Fatalf("visible %d after a refused change, want 1", db.Visible())
	}
	if err := db.Write(func(w *Writer) error {
		return w.Publish(3, func() error { return w.InsertArrow("t", []string{"s"}, good) })
	}); err == nil || !strings.Contains(err.Error(), "columns named") {
		t.Fatalf("columns that do not match the record: %v", err)
	}
	if err := db.Write(func(w *Writer) error {
		return w.Publish(3, func() error { return w.InsertArrow("missing", []string{"s", "n", "u"}, good) })
	}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("a table that does not exist: %v", err)
	}
}

// A prepared statement the writer keeps sees a column added after it was
// prepared (DuckDB binds it again), and its parameters stay its own.
func TestExecPreparedFollowsTheCatalog(t *testing.T) {
	db, err := Open(Config{MemoryLimit: "256MB"}, `CREATE TABLE a (x BIGINT)`, `CREATE TABLE b (x BIGINT)`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	step := func(seq uint64, x int64, ddl string) error {
		return db.Write(func(w *Writer) error {
			if ddl != "" {
				if err := w.Exec(ddl); err != nil {
					return err
				}
			}
			return w.Publish(seq, func() error {
				if err := w.ExecPrepared(`INSERT INTO a (x) VALUES (?)`, x); err != nil {
					return err
				}
				return w.ExecPrepared(`INSERT INTO b SELECT * FROM a WHERE x = ?`, x)
			})
		})
	}
	if err := step(1, 1, ""); err != nil {
		t.Fatal(err)
	}
	// Bound again, a's two columns no longer fit b's one.
	if err := step(2, 2, `ALTER TABLE a ADD COLUMN y VARCHAR`); err == nil {
		t.Fatal("a statement prepared before a column was added ran as it was bound then")
	}
	if err := step(3, 3, `ALTER TABLE b ADD COLUMN y VARCHAR`); err != nil {
		t.Fatal(err)
	}
	if got := one(t, db, `SELECT count(*), sum(x), max(x) FROM b`); got != "2 4 3" {
		t.Fatalf("b holds (count, sum, max) %s, want 1 and 3", got)
	}
}

// one is the first row of a query's result, its values joined by spaces
// (a copy: the result's strings die with it).
func one(t *testing.T, db *DB, q string) string {
	t.Helper()
	res, err := db.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if !res.Next() {
		t.Fatalf("%s: no row (%v)", q, res.Err())
	}
	rec := res.RecordBatch()
	var vals []string
	for i := range int(rec.NumCols()) {
		vals = append(vals, rec.Column(i).ValueStr(0))
	}
	return strings.Clone(strings.Join(vals, " "))
}

package manifesttable

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/redis/go-redis/v9"
)

// appendEntries appends raw commit-log entries under one new sequence,
// atomically, the way the namespace scripts do (rename_table's, for one).
func (e *tenv) appendEntries(entries ...map[string]any) uint64 {
	e.t.Helper()
	ctx := context.Background()
	tag := "{" + e.catalog + "}"
	seq, err := e.rdb.Incr(ctx, tag+":seq").Uint64()
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, fields := range entries {
			id := strconv.FormatUint(seq, 10) + "-" + strconv.Itoa(i)
			p.XAdd(ctx, &redis.XAddArgs{Stream: tag + ":log", ID: id, Values: fields})
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return seq
}

// Whatever the SQL engine holds — forged rows, a replaced time-travel
// macro, dropped views — never reaches a segment, a snapshot or the
// index: a rename copies the version rows the index holds, compaction
// writes the index, and a restart loads what storage holds.
func TestAPoisonedEngineNeverReachesDurableState(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	commit(t, tb, sampleChanges()...)
	want := allRows(t, tb, 0)

	// What a statement past every defence would do to the engine.
	for _, q := range []string{
		`INSERT INTO _versions (object_id, table_version, manifest_path, manifest_size, _seq_from) VALUES ('prod$sales$orders', 99, 'etc/passwd', 1, 1)`,
		`INSERT INTO _objects (object_id, object_type, _seq_from) VALUES ('forged', 'namespace', 1)`,
		`DELETE FROM _objects WHERE object_id = 'prod'`,
		`CREATE OR REPLACE MACRO manifest_at(n) AS TABLE SELECT * FROM _objects WHERE object_id = 'forged'`,
		`DROP VIEW tables`,
	} {
		if err := tb.eng.db.Write(func(w *sqlengine.Writer) error { return w.Exec(q) }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// A rename (as namespace.RenameTable logs it) moves the table's versions.
	old, _ := tb.Object(TypeTable, "prod$sales$orders")
	renamed := old
	renamed.ObjectID = "prod$sales$orders2"
	row, err := MarshalRow(renamed)
	if err != nil {
		t.Fatal(err)
	}
	seq := e.appendEntries(
		map[string]any{"k": "rename_table", "from": "prod$sales$orders", "to": "prod$sales$orders2"},
		map[string]any{"k": "delete", "key": `{"object_type":"table","object_id":"prod$sales$orders"}`},
		map[string]any{"k": "put", "row": string(row)},
	)
	waitFor(t, tb, seq)
	if err := tb.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if rest, ok := strings.CutPrefix(want[i], "prod$sales$orders|"); ok {
			want[i] = "prod$sales$orders2|" + rest
		}
	}
	slices.Sort(want)

	// Storage and a fresh process hold exactly the real rows.
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	again := e.open()
	defer func() { _ = again.Close() }()
	got := allRows(t, again, 0)
	if !slices.Equal(got, want) {
		t.Fatalf("after the poisoning, a rename, compaction and a restart:\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if vs := again.VersionRows("prod$sales$orders2"); len(vs) != 2 || vs[1].TableVersion != 2 {
		t.Fatalf("the renamed table's versions in the index: %+v", vs)
	}
	if rows := rowsOf(t, again, `SELECT object_id FROM tables`); !slices.Equal(rows, []string{"prod$sales$orders2"}) {
		t.Fatalf("the tables view in a new process: %v", rows)
	}
	firsts, err := again.st.listSeqs(context.Background(), logPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range firsts {
		seg, err := again.st.readSegment(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range seg.Changes {
			if c.row.ManifestPath == "etc/passwd" || c.row.ObjectID == "forged" || c.row.TableVersion == 99 {
				t.Fatalf("segment %d holds a forged row: %+v", f, c.row)
			}
		}
	}
}

// No Arrow view of inserted rows is ever visible to a query (scanning one
// whose stream was freed crashed the process, when rows went in through
// such views) — after segments and after a snapshot load alike.
func TestInsertViewsAreNeverVisibleToQueries(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	commit(t, tb, sampleChanges()...)
	if err := tb.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = tb.Close()
	tb = e.open() // loads the snapshot
	defer func() { _ = tb.Close() }()
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "later"}))
	want := []string{"__manifest", "dropped", "namespaces", "table_maintenance", "table_versions", "tables"}
	if got := rowsOf(t, tb, `SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' ORDER BY 1`); !slices.Equal(got, want) {
		t.Fatalf("views %v, want %v", got, want)
	}
	for i := 1; i <= 4; i++ {
		q := `SELECT * FROM "_arrow_in_` + strconv.Itoa(i) + `"`
		if _, err := tb.Query(context.Background(), q); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

package manifesttable

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/sqlengine"
)

// stateRows is every row of a State, in key order.
func stateRows(s *State) []Row {
	rows := s.Objects()
	for _, id := range s.VersionTables() {
		rows = append(rows, s.VersionRows(id)...)
	}
	return rows
}

// indexRows is every row of a Table's index, in key order.
func indexRows(tb *Table) []Row {
	rows := tb.Objects()
	tb.idx.RLock()
	f := tb.idx.rows.freeze()
	tb.idx.RUnlock()
	for _, id := range f.ids {
		rows = append(rows, tb.VersionRows(id)...)
	}
	return rows
}

func problemsOf(s *State) string {
	var out []string
	for _, p := range s.Problems {
		out = append(out, string(p.Kind)+" "+p.Key[len(Prefix):])
	}
	return strings.Join(out, ", ")
}

func load(t *testing.T, e *tenv) *State {
	t.Helper()
	s, err := LoadState(context.Background(), e.objs, e.catalog)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Whatever the SQL engine shows, the state a verifier reads comes from the
// files alone: forged rows, deleted rows and a replaced time-travel macro
// in the engine leave it exactly the rows the segments and the snapshot
// hold, with no problem to report.
func TestLoadStateReadsTheFilesNotAPoisonedEngine(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	commit(t, tb, sampleChanges()...)
	if err := tb.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "dev"}))
	want := indexRows(tb)
	if len(want) != 6 {
		t.Fatalf("%d rows in the index, want 6", len(want))
	}

	for _, q := range []string{
		`INSERT INTO _versions (object_id, table_version, manifest_path, manifest_size, _seq_from) VALUES ('prod$sales$orders', 99, 'etc/passwd', 1, 1)`,
		`INSERT INTO _objects (object_id, object_type, _seq_from) VALUES ('forged', 'namespace', 1)`,
		`DELETE FROM _objects WHERE object_id = 'prod'`,
	} {
		if err := tb.eng.db.Write(func(w *sqlengine.Writer) error { return w.Exec(q) }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The poisoning took: SQL shows the forged rows and misses a real one.
	if got := rowsOf(t, tb, `SELECT object_id FROM __manifest WHERE manifest_path = 'etc/passwd' OR object_id IN ('forged', 'prod') ORDER BY 1`); !reflect.DeepEqual(got, []string{"forged", "prod$sales$orders"}) {
		t.Fatalf("the poisoned engine shows %v", got)
	}
	for _, q := range []string{
		`CREATE OR REPLACE MACRO manifest_at(n) AS TABLE SELECT * FROM _objects WHERE object_id = 'forged'`,
		`DROP VIEW tables`,
	} {
		if err := tb.eng.db.Write(func(w *sqlengine.Writer) error { return w.Exec(q) }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	s := load(t, e)
	if len(s.Problems) != 0 {
		t.Fatalf("problems: %s", problemsOf(s))
	}
	if got := stateRows(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("state read from storage:\n got %+v\nwant %+v", got, want)
	}
	if s.HasVersion("prod$sales$orders", 99) {
		t.Error("the engine's forged version reached the state")
	}
	if _, ok := s.Object(TypeNamespace, "forged"); ok {
		t.Error("the engine's forged namespace reached the state")
	}
	if _, ok := s.Object(TypeNamespace, "prod"); !ok {
		t.Error("the namespace deleted in the engine is missing from the state")
	}
	if s.Snapshot == 0 || s.Snapshots != 1 || s.Applied != 1 || s.Seq != tb.durableNow() || s.Rows() != 6 {
		t.Errorf("state: snapshot %d (%d files), %d segments applied, at %d (table at %d), %d rows",
			s.Snapshot, s.Snapshots, s.Applied, s.Seq, tb.durableNow(), s.Rows())
	}
	if id, ok := s.TableByLocation("ab12cd34_prod$sales$orders"); !ok || id != "prod$sales$orders" {
		t.Errorf("table by location: %q, %v", id, ok)
	}
}

// A segment forged with the materializer's own writer (a version row whose
// manifest is etc/passwd) is a valid file: the state holds its row, for the
// verifier to compare with the table's directory.
func TestLoadStateHoldsTheRowsOfAForgedSegment(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	commit(t, tb, sampleChanges()...)
	d := tb.durableNow()
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	forged := Row{ObjectType: TypeTableVersion, ObjectID: "prod$sales$orders", TableVersion: 3, ManifestPath: "etc/passwd",
		ManifestSize: 1, CommittedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := tb.st.writeSegment(context.Background(), &segment{First: d + 1, Last: d + 1, Changes: []change{{seq: d + 1, row: forged}}}); err != nil {
		t.Fatal(err)
	}
	s := load(t, e)
	if len(s.Problems) != 0 || s.Seq != d+1 {
		t.Fatalf("problems: %s; at %d, want %d", problemsOf(s), s.Seq, d+1)
	}
	vs := s.VersionRows("prod$sales$orders")
	if len(vs) != 3 || !reflect.DeepEqual(vs[2], forged) {
		t.Fatalf("version rows: %+v", vs)
	}
}

// Every snapshot and segment is checked: one that is not Parquet, one whose
// metadata disagrees with its name, one of another catalog. The state
// starts from the newest snapshot that reads and stops at the first
// segment it cannot use.
func TestLoadStateReportsUnreadableAndForeignFiles(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tb := e.open()
	s1 := commit(t, tb, sampleChanges()...)
	if err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	s2 := commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "dev"}))
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := e.objs.Get(ctx, snapshotKey(s1))
	if err != nil {
		t.Fatal(err)
	}
	for key, data := range map[string][]byte{
		snapshotKey(s2 + 100): []byte("PAR1 and nothing else"), // the newest snapshot, unreadable
		snapshotKey(5):        snap,                            // says it is at s1
	} {
		if err := e.objs.Put(ctx, key, data); err != nil {
			t.Fatal(err)
		}
	}
	other := storage{objs: e.objs, catalog: "other"}
	if err := other.writeSegment(ctx, &segment{First: s2 + 1, Last: s2 + 1, Changes: []change{{seq: s2 + 1, row: Row{ObjectType: TypeNamespace, ObjectID: "foreign"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := tb.st.writeSegment(ctx, &segment{First: s2 + 2, Last: s2 + 2, Changes: []change{{seq: s2 + 2, row: Row{ObjectType: TypeNamespace, ObjectID: "after"}}}}); err != nil {
		t.Fatal(err)
	}

	s := load(t, e)
	if got, want := problemsOf(s), "foreign _log/"+segmentKey(s2 + 1)[len(logPrefix):]+", unreadable _snapshots/00000000000000000005.parquet, unreadable _snapshots/"+snapshotKey(s2 + 100)[len(snapshotPrefix):]; got != want {
		t.Fatalf("problems:\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(s.Problems[0].Detail, `catalog "other"`) || !strings.Contains(s.Problems[1].Detail, "says it is at sequence") {
		t.Errorf("details: %+v", s.Problems)
	}
	if s.Snapshot != s1 || s.Seq != s2 || s.Snapshots != 3 || s.Segments < 3 {
		t.Errorf("state from snapshot %d at %d (%d snapshots, %d segments); want from %d at %d", s.Snapshot, s.Seq, s.Snapshots, s.Segments, s1, s2)
	}
	if _, ok := s.Object(TypeNamespace, "dev"); !ok {
		t.Error("the segment after the snapshot was not applied")
	}
	for _, id := range []string{"foreign", "after"} {
		if _, ok := s.Object(TypeNamespace, id); ok {
			t.Errorf("%s: a row past the foreign segment reached the state", id)
		}
	}
}

// Segments after the newest snapshot must continue it sequence by
// sequence: a hole and an overlap are reported where they are, and the
// state stops before them.
func TestLoadStateReportsHolesAndOverlapsInTheLog(t *testing.T) {
	ctx := context.Background()
	seg := func(first, last uint64, id string) *segment {
		return &segment{First: first, Last: last, Changes: []change{{seq: first, row: Row{ObjectType: TypeNamespace, ObjectID: id}}}}
	}
	for _, tc := range []struct {
		name   string
		write  func(st storage, d uint64) error
		detail string
		at     func(d uint64) uint64 // where the state stops
	}{
		{"hole", func(st storage, d uint64) error { return st.writeSegment(ctx, seg(d+3, d+3, "late")) },
			"are in no segment", func(d uint64) uint64 { return d }},
		{"overlap", func(st storage, d uint64) error {
			if err := st.writeSegment(ctx, seg(d+1, d+3, "wide")); err != nil {
				return err
			}
			return st.writeSegment(ctx, seg(d+2, d+2, "late"))
		}, "overlaps the segment before it", func(d uint64) uint64 { return d + 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTenv(t)
			tb := e.open()
			d := commit(t, tb, sampleChanges()...)
			if err := tb.Close(); err != nil {
				t.Fatal(err)
			}
			if err := tc.write(tb.st, d); err != nil {
				t.Fatal(err)
			}
			s := load(t, e)
			if len(s.Problems) != 1 || s.Problems[0].Kind != ProblemGap || !strings.Contains(s.Problems[0].Detail, tc.detail) {
				t.Fatalf("problems: %+v", s.Problems)
			}
			if s.Seq != tc.at(d) {
				t.Errorf("the state stands at %d, want %d", s.Seq, tc.at(d))
			}
			if _, ok := s.Object(TypeNamespace, "late"); ok {
				t.Error("a row past the break reached the state")
			}
		})
	}
}

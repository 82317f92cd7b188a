package manifesttable

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/redisclaim"
)

// maintenanceCols renders a table_maintenance row (or table_maintenance_at's).
const maintenanceCols = `table_id || ':' || coalesce(branch, 'main') || ' versions=' || versions ||
	' oldest=' || coalesce(oldest_version::VARCHAR, '∅') || ' latest=' || coalesce(latest_version::VARCHAR, '∅') ||
	' rows=' || coalesce(num_rows::VARCHAR, '∅') || ' frags=' || coalesce(num_fragments::VARCHAR, '∅') ||
	' small=' || coalesce(small_fragments::VARCHAR, '∅') || ' deleted=' || coalesce(deleted_rows::VARCHAR, '∅') ||
	' cleanup=' || coalesce(strftime(last_cleanup_at AT TIME ZONE 'UTC', '%H:%M'), '∅') ||
	' compacted=' || coalesce(last_compaction_version::VARCHAR, '∅') ||
	' needs=' || coalesce(needs_compaction::VARCHAR, '∅')`

// readManifest reads a Lance manifest of the test data.
func readManifest(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// untilRows ticks the catalog (statistics come in later sequences, and a
// mutation that waits for __manifest makes queries see them) until q
// answers want.
func untilRows(t *testing.T, tb *Table, want []string, q string, args ...any) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "tick"}))
		if got = rowsOf(t, tb, q, args...); slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", q, got, want)
	}
}

// Versions committed with manifests LanceDB wrote — twelve small
// appends, a delete of a fifth of the rows, then optimize()'s
// compaction — give table_maintenance the latest version's fragments,
// small fragments and deleted rows, need a compaction until the Rewrite
// and not after it, and name the Rewrite as the last compaction; a
// removal of version records through the claim store (a delete_versions
// entry) sets last_cleanup_at to the catalog change's time; a Lance
// branch has a row of its own; a table without versions has one with
// none. The numbers survive a restart, time travel shows the view
// before the cleanup, and the metrics' totals agree with the view.
func TestTableMaintenanceFromRealLanceManifests(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	clock := atomic.Pointer[time.Time]{}
	at := func(h, m int) time.Time { return time.Date(2026, 12, 6, h, m, 0, 0, time.UTC) }
	set := func(x time.Time) { clock.Store(&x) }
	set(at(9, 0))
	now := func(c *Config) { c.Now = func() time.Time { return *clock.Load() } }
	tb := e.open(now)
	defer func() { _ = tb.Close() }()
	commit(t, tb,
		put(Row{ObjectType: TypeNamespace, ObjectID: "ns"}),
		put(Row{ObjectType: TypeTable, ObjectID: "ns$t", Location: "aa_ns$t"}),
		put(Row{ObjectType: TypeTable, ObjectID: "ns$empty", Location: "bb_ns$empty"}))
	cs := e.claims(tb)
	stage := func(chain string, v uint64, body []byte) redisclaim.Location {
		t.Helper()
		p := lancemanifest.StagingPath(lancemanifest.Dir(chain).Manifest(lancemanifest.V2, v))
		if err := e.objs.Put(ctx, p, body); err != nil {
			t.Fatal(err)
		}
		l, err := cs.Put(ctx, chain, v, p, int64(len(body)), "")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	q := `SELECT ` + maintenanceCols + ` FROM table_maintenance ORDER BY 1`

	stage("aa_ns$t", 1, readManifest(t, "../internal/lancemanifest/testdata/v1.manifest")) // Overwrite: 3 rows
	stage("aa_ns$t", 2, readManifest(t, "testdata/compaction/v12.manifest"))               // Append: 12 fragments of 10
	stage("aa_ns$t", 3, readManifest(t, "testdata/compaction/v13.manifest"))               // Delete: 24 of 120 rows
	untilRows(t, tb, []string{
		"ns$empty:main versions=0 oldest=∅ latest=∅ rows=∅ frags=∅ small=∅ deleted=∅ cleanup=∅ compacted=∅ needs=∅",
		"ns$t:main versions=3 oldest=1 latest=3 rows=96 frags=12 small=12 deleted=24 cleanup=∅ compacted=∅ needs=true",
	}, q)
	if got := rowsOf(t, tb, `SELECT string_agg(version || ':' || operation, ',' ORDER BY version) FROM table_versions WHERE table_id = 'ns$t'`); !slices.Equal(got, []string{"1:overwrite,2:append,3:delete"}) {
		t.Fatalf("table_versions' operations: %v", got)
	}

	stage("aa_ns$t", 4, readManifest(t, "testdata/compaction/v14.manifest")) // ReserveFragments
	stage("aa_ns$t", 5, readManifest(t, "testdata/compaction/v15.manifest")) // Rewrite: 1 fragment of 96
	dev := lancemanifest.Chain{Table: "aa_ns$t", Branch: "dev"}.Key()
	if err := cs.Fork(ctx, dev, 5); err != nil {
		t.Fatal(err)
	}
	stage(dev, 5, readManifest(t, "testdata/compaction/v13.manifest"))
	untilRows(t, tb, []string{
		"ns$empty:main versions=0 oldest=∅ latest=∅ rows=∅ frags=∅ small=∅ deleted=∅ cleanup=∅ compacted=∅ needs=∅",
		"ns$t:dev versions=1 oldest=5 latest=5 rows=96 frags=12 small=12 deleted=24 cleanup=∅ compacted=∅ needs=true",
		"ns$t:main versions=5 oldest=1 latest=5 rows=96 frags=1 small=1 deleted=0 cleanup=∅ compacted=5 needs=false",
	}, q)
	if got := rowsOf(t, tb, `SELECT last_compaction_at = latest_committed_at FROM table_maintenance WHERE table_id = 'ns$t' AND branch IS NULL`); !slices.Equal(got, []string{"true"}) {
		t.Fatalf("last_compaction_at is not the Rewrite's commit time: %v", got)
	}
	if got, want := tb.MaintenanceTotals(), (MaintenanceTotals{Chains: 2, Versions: 6, SmallFragments: 13, DeletedRows: 24, NeedingCompaction: 1}); got != want {
		t.Fatalf("totals %+v, want %+v", got, want)
	}
	before := tb.DurableApplied()

	// Lance prunes versions 1 and 2: their records leave the catalog in
	// one change, which stamps the table.
	set(at(10, 30))
	n, err := cs.DeleteVersions(ctx, "aa_ns$t", []redisclaim.Range{{Start: 1, End: 3}})
	if err != nil || n != 2 {
		t.Fatalf("DeleteVersions: %d, %v", n, err)
	}
	cleaned := []string{
		"ns$empty:main versions=0 oldest=∅ latest=∅ rows=∅ frags=∅ small=∅ deleted=∅ cleanup=∅ compacted=∅ needs=∅",
		"ns$t:dev versions=1 oldest=5 latest=5 rows=96 frags=12 small=12 deleted=24 cleanup=10:30 compacted=∅ needs=true",
		"ns$t:main versions=3 oldest=3 latest=5 rows=96 frags=1 small=1 deleted=0 cleanup=10:30 compacted=5 needs=false",
	}
	untilRows(t, tb, cleaned, q)
	set(at(11, 0))
	untilRows(t, tb, cleaned, q) // its ticks are no cleanups
	if got := rowsOf(t, tb, `SELECT `+maintenanceCols+` FROM table_maintenance_at(?) WHERE table_id = 'ns$t' ORDER BY 1`, before); !slices.Equal(got, []string{
		"ns$t:dev versions=1 oldest=5 latest=5 rows=96 frags=12 small=12 deleted=24 cleanup=∅ compacted=∅ needs=true",
		"ns$t:main versions=5 oldest=1 latest=5 rows=96 frags=1 small=1 deleted=0 cleanup=∅ compacted=5 needs=false",
	}) {
		t.Fatalf("table_maintenance_at before the cleanup: %q", got)
	}
	// A removal by ranges (a batch's delete_version_ranges entry) stamps
	// the table too, and one that removes nothing does not.
	set(at(12, 15))
	for _, c := range []struct {
		ranges string
		stamps bool
	}{{"1:3", false}, {"3:4", true}, {"", false}} {
		out, _, err := tb.translate(ctx, []logEntry{{seq: 1 << 40, fields: map[string]any{
			commitlog.KindField: commitlog.DeleteVersionRanges, "t": "aa_ns$t", "ranges": c.ranges}}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, seen, _ := lastChange(out, Key{Type: TypeTable, ID: "ns$t"})
		if seen != c.stamps || (seen && !r.LastCleanupAt.Equal(at(12, 15))) {
			t.Errorf("removing %q: the table's row %v %+v", c.ranges, seen, r)
		}
	}

	// Durable: a new process reads the same from storage.
	_ = tb.Close()
	tb = e.open(now)
	if got := rowsOf(t, tb, q); !slices.Equal(got, cleaned) {
		t.Fatalf("after a restart:\n got %q\nwant %q", got, cleaned)
	}
	if r, ok := tb.versionRow("ns$t", "", 5); !ok || r.Operation != OpRewrite || !r.HasFragmentStats || r.SmallFragments != 1 {
		t.Fatalf("the index's row of the compaction: %+v", r)
	}
}

// A caller whose grants reach some namespaces sees table_maintenance's
// rows of their tables only, and cannot reach the time-travel macro.
func TestTableMaintenanceIsScoped(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	commit(t, tb,
		put(Row{ObjectType: TypeNamespace, ObjectID: "prod"}),
		put(Row{ObjectType: TypeNamespace, ObjectID: "secret"}),
		put(Row{ObjectType: TypeTable, ObjectID: "prod$a", Location: "x_prod$a"}),
		put(Row{ObjectType: TypeTable, ObjectID: "secret$b", Location: "x_secret$b", LastCleanupAt: at}),
		put(Row{ObjectType: TypeTableVersion, ObjectID: "prod$a", TableVersion: 1, ManifestPath: "x_prod$a/_versions/1.manifest", CommittedAt: at}),
		put(Row{ObjectType: TypeTableVersion, ObjectID: "secret$b", TableVersion: 1, ManifestPath: "x_secret$b/_versions/1.manifest", CommittedAt: at,
			Schema: "{}", NumRows: 10, NumFragments: 20, SmallFragments: 20, HasFragmentStats: true}))
	scoped := sqlengine.WithScope(context.Background(), &sqlengine.Scope{Subtrees: []string{"prod"}, Sep: IDSeparator})
	res, err := tb.Query(scoped, `SELECT string_agg(table_id, ',') || ' ' || count(*) FILTER (WHERE needs_compaction) FROM table_maintenance`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for res.Next() {
		rec := res.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			got = append(got, cell(rec.Column(0), i))
		}
	}
	res.Release()
	if !slices.Equal(got, []string{"prod$a 0"}) {
		t.Fatalf("scoped table_maintenance: %v", got)
	}
	if got := rowsOf(t, tb, `SELECT string_agg(table_id, ',' ORDER BY table_id) || ' ' || count(*) FILTER (WHERE needs_compaction) FROM table_maintenance`); !slices.Equal(got, []string{"prod$a,secret$b 1"}) {
		t.Fatalf("unscoped: %v", got)
	}
	if _, err := tb.Query(scoped, `SELECT * FROM table_maintenance_at(1)`); err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("a scoped caller reached table_maintenance_at: %v", err)
	}
}

// The rule: small fragments from CompactSmallFragments on, or deleted
// rows above CompactDeletedRatio of the physical rows (Lance's
// materialize_deletions_threshold, strictly above as Lance compares).
func TestNeedsCompaction(t *testing.T) {
	for _, c := range []struct {
		small, rows, deleted uint64
		want                 bool
	}{
		{0, 0, 0, false},
		{CompactSmallFragments - 1, 1000, 0, false},
		{CompactSmallFragments, 1000, 0, true},
		{1, 900, 100, false}, // exactly 10%
		{1, 899, 101, true},
		{0, 0, 5, true}, // every row deleted
		{0, 1 << 62, 1 << 62, true},
	} {
		if got := NeedsCompaction(c.small, c.rows, c.deleted); got != c.want {
			t.Errorf("NeedsCompaction(%d, %d, %d) = %v", c.small, c.rows, c.deleted, got)
		}
	}
}

// A segment written before the maintenance columns existed (by an older
// flightns) reads with them NULL: its version keeps its statistics and
// has no fragment counts or operation, its table no cleanup, and
// table_maintenance's needs_compaction is unknown. A snapshot written
// after holds the columns, NULL still.
func TestSegmentsWithoutTheMaintenanceColumnsStillRead(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	changes := []change{
		{seq: 1, row: Row{ObjectType: TypeTable, ObjectID: "t", Location: "loc_t", CommittedAt: at}},
		{seq: 1, row: Row{ObjectType: TypeTableVersion, ObjectID: "t", TableVersion: 1, ManifestPath: "loc_t/_versions/1.manifest",
			CommittedAt: at, Schema: `{"fields":[]}`, NumRows: 5, NumFragments: 2, DataBytes: 100}},
	}
	full := buildRecord(Schema(Columns{}, nil, true), nil, changes)
	added := map[string]bool{ColSmallFragments: true, ColDeletedRows: true, ColOperation: true, ColLastCleanupAt: true}
	var fields []arrow.Field
	var cols []arrow.Array
	for i, f := range full.Schema().Fields() {
		if !added[f.Name] {
			fields = append(fields, f)
			cols = append(cols, full.Column(i))
		}
	}
	old := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, full.NumRows())
	full.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(old.Schema(), &buf, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(old); err != nil {
		t.Fatal(err)
	}
	old.Release()
	for k, v := range map[string]string{metaFormat: formatV1, metaCatalog: e.catalog, metaFirstSeq: "1", metaLastSeq: "1", metaLost: "0-0"} {
		if err := fw.AppendKeyValueMetadata(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.objs.PutIfAbsent(ctx, segmentKey(1), buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.Set(ctx, "{"+e.catalog+"}:seq", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}

	tb := e.open()
	defer func() { _ = tb.Close() }()
	r, ok := tb.versionRow("t", "", 1)
	if !ok || r.NumRows != 5 || r.HasFragmentStats || r.Operation != "" {
		t.Fatalf("the old segment's version row: %+v", r)
	}
	want := []string{"t:main versions=1 oldest=1 latest=1 rows=5 frags=2 small=∅ deleted=∅ cleanup=∅ compacted=∅ needs=∅"}
	q := `SELECT ` + maintenanceCols + ` FROM table_maintenance`
	if got := rowsOf(t, tb, q); !slices.Equal(got, want) {
		t.Fatalf("table_maintenance over an old segment: %q", got)
	}
	if got := tb.MaintenanceTotals(); got != (MaintenanceTotals{Chains: 1, Versions: 1, Unread: 1}) {
		t.Fatalf("totals %+v", got)
	}
	// A snapshot written now, and a process that starts from it.
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "n"}))
	if err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	_ = tb.Close()
	tb = e.open()
	if got := rowsOf(t, tb, q); !slices.Equal(got, want) {
		t.Fatalf("after a snapshot: %q", got)
	}
}

// reframed is manifest file b with its manifest message's fields numbered
// drop left out and extra appended: the message framed again after the
// rest of the file, and a footer pointing at it.
func reframed(t *testing.T, b []byte, drop protowire.Number, extra []byte) []byte {
	t.Helper()
	body := b[:len(b)-16]
	msg, err := framedAt(body, binary.LittleEndian.Uint64(b[len(b)-16:]))
	if err != nil {
		t.Fatal(err)
	}
	var kept []byte
	for rest := msg; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			t.Fatal("a malformed manifest")
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			t.Fatal("a malformed manifest")
		}
		if num != drop {
			kept = append(kept, rest[:n+m]...)
		}
		rest = rest[n+m:]
	}
	kept = append(kept, extra...)
	out := append([]byte(nil), body...)
	at := uint64(len(out))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(kept)))
	out = append(out, kept...)
	out = binary.LittleEndian.AppendUint64(out, at)
	return append(out, b[len(b)-8:]...) // format version and "LANC"
}

// A version's operation comes from its manifest's transaction section,
// else from the transaction file it names in the dataset's
// _transactions/ (never a path elsewhere); a manifest that names
// neither has none.
func TestTheOperationOfAVersionsTransaction(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	for name, want := range map[string]string{
		"../internal/lancemanifest/testdata/v1.manifest":                   "overwrite",
		"../internal/lancemanifest/testdata/v4.manifest":                   "create_index",
		"../internal/lancemanifest/testdata/lance12/restore-v3.manifest":   OpRestore,
		"../internal/lancemanifest/testdata/lance12/clone-dev-v2.manifest": OpClone,
		"testdata/compaction/v13.manifest":                                 OpDelete,
		"testdata/compaction/v15.manifest":                                 OpRewrite,
	} {
		if op, file, err := inlineOperation(readManifest(t, name)); err != nil || op != want || file == "" {
			t.Errorf("%s: %q %q %v, want %q", name, op, file, err, want)
		}
	}
	// As Lance wrote manifests before it inlined transactions.
	v15 := reframed(t, readManifest(t, "testdata/compaction/v15.manifest"), fieldTransactionSection, nil)
	if _, err := lancemanifest.Read(v15); err != nil {
		t.Fatalf("the manifest without its section does not read: %v", err)
	}
	key := "aa_t/_versions/" + lancemanifest.ManifestName(lancemanifest.V2, 15)
	if op, err := readOperation(ctx, e.objs, key, v15); err == nil {
		t.Fatalf("an absent transaction file gave %q", op)
	}
	const file = "13-1ea56ab4-df2e-4482-bcb2-bb1dd34e57ec.txn"
	if err := e.objs.Put(ctx, "aa_t/_transactions/"+file, readManifest(t, "testdata/compaction/"+file)); err != nil {
		t.Fatal(err)
	}
	if op, err := readOperation(ctx, e.objs, key, v15); err != nil || op != OpRewrite {
		t.Fatalf("from the transaction file: %q, %v", op, err)
	}
	// The reader takes it from there too; the noted bytes leave it to
	// the reader.
	tb := e.open()
	defer func() { _ = tb.Close() }()
	j := versionStats{ID: "t", Version: 15, ManifestPath: key, ManifestSize: uint64(len(v15))}
	if err := e.objs.Put(ctx, key, v15); err != nil {
		t.Fatal(err)
	}
	if err := tb.readStats(ctx, &j); err != nil || j.Operation != OpRewrite || *j.SmallFragments != 1 || *j.DeletedRows != 0 {
		t.Fatalf("readStats: %+v, %v", j, err)
	}
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "n"})) // this process leads
	tb.NoteManifest("nowhere/15.manifest", v15)
	r := Row{ObjectType: TypeTableVersion, ObjectID: "t", TableVersion: 15, ManifestPath: "nowhere/15.manifest", ManifestSize: uint64(len(v15))}
	if tb.noted(&r); r.Schema != "" {
		t.Fatalf("noted bytes without the transaction gave statistics: %+v", r)
	}
	for _, name := range []string{"../x.txn", "a/b.txn", ".."} {
		b := reframed(t, v15, fieldTransactionFile,
			protowire.AppendBytes(protowire.AppendTag(nil, fieldTransactionFile, protowire.BytesType), []byte(name)))
		if op, err := readOperation(ctx, e.objs, key, b); err == nil {
			t.Errorf("transaction file %q: %q", name, op)
		}
	}
}

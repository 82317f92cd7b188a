package manifesttable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

func sampleChanges() []Change {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return []Change{
		put(Row{ObjectType: TypeNamespace, ObjectID: "prod", Metadata: `{"owner":"ana"}`, CommittedAt: at}),
		put(Row{ObjectType: TypeNamespace, ObjectID: "prod$sales", Metadata: `{"owner":"bo","tier":3}`, CommittedAt: at}),
		put(Row{ObjectType: TypeTable, ObjectID: "prod$sales$orders", Location: "ab12cd34_prod$sales$orders", Metadata: `{}`,
			BaseObjects: []string{"prod$sales$raw"}, CommittedAt: at, HasSpecID: true, SpecID: 1,
			Extra: map[string]any{"partition_field_1": int32(2026), "partition_field_2": "eu", "partition_field_3": arrow.Date32(20000)}}),
		put(Row{ObjectType: TypeTableVersion, ObjectID: "prod$sales$orders", TableVersion: 1,
			ManifestPath: "ab12cd34_prod$sales$orders/_versions/18446744073709551614.manifest", ManifestSize: 512, CommittedAt: at}),
		put(Row{ObjectType: TypeTableVersion, ObjectID: "prod$sales$orders", TableVersion: 2,
			ManifestPath: "ab12cd34_prod$sales$orders/_versions/18446744073709551613.manifest", ManifestSize: 640, CommittedAt: at, TxnID: "tx-1"}),
	}
}

// branchChange is a version row of a Lance branch of sampleChanges' table.
func branchChange() Change {
	return put(Row{ObjectType: TypeTableVersion, ObjectID: "prod$sales$orders", Branch: "team/dev", TableVersion: 2,
		ManifestPath: "ab12cd34_prod$sales$orders/tree/team/dev/_versions/18446744073709551613.manifest", ManifestSize: 700,
		CommittedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)})
}

func TestRowsRoundTripThroughSegmentsAndARestart(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	for _, c := range append(sampleChanges(), branchChange()) {
		commit(t, tb, c)
	}
	before := allRows(t, tb, 0)
	if len(before) != 6 {
		t.Fatalf("%d rows, want 6:\n%s", len(before), strings.Join(before, "\n"))
	}
	if !strings.Contains(strings.Join(before, "\n"), "|team/dev") {
		t.Fatalf("no row names the branch:\n%s", strings.Join(before, "\n"))
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	again := e.open()
	defer func() { _ = again.Close() }()
	if after := allRows(t, again, 0); !slices.Equal(before, after) {
		t.Fatalf("after a restart:\n%s\nwant:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if r, ok := again.Object(TypeTable, "prod$sales$orders"); !ok || r.Extra["partition_field_1"] != int32(2026) || r.Location != "ab12cd34_prod$sales$orders" {
		t.Fatalf("index after restart: %+v %v", r, ok)
	}
	if kids := again.Children("prod"); len(kids) != 1 || kids[0].ObjectID != "prod$sales" {
		t.Fatalf("children of prod: %+v", kids)
	}
	if v := again.HighestVersion("prod$sales$orders"); v != 2 {
		t.Fatalf("highest version = %d", v)
	}
	if rows := again.BranchVersionRows("prod$sales$orders", "team/dev"); len(rows) != 1 || rows[0].ManifestSize != 700 || rows[0].Branch != "team/dev" {
		t.Fatalf("the branch's rows after restart: %+v", rows)
	}
	if rows := again.VersionRows("prod$sales$orders"); len(rows) != 2 {
		t.Fatalf("main's rows after restart: %+v", rows)
	}
}

func TestSnapshotPlusSegmentsEqualTheRowsAppliedAndCompactionKeepsThemExactly(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	// The change feed's history is kept for no time at all: compaction
	// removes every segment a snapshot covers.
	tb := e.open(func(c *Config) { c.KeepSnapshots, c.EventHistory = 1, time.Nanosecond })
	for _, c := range append(sampleChanges(), branchChange()) {
		commit(t, tb, c)
	}
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "prod", Metadata: `{"owner":"cy"}`}))
	commit(t, tb, del(TypeTableVersion, "prod$sales$orders", 1))
	want := allRows(t, tb, 0)
	if err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if got := allRows(t, tb, 0); !slices.Equal(got, want) {
		t.Fatalf("rows changed by compaction:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// More changes after the snapshot, a second snapshot, then a restart
	// from snapshot + segments.
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "dev"}))
	if err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "qa"}))
	want = allRows(t, tb, 0)
	_ = tb.Close()
	snaps, _ := e.objs.ListAll(ctx, snapshotPrefix)
	if len(snaps) != 1 {
		t.Fatalf("%d snapshots kept, want 1", len(snaps))
	}
	segs, _ := e.objs.ListAll(ctx, logPrefix)
	if len(segs) != 1 {
		t.Fatalf("%d segments left after compaction, want only the one after the snapshot: %v", len(segs), segs)
	}
	again := e.open()
	defer func() { _ = again.Close() }()
	if got := allRows(t, again, 0); !slices.Equal(got, want) {
		t.Fatalf("after restart from snapshot + segments:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAFailedSegmentWriteIsRetriedAndNeverDuplicated(t *testing.T) {
	for _, phase := range []objstore.Phase{objstore.Before, objstore.After} {
		t.Run(phase.String(), func(t *testing.T) {
			var fails atomic32
			e := newTenv(t, objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, p objstore.Phase) error {
				if op == objstore.OpPutIfAbsent && strings.HasPrefix(key, logPrefix) && p == phase && fails.add() <= 2 {
					return errors.New("injected")
				}
				return nil
			}})
			tb := e.open()
			defer func() { _ = tb.Close() }()
			seq := commit(t, tb, sampleChanges()...)
			// Before: the write never happened and is retried. After: it
			// happened, the reply was lost, and the retry finds it.
			if want := map[objstore.Phase]int32{objstore.Before: 2, objstore.After: 1}[phase]; fails.load() < want {
				t.Fatalf("the fault fired %d times", fails.load())
			}
			if rows := allRows(t, tb, 0); len(rows) != 5 {
				t.Fatalf("%d rows after retried writes, want 5", len(rows))
			}
			segs, _ := e.objs.ListAll(context.Background(), logPrefix)
			if len(segs) != 1 {
				t.Fatalf("%d segments for one sequence (%d)", len(segs), seq)
			}
		})
	}
}

func TestHalfWrittenFilesAreNeverVisible(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tb := e.open()
	commit(t, tb, sampleChanges()...)
	want := allRows(t, tb, 0)
	_ = tb.Close()
	// A crash while writing leaves only hidden temp files; a snapshot that
	// failed to finish is simply absent.
	dir := strings.TrimPrefix(e.objs.URI(), "file://")
	for _, p := range []string{"__manifest/_log/.flightns-tmp-1", "__manifest/_snapshots/.flightns-tmp-2"} {
		if err := writeFile(dir+"/"+p, "garbage"); err != nil {
			t.Fatal(err)
		}
	}
	again := e.open()
	defer func() { _ = again.Close() }()
	if got := allRows(t, again, 0); !slices.Equal(got, want) {
		t.Fatalf("rows after a crash: %v", got)
	}
	_ = ctx
}

func TestTwoMaterializersRacingWriteEachSequenceOnce(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	a := e.open(func(c *Config) { c.ignoreLease = true; c.MaxSegmentEntries = 7 })
	b := e.open(func(c *Config) { c.ignoreLease = true; c.MaxSegmentEntries = 5 })
	defer func() { _ = a.Close() }()
	defer func() { _ = b.Close() }()
	var seqs []uint64
	for i := range 120 {
		tb := a
		if i%2 == 1 {
			tb = b
		}
		s, err := tb.Append(ctx, []Change{put(Row{ObjectType: TypeNamespace, ObjectID: fmt.Sprintf("ns%03d", i)})})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, s)
	}
	last := seqs[len(seqs)-1]
	for _, tb := range []*Table{a, b} {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		if err := tb.WaitVisible(wctx, last); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	st := storage{objs: e.objs, catalog: e.catalog}
	firsts, err := st.listSeqs(ctx, logPrefix)
	if err != nil {
		t.Fatal(err)
	}
	next := uint64(1)
	seen := map[uint64]int{}
	for _, f := range firsts {
		seg, err := st.readSegment(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if seg.First != next {
			t.Fatalf("segment %d..%d does not follow %d", seg.First, seg.Last, next-1)
		}
		for _, c := range seg.Changes {
			seen[c.seq]++
		}
		next = seg.Last + 1
	}
	for _, s := range seqs {
		if seen[s] != 1 {
			t.Fatalf("sequence %d is in %d segments", s, seen[s])
		}
	}
	if ra, rb := allRows(t, a, 0), allRows(t, b, 0); len(ra) != 120 || !slices.Equal(ra, rb) {
		t.Fatalf("the two processes see %d and %d rows", len(ra), len(rb))
	}
}

func TestBadRowsAreRefusedBeforeTheLog(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	for _, r := range []Row{
		{ObjectType: "view", ObjectID: "x"},
		{ObjectType: TypeTableVersion, ObjectID: "t"},
		{ObjectType: TypeTable, ObjectID: "t", TableVersion: 3},
		{ObjectType: TypeNamespace, ObjectID: "n", Metadata: "{not json"},
		{ObjectType: TypeNamespace, ObjectID: "n", Extra: map[string]any{"Bad Name": int32(1)}},
		{ObjectType: TypeNamespace, ObjectID: "n", Extra: map[string]any{"object_id": "shadow"}},
		{ObjectType: TypeNamespace, ObjectID: "n", Extra: map[string]any{"partition_field_1": struct{}{}}},
	} {
		if _, err := tb.Append(ctx, []Change{put(r)}); !errors.Is(err, nserror.ErrInvalidInput) {
			t.Errorf("Append(%+v) = %v, want InvalidInput", r, err)
		}
	}
	if n, _ := e.rdb.XLen(ctx, "{"+e.catalog+"}:log").Result(); n != 0 {
		t.Fatalf("refused rows reached the log: %d entries", n)
	}
}

func TestACompactionCutAnywhereLeavesALoadableTable(t *testing.T) {
	ctx := context.Background()
	for _, cut := range []struct {
		name string
		op   objstore.Op
		pref string
	}{
		{"snapshot write", objstore.OpPutIfAbsent, snapshotPrefix},
		{"old segment removal", objstore.OpDelete, logPrefix},
		{"old snapshot removal", objstore.OpDelete, snapshotPrefix},
	} {
		t.Run(cut.name, func(t *testing.T) {
			var armed atomic32
			e := newTenv(t, objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, p objstore.Phase) error {
				if armed.load() == 1 && op == cut.op && strings.HasPrefix(key, cut.pref) && p == objstore.Before {
					return errors.New("crash")
				}
				return nil
			}})
			tb := e.open(func(c *Config) { c.KeepSnapshots, c.EventHistory = 1, time.Nanosecond })
			commit(t, tb, sampleChanges()...)
			if err := tb.Compact(ctx); err != nil { // a first snapshot, to have something to remove
				t.Fatal(err)
			}
			commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "late"}))
			want := allRows(t, tb, 0)
			armed.add()
			if err := tb.Compact(ctx); err == nil {
				t.Fatal("the cut did not fire")
			}
			_ = tb.Close()
			again := e.open()
			defer func() { _ = again.Close() }()
			if got := allRows(t, again, 0); !slices.Equal(got, want) {
				t.Fatalf("after a compaction cut at %s:\n%v\nwant\n%v", cut.name, got, want)
			}
		})
	}
}

// A replica that fell behind a compaction — the segments it needs next
// were pruned — starts again from the newest snapshot, and its index and
// SQL then equal the leader's.
func TestAReplicaBehindACompactionStartsAgainFromTheSnapshot(t *testing.T) {
	e := newTenv(t)
	leader := openLeader(t, e, 3)
	defer func() { _ = leader.Close() }()
	replica := e.open(func(c *Config) { c.ReadOnly = true })
	defer func() { _ = replica.Close() }()
	waitFor(t, replica, leader.durableNow())
	// The replica stops following; the leader goes on and compacts twice,
	// which prunes every segment the replica needs next.
	close(replica.stop)
	replica.runDone.Wait()
	replica.stop = make(chan struct{}) // Close closes it again
	replica.runDone.Add(1)
	go func() { <-replica.stop; replica.runDone.Done() }()
	for i := 3; i < 8; i++ {
		commit(t, leader, nsChange(i))
	}
	if err := leader.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 8; i < 10; i++ {
		commit(t, leader, nsChange(i))
	}
	if err := leader.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := replica.catchUp(context.Background()); err != nil {
		t.Fatalf("catching up after the compaction: %v", err)
	}
	commit(t, leader, nsChange(10))
	if err := replica.catchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameAsLeader(t, replica, leader, 11)
}

// nsChange creates namespace n<i>.
func nsChange(i int) Change {
	return put(Row{ObjectType: TypeNamespace, ObjectID: fmt.Sprintf("n%02d", i)})
}

// openLeader opens the table with namespaces n00… (count of them).
func openLeader(t *testing.T, e *tenv, count int) *Table {
	t.Helper()
	leader := e.open()
	for i := range count {
		commit(t, leader, nsChange(i))
	}
	return leader
}

// sameAsLeader waits until replica has caught up with leader, then
// compares their rows and the namespaces in the replica's index.
func sameAsLeader(t *testing.T, replica, leader *Table, namespaces int) {
	t.Helper()
	waitFor(t, replica, leader.durableNow())
	if got, want := allRows(t, replica, 0), allRows(t, leader, 0); !slices.Equal(got, want) {
		t.Fatalf("the replica's rows:\n%s\nthe leader's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(replica.Children("")); n != namespaces {
		t.Fatalf("the replica's index has %d namespaces, want %d", n, namespaces)
	}
}

// A process that lists the segments, then finds one gone when it reads it
// (a compaction overtook it in between: the SQL worker starting while
// commits run), starts again from the snapshot that covers it.
func TestAReplicaOvertakenByACompactionWhileCatchingUpStartsAgainFromTheSnapshot(t *testing.T) {
	e := newTenv(t)
	leader := openLeader(t, e, 3)
	defer func() { _ = leader.Close() }()
	var overtaken atomic.Bool
	hook := objstore.FaultFunc(func(_ context.Context, op objstore.Op, key string, ph objstore.Phase) error {
		if op != objstore.OpGet || ph != objstore.Before || !strings.HasPrefix(key, logPrefix) || !overtaken.CompareAndSwap(false, true) {
			return nil
		}
		// Between the replica's listing and its read of the first
		// segment: two compactions (two snapshots are kept) prune it.
		for i := 3; i < 5; i++ {
			commit(t, leader, nsChange(i))
			if err := leader.Compact(context.Background()); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	objs, err := objstore.OpenWith(context.Background(), e.objs.URI(), objstore.Options{Faults: hook})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = objs.Close() }()
	replica := e.open(func(c *Config) { c.ReadOnly, c.Objects = true, objs })
	defer func() { _ = replica.Close() }()
	if !overtaken.Load() {
		t.Fatal("the replica never read a segment")
	}
	sameAsLeader(t, replica, leader, 5)
}

// A row's extra values survive the commit log's encoding exactly at the
// ends of their ranges: timestamps of every int64 microsecond (RFC 3339
// text stops at year 9999), int64 and date32 limits; logs written before
// timestamps were microseconds still decode.
func TestExtraValuesRoundTripAtTheEndsOfTheirRanges(t *testing.T) {
	for _, v := range []any{time.UnixMicro(math.MaxInt64).UTC(), time.UnixMicro(math.MinInt64).UTC(), time.UnixMicro(253402300800000000).UTC(),
		int64(math.MaxInt64), int64(math.MinInt64), arrow.Date32(math.MaxInt32), arrow.Date32(math.MinInt32)} {
		r := Row{ObjectType: TypeNamespace, ObjectID: "p", Extra: map[string]any{"partition_field_1": v}}
		b, err := MarshalRow(r)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		back, err := UnmarshalRow(b)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		if got := back.Extra["partition_field_1"]; got != v {
			t.Fatalf("%v came back as %v", v, got)
		}
	}
	old := []byte(`{"object_id":"p","object_type":"namespace","extra":{"partition_field_1":{"t":"timestamp","v":"2024-03-01T10:00:00Z"}}}`)
	back, err := UnmarshalRow(old)
	if err != nil || back.Extra["partition_field_1"] != time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC) {
		t.Fatalf("an RFC 3339 timestamp of an older log: %v %v", back.Extra, err)
	}
}

// One sequence with more entries than a segment usually holds (one large
// Append, as a cascade or a bulk load logs) is written whole: every row is
// there, in this process and after a reload from storage.
func TestASequenceLongerThanASegmentIsWrittenWhole(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tb := e.open(func(c *Config) { c.MaxSegmentEntries = 7 })
	var changes []Change
	for i := range 25 {
		changes = append(changes, put(Row{ObjectType: TypeNamespace, ObjectID: fmt.Sprintf("big%03d", i)}))
	}
	seq, err := tb.Append(ctx, changes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Append(ctx, []Change{put(Row{ObjectType: TypeNamespace, ObjectID: "after"})}); err != nil {
		t.Fatal(err)
	}
	if err := tb.WaitDurable(ctx, seq+1); err != nil {
		t.Fatal(err)
	}
	if n := len(tb.Objects()); n != 26 {
		t.Fatalf("%d rows after one sequence of 25 and one of 1, want 26", n)
	}
	_ = tb.Close()
	again := e.open()
	defer func() { _ = again.Close() }()
	if n := len(again.Objects()); n != 26 {
		t.Fatalf("%d rows after a reload, want 26", n)
	}
}

// The reader knows every kind of log entry commitlog defines (a kind it
// does not know is logged and skipped, losing whatever it carried).
func TestTheMaterializerKnowsEveryKindOfLogEntry(t *testing.T) {
	var logs bytes.Buffer
	e := newTenv(t)
	tb := e.open(func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	defer func() { _ = tb.Close() }()
	// One at a time: an entry without its fields may fail alone.
	for i, k := range append(slices.Clone(commitlog.Kinds), "no_such_kind") {
		_, _, _ = tb.translate(context.Background(), []logEntry{{seq: uint64(i + 1), fields: map[string]any{commitlog.KindField: k}}}, nil, nil)
	}
	if strings.Count(logs.String(), "unknown log entry kind") != 1 || !strings.Contains(logs.String(), "no_such_kind") {
		t.Fatalf("the materializer should know every kind but the made-up one; its log:\n%s", logs.String())
	}
}

package manifesttable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// claims commits versions through redisclaim on the same catalog, the way
// a server does.
func (e *tenv) claims(tb *Table) *redisclaim.Store {
	e.t.Helper()
	cfg := redisclaim.Config{Redis: e.rdb, Objects: e.objs, Catalog: e.catalog, Logger: quiet}
	var s *redisclaim.Store
	var err error
	if tb != nil {
		cat := &tableCatalog{tb: tb}
		s, err = redisclaim.NewIn(context.Background(), cfg, cat)
		cat.claims = s
	} else {
		s, err = redisclaim.New(context.Background(), cfg)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

// tableCatalog is a catalog of claims and a __manifest table, as a
// server's, without an object index: its recovery raises the catalog
// sequence above what the table holds.
type tableCatalog struct {
	claims *redisclaim.Store
	tb     *Table
}

func (c *tableCatalog) Recover(ctx context.Context) (redisclaim.RecoveryStats, error) {
	r, err := c.claims.BeginRecovery(ctx)
	if r == nil || err != nil {
		return redisclaim.RecoveryStats{}, err
	}
	err = r.WaitOut(ctx, false)
	var floor uint64
	if err == nil {
		floor, err = c.tb.SeqFloor(ctx)
	}
	var st redisclaim.RecoveryStats
	if err == nil {
		st, err = r.RebuildClaims(ctx, floor)
	}
	if err == nil {
		st, err = r.Finish(ctx)
	}
	return st, r.End(ctx, err)
}

func (c *tableCatalog) CompleteTxn(context.Context, redisclaim.TxnCommit) error { return nil }

func (c *tableCatalog) Name(string) string { return "" }

func (c *tableCatalog) NoteManifest(string, []byte) {}

func (e *tenv) stageAndPut(s *redisclaim.Store, loc string, v uint64) redisclaim.Location {
	e.t.Helper()
	ctx := context.Background()
	p := lancemanifest.StagingPath(lancemanifest.Dir(loc).Manifest(lancemanifest.V2, v))
	if err := e.objs.Put(ctx, p, []byte(fmt.Sprintf("%s@%d", loc, v))); err != nil {
		e.t.Fatal(err)
	}
	l, err := s.Put(ctx, loc, v, p, 0, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func waitFor(t *testing.T, tb *Table, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tb.WaitVisible(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

func TestCommitsFromTheClaimStoreBecomeVersionRows(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	commit(t, tb, put(Row{ObjectType: TypeTable, ObjectID: "ns$orders", Location: "aa11bb22_ns$orders"}))
	cs := e.claims(tb)
	for v := uint64(1); v <= 3; v++ {
		e.stageAndPut(cs, "aa11bb22_ns$orders", v)
	}
	// A transaction over this table and a directory without a table row.
	var es []redisclaim.Entry
	for _, loc := range []string{"aa11bb22_ns$orders", "raw_dir"} {
		v := uint64(4)
		if loc == "raw_dir" {
			v = 1
		}
		p := lancemanifest.StagingPath(lancemanifest.Dir(loc).Manifest(lancemanifest.V2, v))
		if err := e.objs.Put(ctx, p, []byte("txn")); err != nil {
			t.Fatal(err)
		}
		es = append(es, redisclaim.Entry{Table: loc, Version: v, StagingPath: p})
	}
	b, err := cs.BatchPut(ctx, es)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, tb, b.Seq)
	got := rowsOf(t, tb, `SELECT table_id, version, manifest_path, manifest_size, txn_id IS NOT NULL FROM table_versions ORDER BY 1, 2`)
	if len(got) != 5 || got[0] != "ns$orders|1|aa11bb22_ns$orders/_versions/18446744073709551614.manifest|20|false" ||
		got[3] != "ns$orders|4|aa11bb22_ns$orders/_versions/18446744073709551611.manifest|3|true" ||
		got[4] != "raw_dir|1|raw_dir/_versions/18446744073709551614.manifest|3|true" {
		t.Fatalf("version rows:\n%v", got)
	}
	if _, err := cs.DeleteVersions(ctx, "aa11bb22_ns$orders", []redisclaim.Range{{Start: 1, End: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Delete(ctx, "raw_dir"); err != nil {
		t.Fatal(err)
	}
	l := e.stageAndPut(cs, "aa11bb22_ns$orders", 5)
	waitFor(t, tb, l.Seq)
	got = rowsOf(t, tb, `SELECT table_id, version FROM table_versions ORDER BY 1, 2`)
	if !slices.Equal(got, []string{"ns$orders|3", "ns$orders|4", "ns$orders|5"}) {
		t.Fatalf("after deleting versions and dropping raw_dir: %v", got)
	}
}

// Versions committed while nothing materialized, then Redis flushed: the
// commit log lost them, and the materializer re-derives them from storage.
func TestAGapInTheLogIsRepairedFromStorage(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	commit(t, tb, put(Row{ObjectType: TypeTable, ObjectID: "t", Location: "loc_t"}))
	cs := e.claims(tb)
	e.stageAndPut(cs, "loc_t", 1)
	_ = tb.Close()
	// Nobody materializes now.
	ro := e.open(func(c *Config) { c.ReadOnly = true })
	e.stageAndPut(cs, "loc_t", 2)
	e.stageAndPut(cs, "loc_t", 3)
	_ = ro.Close()
	e.redis.FlushAll()
	tb = e.open()
	defer func() { _ = tb.Close() }()
	cs2 := e.claims(tb)
	l := e.stageAndPut(cs2, "loc_t", 4) // recovers Redis, then commits
	if l.Seq < SeqGapAfterLoss {
		t.Fatalf("sequence after recovery %d is not above the floor", l.Seq)
	}
	waitFor(t, tb, l.Seq)
	got := rowsOf(t, tb, `SELECT version FROM table_versions WHERE table_id = 't' ORDER BY 1`)
	if !slices.Equal(got, []string{"1", "2", "3", "4"}) {
		t.Fatalf("versions after the repair: %v", got)
	}
	// A caller that waited for one of the lost sequences learns it was lost.
	err := tb.WaitDurable(context.Background(), 3)
	if nserror.CodeOf(err) != nserror.ServiceUnavailable || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("waiting for a lost sequence: %v", err)
	}
}

// The same for Lance branches: a branch's versions committed in the gap
// are found under its tree/<branch>/ (named by its rows or by Lance's ref
// file), and the rows of a branch whose files Lance removed meanwhile go.
func TestAGapInTheLogIsRepairedFromStorageOnBranchesToo(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tb := e.open()
	commit(t, tb, put(Row{ObjectType: TypeTable, ObjectID: "t", Location: "loc_t"}))
	cs := e.claims(tb)
	dev, old, fresh := lancemanifest.Chain{Table: "loc_t", Branch: "dev"}.Key(), lancemanifest.Chain{Table: "loc_t", Branch: "old"}.Key(), lancemanifest.Chain{Table: "loc_t", Branch: "team/new"}.Key()
	e.stageAndPut(cs, "loc_t", 1)
	e.stageAndPut(cs, dev, 1)
	e.stageAndPut(cs, old, 1)
	l := e.stageAndPut(cs, old, 2)
	waitFor(t, tb, l.Seq)
	_ = tb.Close()
	// Nobody materializes now: dev gets version 2, team/new is made (with
	// its ref file), old is deleted by Lance.
	ro := e.open(func(c *Config) { c.ReadOnly = true })
	e.stageAndPut(cs, dev, 2)
	if err := cs.Fork(ctx, fresh, 1); err != nil {
		t.Fatal(err)
	}
	e.stageAndPut(cs, fresh, 1)
	if err := e.objs.Put(ctx, lancemanifest.Dir("loc_t").BranchRefs()+"team%2Fnew.json", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.objs.DeletePrefix(ctx, old+"/"); err != nil {
		t.Fatal(err)
	}
	_ = ro.Close()
	e.redis.FlushAll()
	tb = e.open()
	defer func() { _ = tb.Close() }()
	l = e.stageAndPut(e.claims(tb), "loc_t", 2) // recovers Redis, then commits
	waitFor(t, tb, l.Seq)
	got := rowsOf(t, tb, `SELECT coalesce(branch, 'main') || '@' || version FROM table_versions WHERE table_id = 't' ORDER BY 1`)
	if !slices.Equal(got, []string{"dev@1", "dev@2", "main@1", "main@2", "team/new@1"}) {
		t.Fatalf("versions after the repair: %v", got)
	}
}

// A partition's read_version that names a version storage never got (its
// claim was lost with Redis) falls back to the newest final version when
// the gap is repaired.
func TestARepairedGapTakesReadVersionsBackToStorage(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	commit(t, tb, put(Row{ObjectType: TypeTable, ObjectID: "p", Location: "loc_p"}))
	cs := e.claims(tb)
	waitFor(t, tb, e.stageAndPut(cs, "loc_p", 1).Seq)
	commit(t, tb, put(Row{ObjectType: TypeTable, ObjectID: "p", Location: "loc_p", ReadVersion: 3}))
	_ = tb.Close()
	e.redis.FlushAll()
	tb = e.open()
	defer func() { _ = tb.Close() }()
	l := e.stageAndPut(e.claims(tb), "loc_p", 2)
	waitFor(t, tb, l.Seq)
	r, _ := tb.Object(TypeTable, "p")
	if r.ReadVersion != 1 && r.ReadVersion != 2 {
		t.Fatalf("read_version after the repair: %d, want a version in storage (1 or 2)", r.ReadVersion)
	}
}

// Redis loses its state again while the materializer lists storage for
// a gap: the log no longer tells which versions it listed are the new
// epoch's (their entries went with the loss). The materializer reads the
// log again instead of taking them for the gap's: a transaction with one
// member final before the listing and one after (its coordinator failed,
// and the recovery from the second loss rolled it forward) has both
// re-derived at one gap, not one at each.
func TestALossDuringAGapsListingHasTheLogReadAgain(t *testing.T) {
	ctx := context.Background()
	uFinal := lancemanifest.Dir("loc_u").Manifest(lancemanifest.V2, 1)
	var failU atomic.Bool
	e := newTenv(t, objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, ph objstore.Phase) error {
		if failU.Load() && key == uFinal && ph == objstore.Before && (op == objstore.OpPutIfAbsent || op == objstore.OpCopyIfAbsent) {
			return errors.New("injected: the coordinator dies before it finalizes u")
		}
		return nil
	}})
	tb := e.open()
	commit(t, tb, put(Row{ObjectType: TypeTable, ObjectID: "t", Location: "loc_t"}), put(Row{ObjectType: TypeTable, ObjectID: "u", Location: "loc_u"}))
	waitFor(t, tb, e.stageAndPut(e.claims(tb), "loc_t", 1).Seq)
	_ = tb.Close()
	// The first loss. In the next epoch, while nobody materializes, t
	// gets version 2, and a transaction over t (version 3) and u (version
	// 1) is recorded with only t's member final.
	e.redis.FlushAll()
	ro := e.open(func(c *Config) { c.ReadOnly = true })
	cs := e.claims(ro)
	e.stageAndPut(cs, "loc_t", 2)
	failU.Store(true)
	entries := []redisclaim.Entry{{Table: "loc_t", Version: 3}, {Table: "loc_u", Version: 1}}
	for i, m := range entries {
		entries[i].StagingPath = lancemanifest.StagingPath(lancemanifest.Dir(m.Table).Manifest(lancemanifest.V2, m.Version))
		if err := e.objs.Put(ctx, entries[i].StagingPath, []byte("txn")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.BatchPut(ctx, entries); err == nil {
		t.Fatal("the fault did not fire")
	}
	_ = ro.Close()
	// The materializer reads t version 2's entry alone (a segment of one
	// entry) and lists storage for the gap before it; then Redis loses
	// its state again, before it reads the log past the gap.
	lost := make(chan struct{})
	var once sync.Once
	tb = e.open(func(c *Config) {
		c.MaxSegmentEntries = 1
		c.gapListed = func() {
			once.Do(func() {
				e.redis.FlushAll()
				failU.Store(false)
				close(lost)
			})
		}
	})
	defer func() { _ = tb.Close() }()
	select {
	case <-lost:
	case <-time.After(20 * time.Second):
		t.Fatal("the materializer never listed storage for the gap")
	}
	l := e.stageAndPut(e.claims(tb), "loc_t", 4) // recovers Redis (the transaction rolled forward), then commits
	waitFor(t, tb, l.Seq)
	if got := rowsOf(t, tb, `SELECT table_id || '@' || version FROM table_versions ORDER BY 1`); !slices.Equal(got, []string{"t@1", "t@2", "t@3", "t@4", "u@1"}) {
		t.Fatalf("versions: %v", got)
	}
	events, _, err := tb.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	seqOf := map[string][]uint64{}
	for _, ev := range events {
		if ev.Type == api.EventVersionCreated {
			k := fmt.Sprintf("%s@%d", ev.ID, ev.Version)
			seqOf[k] = append(seqOf[k], ev.Seq)
		}
	}
	for _, k := range []string{"t@1", "t@2", "t@3", "t@4", "u@1"} {
		if len(seqOf[k]) != 1 {
			t.Errorf("%s has events at sequences %v, want one", k, seqOf[k])
		}
	}
	if len(seqOf["t@3"]) == 1 && len(seqOf["u@1"]) == 1 && seqOf["t@3"][0] != seqOf["u@1"][0] {
		t.Errorf("a transaction's members t@3 and u@1 have events at sequences %d and %d, want one", seqOf["t@3"][0], seqOf["u@1"][0])
	}
}

// Version rows alone linger in the log (their manifests are durable
// already) until the linger ends, a catalog change arrives, or someone
// waits for them. The linger is asserted once the materializer has read
// the row and chosen to wait (the lingering seam), not after a sleep.
func TestVersionRowsLingerUntilSomeoneWaits(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	lingering := make(chan uint64, 64) // the last sequence of each backlog held back
	tb := e.open(func(c *Config) {
		c.VersionLinger = time.Hour
		c.lingering = func(_, last uint64) {
			select {
			case lingering <- last:
			default:
			}
		}
	})
	defer func() { _ = tb.Close() }()
	commit(t, tb, put(Row{ObjectType: TypeTable, ObjectID: "ns$t", Location: "aa_ns$t"}))
	cs := e.claims(tb)

	// The materializer reads the lone version row and holds it back; only
	// then is its absence from the SQL engine the linger's doing.
	l := e.stageAndPut(cs, "aa_ns$t", 1)
	awaitLinger(t, lingering, l.Seq, tb)
	if v := tb.Visible(); v >= l.Seq {
		t.Fatalf("a lone version row was materialized at once (visible %d, its sequence %d)", v, l.Seq)
	}
	// Someone waiting ends the linger.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tb.WaitCaughtUp(wctx); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, tb, `SELECT version FROM table_versions`); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("after WaitCaughtUp: %v", got)
	}

	// Someone waiting in another process (a follower here) ends it too: its
	// follower asks the leader through Redis. Without that, this waits an
	// hour.
	replica := e.open(func(c *Config) { c.ReadOnly = true })
	defer func() { _ = replica.Close() }()
	l = e.stageAndPut(cs, "aa_ns$t", 2)
	awaitLinger(t, lingering, l.Seq, tb)
	if err := replica.WaitCaughtUp(wctx); err != nil {
		t.Fatalf("a follower waiting for a lingering version row: %v", err)
	}
	if got := rowsOf(t, replica, `SELECT version FROM table_versions ORDER BY 1`); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("the follower after WaitCaughtUp: %v", got)
	}

	// A catalog change behind a lingering version row ends the linger.
	l = e.stageAndPut(cs, "aa_ns$t", 3)
	seq := commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "ns"}))
	if seq < l.Seq {
		t.Fatalf("sequences out of order: %d < %d", seq, l.Seq)
	}
	if got := rowsOf(t, tb, `SELECT version FROM table_versions ORDER BY 1`); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("after a catalog change: %v", got)
	}
}

// awaitLinger returns once the materializer of tb has chosen to hold back
// a backlog reaching sequence seq.
func awaitLinger(t *testing.T, lingering <-chan uint64, seq uint64, tb *Table) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case last := <-lingering:
			if last >= seq {
				return
			}
		case <-deadline:
			t.Fatalf("the materializer never lingered over the version row at sequence %d (visible %d)", seq, tb.Visible())
		}
	}
}

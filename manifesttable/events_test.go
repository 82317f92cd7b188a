package manifesttable

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// Compaction keeps the change feed's history for its window: segments a
// snapshot covers stay while younger than Config.EventHistory, and the
// history reads from the first sequence; once they go, asking for what
// they held is an InvalidInput error naming the oldest sequence kept.
func TestCompactionKeepsTheChangeFeedsHistoryForItsWindow(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	now := time.Now()
	clock := func() time.Time { return now }
	tb := e.open(func(c *Config) { c.KeepSnapshots, c.Now = 1, func() time.Time { return clock() } })
	defer func() { _ = tb.Close() }()
	for _, c := range sampleChanges() {
		commit(t, tb, c)
	}
	segs, _ := e.objs.ListAll(ctx, logPrefix)
	if err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if kept, _ := e.objs.ListAll(ctx, logPrefix); len(kept) != len(segs) {
		t.Fatalf("compaction inside the window removed segments: %d of %d kept", len(kept), len(segs))
	}
	if _, through, err := tb.Events(ctx, 0, 0); err != nil || through < uint64(len(segs)) {
		t.Fatalf("history from the start: through %d, %v", through, err)
	}
	// A week and a day later a compaction removes what the snapshot covers.
	later := now.Add(DefaultEventHistory + 24*time.Hour)
	clock = func() time.Time { return later }
	commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "late"}))
	if err := tb.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, err := tb.Events(ctx, 0, 0)
	if !errors.Is(err, nserror.ErrInvalidInput) || !strings.Contains(err.Error(), "keeps history from sequence") {
		t.Fatalf("history older than the window: %v", err)
	}
}

// One Events call reads a bounded number of segments; resuming after its
// through goes on from there until the newest, each sequence once.
func TestEventsReadsABoundedStretchAndResumes(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	var last uint64
	for i := range eventSegments + 6 {
		last = commit(t, tb, put(Row{ObjectType: TypeNamespace, ObjectID: "n" + strings.Repeat("x", i)}))
	}
	calls := 0
	for after := uint64(0); after < last; calls++ {
		_, through, err := tb.Events(ctx, after, 0)
		if err != nil || through <= after {
			t.Fatalf("after %d: through %d, %v", after, through, err)
		}
		after = through
	}
	if calls < 2 {
		t.Fatalf("%d segments read in %d call(s): the bound of %d does not hold", eventSegments+6, calls, eventSegments)
	}
}

// A follower gets the feed's memory a bounded batch at a time, whole
// sequences only, and reading on after each batch's through gives every
// event once, in order.
func TestTheFeedHandsOutBoundedBatchesOfWholeSequences(t *testing.T) {
	var f feed
	var all []api.Event
	for seq := uint64(1); seq <= 1500; seq++ {
		for range 2 { // two events a sequence
			all = append(all, api.Event{Seq: seq})
		}
	}
	f.publish(all, 1, 1500)
	var got []api.Event
	for after := uint64(0); after < 1500; {
		evs, through, covered, _ := f.since(after)
		if !covered || len(evs) > followBatch+1 || through <= after || evs[len(evs)-1].Seq != through {
			t.Fatalf("after %d: %d events through %d (covered %v)", after, len(evs), through, covered)
		}
		got = append(got, evs...)
		after = through
	}
	if len(got) != len(all) {
		t.Fatalf("%d events handed out, want %d", len(got), len(all))
	}
	for i := range got {
		if got[i].Seq != all[i].Seq {
			t.Fatalf("event %d: seq %d, want %d", i, got[i].Seq, all[i].Seq)
		}
	}
}

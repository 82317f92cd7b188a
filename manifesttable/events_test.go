package manifesttable

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// The feed keeps at most feedKeep events in memory and about half of
// them at least once it has had that many (the cut moves on to a
// sequence's first event), always whole sequences from `from`
// through `through`; the events a follower was handed never change.
func TestTheFeedKeepsABoundedWindowOfWholeSequences(t *testing.T) {
	var f feed
	var seq uint64
	var held []api.Event // a follower's batch, from early on
	var heldCopy []api.Event
	for published := 0; published < 5*feedKeep; {
		var evs []api.Event
		first := seq + 1
		for range 100 {
			seq++
			for k := range 1 + int(seq%3) { // 1 to 3 events a sequence
				evs = append(evs, api.Event{Seq: seq, Type: fmt.Sprint(k)})
			}
		}
		f.publish(evs, first, seq)
		published += len(evs)
		if n := len(f.recent); n > feedKeep || (published >= feedKeep && n < feedKeep/2-2) {
			t.Fatalf("after %d events published the feed keeps %d (want %d to %d)", published, n, feedKeep/2-2, feedKeep)
		}
		if f.recent[0].Seq != f.from || f.recent[len(f.recent)-1].Seq != f.through || f.through != seq {
			t.Fatalf("the feed keeps %d..%d as from %d through %d, published through %d", f.recent[0].Seq, f.recent[len(f.recent)-1].Seq, f.from, f.through, seq)
		}
		if f.from > 1 {
			if _, _, covered, _ := f.since(f.from - 2); covered {
				t.Fatalf("since %d is covered though the feed starts at %d", f.from-2, f.from)
			}
		}
		got, _, covered, _ := f.since(f.from - 1)
		if !covered || got[0].Seq != f.from || got[0].Type != "0" {
			t.Fatalf("since %d: covered %v, first %+v; want sequence %d's first event", f.from-1, covered, got[0], f.from)
		}
		if held == nil && published > feedKeep/4 {
			held, _, _, _ = f.since(f.from - 1)
			heldCopy = slices.Clone(held)
		}
	}
	if !slices.EqualFunc(held, heldCopy, func(a, b api.Event) bool { return a.Seq == b.Seq && a.Type == b.Type }) {
		t.Fatal("a batch handed to a follower changed as the feed went on")
	}
}

// BenchmarkFeedPublish is one segment's 20 events published to a feed
// that has filled its window before.
func BenchmarkFeedPublish(b *testing.B) {
	var f feed
	var seq uint64
	batch := func() ([]api.Event, uint64) {
		evs := make([]api.Event, 20)
		first := seq + 1
		for i := range evs {
			seq++
			evs[i] = api.Event{Seq: seq}
		}
		return evs, first
	}
	for seq < 2*feedKeep { // past the first cut
		evs, first := batch()
		f.publish(evs, first, seq)
	}
	b.ReportAllocs()
	for b.Loop() {
		evs, first := batch()
		f.publish(evs, first, seq)
	}
}

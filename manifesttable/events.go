package manifesttable

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// DefaultEventHistory is how long the change feed keeps its history by
// default (Config.EventHistory).
const DefaultEventHistory = 7 * 24 * time.Hour

// Events is the change feed's history after sequence after, in sequence
// order, as the segments in storage hold it: every event of a durable
// change, and none of a change that did not commit (an event is written
// by the same script as its change, and a segment holds the commit log
// alone). It returns at most about limit events (0: no bound; the events
// of one sequence are never split) and through, the sequence up to which
// the history was read: resuming after through misses nothing and repeats
// nothing. One call reads at most eventSegments segments (a week of
// history is thousands): the caller resumes after through for more.
// History the compaction removed (segments older than the snapshots
// kept) is an InvalidInput error naming the oldest sequence still kept.
func (t *Table) Events(ctx context.Context, after uint64, limit int) (events []api.Event, through uint64, err error) {
	firsts, err := t.st.listSeqs(ctx, logPrefix)
	if err != nil {
		return nil, after, err
	}
	oldest := uint64(1) // the first sequence the history holds
	if len(firsts) > 0 {
		oldest = firsts[0]
	} else {
		// No segment: what a snapshot covers is gone, the history starts
		// after it.
		snaps, err := t.st.listSeqs(ctx, snapshotPrefix)
		if err != nil {
			return nil, after, err
		}
		if len(snaps) > 0 {
			oldest = snaps[len(snaps)-1] + 1
		}
	}
	if oldest > after+1 {
		return nil, after, nserror.New(nserror.InvalidInput,
			"the change feed keeps history from sequence %d: sequence %d is no longer kept", oldest, after+1)
	}
	if len(firsts) == 0 {
		return nil, after, nil
	}
	// The segment holding after+1, and the ones after it.
	i, found := slices.BinarySearch(firsts, after+1)
	if !found {
		i--
	}
	through = after
	for _, first := range firsts[i:min(len(firsts), i+eventSegments)] {
		seg, err := t.st.readSegment(ctx, first)
		if err != nil {
			return nil, through, err
		}
		if through > after && seg.First != through+1 {
			return nil, through, nserror.New(nserror.Internal, "manifesttable: the segments have a hole after sequence %d (the next starts at %d)", through, seg.First)
		}
		for _, ev := range seg.Events {
			if ev.Seq <= after {
				continue
			}
			if limit > 0 && len(events) >= limit && ev.Seq != events[len(events)-1].Seq {
				return events, events[len(events)-1].Seq, nil
			}
			events = append(events, ev)
		}
		through = max(through, seg.Last)
	}
	return events, through, nil
}

// eventSegments bounds the segments one Events call reads.
const eventSegments = 64

// followBatch bounds the events one call of a follower's function gets
// (and the history one call of Events reads for it).
const followBatch = 1024

// feedKeep bounds the events a process keeps in memory for its
// followers; a follower further behind reads storage. Past it, the
// oldest are let go down to half of it (whole sequences), so that what
// is kept is copied once per half a feedKeep of events published, not at
// every publication.
const feedKeep = 1 << 16

// feed is the change feed as this process applies segments: the events
// of every sequence from through back to from (none of a sequence in that
// range is missing), and a channel closed, and replaced, at each segment
// applied, for followers to wait on.
type feed struct {
	sync.Mutex
	recent        []api.Event
	from, through uint64
	changed       chan struct{}
}

// publish adds the events of an applied segment (sequences first..last).
func (f *feed) publish(events []api.Event, first, last uint64) {
	f.Lock()
	defer f.Unlock()
	if f.from == 0 || first != f.through+1 {
		f.recent, f.from = nil, first
	}
	f.recent = append(f.recent, events...)
	f.through = last
	if len(f.recent) > feedKeep {
		// Whole sequences only: the cut moves on to a sequence's first
		// event, and from to the first sequence kept. The kept events go
		// to a new array (followers hold slices of the old one) with room
		// to grow to feedKeep.
		n := len(f.recent) - feedKeep/2
		for n < len(f.recent) && f.recent[n].Seq == f.recent[n-1].Seq {
			n++
		}
		kept := make([]api.Event, len(f.recent)-n, feedKeep)
		copy(kept, f.recent[n:])
		f.recent = kept
		f.from = f.through + 1
		if len(f.recent) > 0 {
			f.from = f.recent[0].Seq
		}
	}
	if f.changed != nil {
		close(f.changed)
	}
	f.changed = make(chan struct{})
}

// since returns the events after after that the feed holds, at most
// about followBatch of them (whole sequences), the sequence they run
// through, and whether it covers after+1 at all; wait is closed when the
// feed next changes. The events are the feed's own, shared by every
// follower and never changed (publish appends past them or starts a new
// array; the slice's capacity ends with it): a follower copies nothing
// and must change nothing.
func (f *feed) since(after uint64) (events []api.Event, through uint64, covered bool, wait <-chan struct{}) {
	f.Lock()
	defer f.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	if f.from == 0 || after+1 < f.from {
		return nil, 0, false, f.changed
	}
	i, _ := slices.BinarySearchFunc(f.recent, after+1, func(e api.Event, seq uint64) int { return cmp.Compare(e.Seq, seq) })
	if j := i + followBatch; j < len(f.recent) {
		for j < len(f.recent) && f.recent[j].Seq == f.recent[j-1].Seq {
			j++ // the last sequence whole
		}
		if j < len(f.recent) {
			return f.recent[i:j:j], f.recent[j-1].Seq, true, f.changed
		}
	}
	return f.recent[i:len(f.recent):len(f.recent)], f.through, true, f.changed
}

// Follow calls fn with the change feed's events after sequence after, in
// order (fn must not change them: they may be shared with other
// followers), and keeps calling it as changes become durable, until ctx ends
// (its error) or fn returns an error (that error). Each call ends at a
// whole sequence, through (events may be empty while through moves on);
// resuming after the last through misses nothing and repeats nothing.
// History comes from storage (Events), what this process applies from
// memory; a follower that falls behind the memory reads storage again. A
// slow fn holds nothing the commit path waits for.
func (t *Table) Follow(ctx context.Context, after uint64, fn func(events []api.Event, through uint64) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		events, through, covered, wait := t.feed.since(after)
		if !covered {
			var err error
			if events, through, err = t.Events(ctx, after, followBatch); err != nil {
				return err
			}
		}
		if through > after {
			if err := fn(events, through); err != nil {
				return err
			}
			after = through
			continue // more history, or more of the memory, may follow
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait:
		}
	}
}

package manifesttable

import (
	"context"
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
// nothing. History the compaction removed (segments older than the
// snapshots kept) is an InvalidInput error naming the oldest sequence
// still kept.
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
	// The segment holding after+1, and every one after it.
	i := len(firsts) - 1
	for i > 0 && firsts[i] > after+1 {
		i--
	}
	through = after
	for _, first := range firsts[i:] {
		seg, err := t.st.readSegment(ctx, first)
		if err != nil {
			return nil, through, err
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

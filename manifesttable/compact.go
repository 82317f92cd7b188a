package manifesttable

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Compact writes a snapshot of the table at its newest durable sequence,
// built from this process's index (never from the SQL engine), then removes the snapshots beyond the KeepSnapshots newest and the
// segments they all cover. A crash anywhere leaves a loadable table: the
// snapshot is written create-only before anything is removed.
func (t *Table) Compact(ctx context.Context) error {
	t.compacting.Lock()
	defer t.compacting.Unlock()
	return t.compact(ctx)
}

func (t *Table) compact(ctx context.Context) error {
	t.idx.RLock()
	f := t.idx.rows.freeze()
	t.idx.RUnlock()
	if f.seq == 0 {
		return nil
	}
	schema := Schema(f.extra, f.raw, false)
	next := func() (arrow.RecordBatch, error) {
		rows := f.next(rowGroupRows)
		if len(rows) == 0 {
			return nil, nil
		}
		return buildRecord(schema, rows, nil), nil
	}
	if err := t.st.writeSnapshot(ctx, f.seq, schema, next); err != nil {
		return fmt.Errorf("manifesttable: writing snapshot %d: %w", f.seq, err)
	}
	t.applied.Lock()
	t.applied.snapshot, t.applied.sinceSnap = f.seq, 0
	t.applied.Unlock()
	return t.prune(ctx)
}

// prune removes old snapshots and the segments that every kept snapshot
// covers.
func (t *Table) prune(ctx context.Context) error {
	snaps, err := t.st.listSeqs(ctx, snapshotPrefix)
	if err != nil {
		return err
	}
	if len(snaps) == 0 {
		return nil
	}
	keep := snaps
	if len(keep) > t.cfg.KeepSnapshots {
		keep = keep[len(keep)-t.cfg.KeepSnapshots:]
	}
	oldest := keep[0]
	for _, s := range snaps[:len(snaps)-len(keep)] {
		if err := t.cfg.Objects.Delete(ctx, snapshotKey(s)); err != nil {
			return err
		}
	}
	firsts, written, err := t.st.listSegments(ctx)
	if err != nil {
		return err
	}
	// The change feed's history (Events) is the segments: they go, oldest
	// first so that what stays is contiguous, once older than its window.
	keepFrom := t.cfg.Now().Add(-t.cfg.EventHistory)
	for i, f := range firsts {
		if written[i].After(keepFrom) {
			break
		}
		// A segment is covered when the next one starts at or below the
		// oldest kept snapshot's sequence + 1 (the last one: when it ends
		// there).
		if f > oldest {
			break
		}
		if i+1 < len(firsts) && firsts[i+1] > oldest+1 {
			break
		}
		if i+1 == len(firsts) {
			seg, err := t.st.readSegment(ctx, f)
			if err != nil || seg.Last > oldest {
				break
			}
		}
		if err := t.cfg.Objects.Delete(ctx, segmentKey(f)); err != nil {
			return err
		}
	}
	if t.eng == nil {
		return nil
	}
	return t.eng.purgeHistory(oldest)
}

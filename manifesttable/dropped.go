package manifesttable

import (
	"context"
	"strings"
	"time"

	"github.com/flightns/flightns/internal/sqlengine"
)

// The `dropped` view lists what drops kept recoverable (TrashPrefix),
// one row per dropped object: which drop, the dropped id and type (the
// table, or the namespace a cascade dropped with all it held), the
// object, its location and properties, and when. The records are not
// part of the commit log, so the engine's `_dropped` table is refreshed
// from storage by its own goroutine, off the commit path: at Open, after
// every applied segment that removes a namespace or a table (a drop
// writes its record before its segment), when RefreshDropped asks (the
// process that undid a drop or purged records), and every
// droppedRefreshEvery (other processes learn of those that way). A
// catalog change that drops nothing reads nothing of the records.

// droppedRefreshEvery bounds how stale the dropped view is.
const droppedRefreshEvery = 30 * time.Second

// droppedDDL creates the engine's table behind the dropped view.
const droppedDDL = `CREATE TABLE _dropped (drop_id VARCHAR NOT NULL, dropped_id VARCHAR NOT NULL, dropped_type VARCHAR NOT NULL, ` +
	`object_id VARCHAR NOT NULL, object_type VARCHAR NOT NULL, location VARCHAR, metadata VARCHAR, dropped_at TIMESTAMPTZ NOT NULL)`

// droppedRefresher keeps _dropped current until the table closes.
func (t *Table) droppedRefresher() {
	defer t.runDone.Done()
	tick := time.NewTicker(droppedRefreshEvery)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), droppedRefreshEvery)
		if err := t.refreshDropped(ctx); err != nil {
			t.log.Warn("manifesttable: refreshing the dropped view", "err", err)
		}
		cancel()
		select {
		case <-t.stop:
			return
		case <-t.droppedNow:
		case <-tick.C:
		}
	}
}

// refreshDropped replaces _dropped with the records in storage, in one
// transaction: a query sees the old rows or the new ones.
func (t *Table) refreshDropped(ctx context.Context) error {
	all, err := ListTrash(ctx, t.st.objs)
	if err != nil {
		return err
	}
	return t.eng.db.Write(func(w *sqlengine.Writer) error {
		if err := w.Exec("BEGIN TRANSACTION"); err != nil {
			return err
		}
		err := w.Exec("DELETE FROM _dropped")
		for _, tr := range all {
			rows, _ := tr.Objects() // ListTrash keeps only records whose rows decode
			for _, r := range rows {
				if err != nil {
					break
				}
				err = w.Exec("INSERT INTO _dropped VALUES (?, ?, ?, ?, ?, ?, ?, ?)", tr.DropID, strings.Join(tr.ID, IDSeparator), tr.Type,
					r.ObjectID, r.ObjectType, r.Location, r.Metadata, tr.DroppedAt.UTC())
			}
		}
		if err != nil {
			_ = w.Exec("ROLLBACK")
			return err
		}
		return w.Exec("COMMIT")
	})
}

// RefreshDropped has the dropped view read the records again soon (the
// caller changed them: an undone drop, a purge).
func (t *Table) RefreshDropped() {
	select {
	case t.droppedNow <- struct{}{}:
	default:
	}
}

// dropsIn reports whether seg removes a namespace or a table.
func dropsIn(seg *segment) bool {
	for _, c := range seg.Changes {
		if c.del && (c.row.ObjectType == TypeNamespace || c.row.ObjectType == TypeTable) {
			return true
		}
	}
	return false
}

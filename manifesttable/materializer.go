package manifesttable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/objstore"
)

// run is the table's background loop: the lease holder materializes the
// commit log; every other process follows the segments it writes.
func (t *Table) run() {
	defer t.runDone.Done()
	ctx, cancel := t.untilClosed()
	defer cancel()
	backoff := 10 * time.Millisecond
	for ctx.Err() == nil {
		var err error
		if !t.cfg.ReadOnly && t.lead(ctx) {
			err = t.materializeOnce(ctx)
		} else {
			err = t.follow(ctx)
		}
		if err != nil && ctx.Err() == nil {
			t.log.Warn("manifesttable: materializer", "catalog", t.cfg.Catalog, "err", err)
			t.noteStall(err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		t.noteStall(nil)
		backoff = 10 * time.Millisecond
	}
}

// noteStall records whether the last round of the materializer (or the
// follower) failed, and since when it has been failing.
func (t *Table) noteStall(err error) {
	t.stall.Lock()
	defer t.stall.Unlock()
	switch {
	case err == nil:
		t.stall.err, t.stall.since = nil, time.Time{}
	case t.stall.err == nil:
		t.stall.err, t.stall.since = err, time.Now()
	default:
		t.stall.err = err
	}
}

// Stalled reports why __manifest cannot make progress here: the
// materializer (or, in a follower, the reading of segments) has failed
// every round for at least d. A full disk, a store refusing writes or a
// broken segment make it so; the first round that succeeds ends it.
func (t *Table) Stalled(d time.Duration) (string, bool) {
	t.stall.Lock()
	defer t.stall.Unlock()
	if t.stall.err == nil || time.Since(t.stall.since) < d {
		return "", false
	}
	return fmt.Sprintf("__manifest has made no progress for %s: %v", time.Since(t.stall.since).Round(time.Second), t.stall.err), true
}

// LeaseTime is how long the materializer lease outlives its holder's last
// renewal (renewed every third of it): a killed holder's successor takes
// over within it. Two holders at once cost only a lost race (segments
// are create-only), so it is short.
const LeaseTime = 4 * time.Second

// lead takes or renews the lease; it reports whether this process holds it.
// A lease renewed less than a third of its time ago is not renewed again.
func (t *Table) lead(ctx context.Context) bool {
	t.lease.Lock()
	fresh := t.lease.leading && time.Since(t.lease.renewed) < LeaseTime/3
	t.lease.Unlock()
	if fresh {
		return true
	}
	start := time.Now()
	ok, err := t.rs.TakeLease(ctx, t.lease.token, LeaseTime)
	held := err == nil && ok || t.cfg.ignoreLease
	t.lease.Lock()
	if held && !t.lease.leading {
		t.log.Info("manifesttable: this process materializes the commit log", "catalog", t.cfg.Catalog)
		// Another leader may have written segments meanwhile.
		t.lease.Unlock()
		if err := t.catchUp(ctx); err != nil {
			return false
		}
		t.lease.Lock()
	}
	lost := t.lease.leading && !held
	t.lease.leading = held
	if held {
		t.lease.renewed = start
	}
	t.lease.Unlock()
	if lost {
		t.recent.clear()
	}
	return held
}

func (t *Table) releaseLease(ctx context.Context) {
	_, _ = t.rs.ReleaseLeaseOf(ctx, t.keys.Lease(), t.lease.token)
}

// follow waits briefly for the leader's next segment and applies it. It
// first passes on what someone here waits for (Flush) to the leader,
// which would otherwise let version rows linger. It polls every
// followMin while segments come or someone waits, and backs off to
// followMax while the catalog is idle; a Flush wakes it at once.
func (t *Table) follow(ctx context.Context) error {
	timer := time.NewTimer(t.followWait)
	select {
	case <-ctx.Done():
		timer.Stop()
		return nil
	case <-timer.C:
	case <-t.flushNow:
		timer.Stop()
	}
	t.applied.Lock()
	durable := t.applied.durable
	t.applied.Unlock()
	want := t.flushTo.Load()
	t.followWait = min(2*max(t.followWait, followMin), followMax)
	if want > durable {
		t.followWait = followMin
	}
	if want > durable && want > t.askedFlush {
		if err := t.rs.RequestFlush(ctx, want); err != nil {
			return err
		}
		t.askedFlush = want
	}
	v, err := t.rs.DurableSeq(ctx)
	if err != nil {
		return err
	}
	behind := v > durable
	if !behind {
		return nil
	}
	t.followWait = followMin
	if err := t.catchUpTo(ctx, v); err != nil {
		return err
	}
	return t.forgetLikeTheLeader(ctx)
}

// forgetLikeTheLeader purges the SQL engine's history of a follower as
// the leader's compaction does its own: once as many segments as the
// leader compacts after have arrived, history older than the oldest
// snapshot kept in storage goes (time travel reaches back as far as on
// the leader).
func (t *Table) forgetLikeTheLeader(ctx context.Context) error {
	t.applied.Lock()
	due := t.eng != nil && t.cfg.CompactAfter > 0 && t.applied.sinceSnap >= t.cfg.CompactAfter
	if due {
		t.applied.sinceSnap = 0
	}
	t.applied.Unlock()
	if !due {
		return nil
	}
	snaps, err := t.st.listSeqs(ctx, snapshotPrefix)
	if err != nil || len(snaps) < t.cfg.KeepSnapshots {
		return err
	}
	return t.eng.purgeHistory(snaps[len(snaps)-t.cfg.KeepSnapshots])
}

// logEntry is one entry of the commit log.
type logEntry struct {
	id     string // the stream entry's id, <seq>-<i>
	seq    uint64
	fields map[string]any
}

func (e logEntry) str(k string) string { s, _ := e.fields[k].(string); return s }

// untilClosed is a context that ends when the table closes (or cancel is
// called), for the table's background goroutines.
func (t *Table) untilClosed() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// materializeOnce turns what is new in the log into one segment.
func (t *Table) materializeOnce(ctx context.Context) error {
	t.republish(ctx)
	t.applied.Lock()
	cursor := t.applied.durable
	t.applied.Unlock()
	entries, full, lastID, err := t.readLog(ctx, cursor)
	if err != nil || len(entries) == 0 {
		return err
	}
	if !full && t.linger(ctx, entries) {
		return nil // read again, with what came meanwhile
	}
	if full {
		if entries, err = t.wholeSequences(ctx, entries, lastID); err != nil {
			return err
		}
	}
	entries, settled, held, err := t.settleUnproven(ctx, entries)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		if held {
			select { // until the claim's writer flips it, or holdAt settles it
			case <-ctx.Done():
			case <-time.After(2 * time.Millisecond):
			}
		}
		return nil
	}
	seg := &segment{First: cursor + 1, Last: entries[len(entries)-1].seq}
	if entries[0].seq > cursor+1 {
		if ok, err := t.rederiveGap(ctx, seg, cursor, entries[0]); !ok || err != nil {
			return err // not as read any more: read again
		}
	}
	changes, events, err := t.translate(ctx, entries, seg.Changes, settled)
	if err != nil {
		return err
	}
	seg.Changes = append(seg.Changes, changes...)
	seg.Events = append(seg.Events, events...)
	if !t.lead(ctx) {
		return nil
	}
	if ok, err := t.onAReplica(ctx, cursor, entries); !ok || err != nil {
		return err // not as read any more: read again
	}
	start := time.Now()
	err = t.st.writeSegment(ctx, seg)
	if err == nil && t.cfg.Observer != nil && t.cfg.Observer.Segment != nil {
		t.cfg.Observer.Segment(sequences(entries), time.Since(start))
	}
	if errors.Is(err, errSegmentExists) {
		// Another materializer was first with these sequences.
		return t.catchUp(ctx)
	}
	if err != nil {
		return err
	}
	t.noteStall(nil) // progress: before anyone learns the segment is durable
	t.applied.Lock()
	err = t.acceptLocked(seg)
	since := t.applied.sinceSnap
	t.applied.Unlock()
	if err != nil {
		return err
	}
	t.publishDurable(ctx, seg.Last)
	t.noteVersions(seg)
	if t.cfg.CompactAfter > 0 && since >= t.cfg.CompactAfter && t.compacting.TryLock() {
		go func() {
			defer t.compacting.Unlock()
			if err := t.compact(context.WithoutCancel(ctx)); err != nil {
				t.log.Warn("manifesttable: compaction", "catalog", t.cfg.Catalog, "err", err)
			}
		}()
	}
	return nil
}

// readLog reads the commit log's entries past cursor, at most a segment's
// worth: full says the read hit that bound, lastID is the id of the last
// entry read.
func (t *Table) readLog(ctx context.Context, cursor uint64) (entries []logEntry, full bool, lastID string, err error) {
	msgs, err := t.rs.ReadLog(ctx, cursor, t.cfg.MaxSegmentEntries, 20*time.Millisecond)
	if err != nil || len(msgs) == 0 {
		return nil, false, "", err
	}
	for _, m := range msgs {
		seq, err := m.Seq()
		if err != nil {
			return nil, false, "", fmt.Errorf("manifesttable: log entry id %q: %w", m.ID, err)
		}
		if seq <= cursor {
			continue // already durable
		}
		entries = append(entries, logEntry{id: m.ID, seq: seq, fields: m.Values})
	}
	return entries, len(msgs) == t.cfg.MaxSegmentEntries, msgs[len(msgs)-1].ID, nil
}

// wholeSequences makes a full read end at a sequence's end: entries of
// the last sequence might continue past the read's bound. A batch never
// ends inside one sequence, so those are left for the next segment; a
// batch of one sequence is read to its end, however long (one Append or
// one cascade may log more entries than a segment usually holds; a
// segment must hold them all).
func (t *Table) wholeSequences(ctx context.Context, entries []logEntry, lastID string) ([]logEntry, error) {
	last := entries[len(entries)-1].seq
	if entries[0].seq != last {
		for len(entries) > 0 && entries[len(entries)-1].seq == last {
			entries = entries[:len(entries)-1]
		}
		return entries, nil
	}
	rest, err := t.restOfSequence(ctx, lastID, last)
	if err != nil {
		return nil, err
	}
	return append(entries, rest...), nil
}

// onAReplica reports whether entries, read past cursor, are on a Redis
// replica as they were read: they are read again, followed by the
// replicas' fence and WAIT on one connection. A segment holds only such
// entries: a failover to a replica without them would give their
// sequences to other changes, which a segment already holding these
// would hide. false (no error) when the log changed meanwhile (Redis
// changed hands): the caller reads it again.
func (t *Table) onAReplica(ctx context.Context, cursor uint64, entries []logEntry) (bool, error) {
	msgs, sent, err := t.rs.ConfirmedLogRange(ctx, t.replicas, cursor, entries[len(entries)-1].id, len(entries)+1)
	if err != nil || !sent {
		return err == nil, err
	}
	if len(msgs) != len(entries) {
		return false, nil
	}
	for i, m := range msgs {
		if m.ID != entries[i].id || !reflect.DeepEqual(m.Values, entries[i].fields) {
			return false, nil
		}
	}
	return true, nil
}

// rederiveGap handles sequences missing from the log (cursor, first):
// Redis lost them (or trimmed them unread). What they committed is
// re-derived from storage into seg. Before a catalog's first segment the
// jump is only its first epoch's start: nothing to warn of, though
// storage is still read. The change feed gets what was re-derived as events of the
// gap's first sequence (seg.Events, before the segment's own): a version
// acknowledged before its log entry reached a segment has its event
// still, and the gap itself is an event (EventSequencesLost, for readers
// of the whole catalog: it names no object). false (no error) when the
// log lost first meanwhile (Redis lost its state again): the caller reads
// it again.
func (t *Table) rederiveGap(ctx context.Context, seg *segment, cursor uint64, first logEntry) (bool, error) {
	to := first.seq - 1
	lv := slog.LevelWarn
	if cursor == 0 {
		lv = slog.LevelDebug
	}
	t.log.Log(ctx, lv, "manifesttable: the commit log has a gap; re-deriving version rows from storage",
		"catalog", t.cfg.Catalog, "from", cursor+1, "to", to)
	repaired, err := t.reconcile(ctx, cursor+1)
	if err != nil {
		return false, err
	}
	if f := t.cfg.gapListed; f != nil {
		f()
	}
	// A version storage holds and the log has after the gap (claimed
	// since, and listed above) is left to its own entry, with its
	// transaction and sequence: read after the listing, the log holds
	// every such version's entry — unless Redis lost its state again
	// since the listing (first is gone then): a version of a new epoch
	// listed would be taken for one of this gap, and its transaction's
	// other members, final after the listing, left to the next gap.
	logged, still, err := t.loggedVersions(ctx, to, first.id)
	if err != nil || !still {
		return false, err
	}
	repaired = slices.DeleteFunc(repaired, func(c change) bool {
		return !c.del && logged[verAt{verKey(c.row.ObjectID, c.row.Branch), c.row.TableVersion}]
	})
	seg.Changes = append(seg.Changes, repaired...)
	seg.LostFirst, seg.LostLast = cursor+1, to
	if cursor > 0 {
		seg.Events = append(seg.Events, api.Event{Seq: cursor + 1, Time: t.cfg.Now().UTC(), Type: api.EventSequencesLost, LostThrough: to})
	}
	seg.Events = append(seg.Events, t.rederivedEvents(cursor+1, repaired)...)
	return true, nil
}

// loggedVersions are the table versions the commit log holds past
// sequence after, by chain (as the index keys them) and version; has
// says whether the log still holds the entry firstID.
func (t *Table) loggedVersions(ctx context.Context, after uint64, firstID string) (out map[verAt]bool, has bool, err error) {
	tr := &translator{t: t, overlay: map[string]string{}}
	out = map[verAt]bool{}
	err = t.eachLogEntry(ctx, fmt.Sprintf("%d-%d", after, uint64(math.MaxUint64)), "+", func(m redisstate.LogMessage) {
		has = has || m.ID == firstID
		e := logEntry{id: m.ID, fields: m.Values}
		if e.str(commitlog.KindField) != commitlog.Version {
			return
		}
		v, err := strconv.ParseUint(e.str("v"), 10, 64)
		if err != nil {
			return // the translation says so
		}
		id, branch := tr.chainOf(e.str("t"))
		out[verAt{verKey(id, branch), v}] = true
	})
	return out, has, err
}

// eachLogEntry calls fn with every commit log entry after the entry id
// after up to end (an entry id, or "+": the last), in order, reading
// MaxSegmentEntries at a time.
func (t *Table) eachLogEntry(ctx context.Context, after, end string, fn func(redisstate.LogMessage)) error {
	for {
		msgs, err := t.rs.LogRange(ctx, "("+after, end, t.cfg.MaxSegmentEntries)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			fn(m)
		}
		if len(msgs) < t.cfg.MaxSegmentEntries {
			return nil
		}
		after = msgs[len(msgs)-1].ID
	}
}

// rederivedEvents are the events of versions reconcile re-derived (at
// sequence seq): each version found, and each chain's versions gone.
func (t *Table) rederivedEvents(seq uint64, repaired []change) []api.Event {
	var out []api.Event
	gone := map[[2]string]int{} // chain -> its event in out
	for _, c := range repaired {
		r := c.row
		if r.ObjectType != TypeTableVersion {
			continue
		}
		if !c.del {
			ev := api.Event{Seq: seq, Time: r.CommittedAt.UTC(), Type: api.EventVersionCreated, Branch: r.Branch, Version: r.TableVersion,
				ManifestPath: r.ManifestPath, ManifestSize: int64(r.ManifestSize)}
			t.eventOf(&ev, r.ObjectID)
			out = append(out, ev)
			continue
		}
		k := [2]string{r.ObjectID, r.Branch}
		i, ok := gone[k]
		if !ok {
			i, gone[k] = len(out), len(out)
			ev := api.Event{Seq: seq, Time: t.cfg.Now().UTC(), Type: api.EventVersionsDeleted, Branch: r.Branch}
			t.eventOf(&ev, r.ObjectID)
			out = append(out, ev)
		}
		out[i].Versions = append(out[i].Versions, r.TableVersion)
	}
	return out
}

// eventOf names the object of ev, a version of chain id (nameEvent).
func (t *Table) eventOf(ev *api.Event, id string) {
	_, table := t.Object(TypeTable, id)
	nameEvent(ev, id, table)
}

// nameEvent names the object of ev, an event of chain id: the table id
// when id is a table's, else (a chain of a directory no table has) its
// location.
func nameEvent(ev *api.Event, id string, table bool) {
	if table {
		if parsed, err := api.ParseID(id, api.Delimiter); err == nil {
			ev.ID = parsed
			return
		}
	}
	ev.Location = id
}

// restOfSequence reads the entries of sequence seq after the entry id
// after, to the sequence's end.
func (t *Table) restOfSequence(ctx context.Context, after string, seq uint64) ([]logEntry, error) {
	var out []logEntry
	err := t.eachLogEntry(ctx, after, fmt.Sprintf("%d-%d", seq, uint64(math.MaxUint64)), func(m redisstate.LogMessage) {
		out = append(out, logEntry{id: m.ID, seq: seq, fields: m.Values})
	})
	return out, err
}

// linger waits, up to VersionLinger since the backlog was first seen, while
// the backlog is only table version rows: they are durable already as
// manifests and nobody waits for their rows. Whoever waits for the log
// (WaitDurable, WaitCaughtUp) ends the linger through Flush. It reports
// whether it waited, so the caller reads the log again, with what came
// meanwhile.
func (t *Table) linger(ctx context.Context, entries []logEntry) bool {
	waited := func() bool { return entries[0].seq <= t.flushTo.Load() }
	if t.cfg.VersionLinger <= 0 || !onlyVersions(entries) || waited() {
		t.lingerSince = time.Time{}
		return false
	}
	if t.lingerSince.IsZero() {
		t.lingerSince = time.Now()
	}
	wait := t.cfg.VersionLinger - time.Since(t.lingerSince)
	if wait <= 0 {
		t.lingerSince = time.Time{}
		return false
	}
	if t.cfg.lingering != nil {
		t.cfg.lingering(entries[0].seq, entries[len(entries)-1].seq)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	asked := time.NewTicker(flushPoll)
	defer asked.Stop()
	for !waited() {
		select {
		case <-timer.C:
			return true
		case <-t.flushNow:
		case <-asked.C:
			t.flushAsked(ctx)
		case <-ctx.Done():
			return true
		}
	}
	return true
}

// A follower reads how far the leader's segments are every followMin
// while the catalog changes, and at most every followMax while it is idle.
const (
	followMin = 5 * time.Millisecond
	followMax = 50 * time.Millisecond
)

// flushPoll is how often a lingering materializer reads what other
// processes wait for.
const flushPoll = 5 * time.Millisecond

// flushAsked ends the linger over what another process waits for (its
// follower raised the Flush key).
func (t *Table) flushAsked(ctx context.Context) {
	seq, err := t.rs.FlushRequested(ctx)
	if err != nil || seq == 0 {
		return // nobody asked (or Redis failed: the linger ends by itself)
	}
	t.Flush(seq)
}

// onlyVersions reports whether every entry is a table version row or a
// version's statistics: nobody waits for either.
func onlyVersions(entries []logEntry) bool {
	for _, e := range entries {
		if k := e.str(commitlog.KindField); k != commitlog.Version && k != commitlog.Stats {
			return false
		}
	}
	return true
}

// publishDurable tells other processes how far the log is durable. Only
// the lease holder writes it, in order. A write that fails is made again
// by the next round of the materializer (republish): followers learn of a
// segment only from this key, and a commit log that goes quiet would
// otherwise leave them behind for good.
func (t *Table) publishDurable(ctx context.Context, seq uint64) {
	if err := t.rs.PublishDurable(ctx, seq); err != nil {
		t.log.Warn("manifesttable: publishing the durable sequence; retrying", "catalog", t.cfg.Catalog, "seq", seq, "err", err)
		return
	}
	t.published = seq
}

// republish publishes the durable sequence again if its last publication
// failed.
func (t *Table) republish(ctx context.Context) {
	t.applied.Lock()
	d := t.applied.durable
	t.applied.Unlock()
	if t.published < d {
		t.publishDurable(ctx, d)
	}
}

// translate turns log entries into row changes, in order. Version entries
// name their chain by directory: a table's, or a branch's under the
// table's tree/ (lancemanifest.Chain). The row's object_id is the
// table's id when a table row has that location (also one put earlier in
// the same batch), else the directory itself; its branch is the chain's.
// Each kind of entry (commitlog) has its own method below.
func (t *Table) translate(_ context.Context, entries []logEntry, rederived []change, settled map[string]*redisstate.Record) ([]change, []api.Event, error) {
	tr := &translator{t: t, overlay: map[string]string{}, rederived: map[verAt]bool{}, settled: settled}
	for _, c := range rederived {
		if c.row.ObjectType == TypeTableVersion && !c.del {
			tr.rederived[verAt{verKey(c.row.ObjectID, c.row.Branch), c.row.TableVersion}] = true
		}
	}
	for _, e := range entries {
		kind := e.str(commitlog.KindField)
		f, ok := translators[kind]
		if !ok {
			t.log.Warn("manifesttable: unknown log entry kind", "kind", kind, "seq", e.seq)
			continue
		}
		if err := f(tr, e); err != nil {
			return nil, nil, err
		}
	}
	return tr.out, tr.events, nil
}

// translators turn one entry of each kind into changes.
var translators = map[string]func(*translator, logEntry) error{
	commitlog.Put:                 (*translator).put,
	commitlog.ReadVersion:         (*translator).readVersion,
	commitlog.Delete:              (*translator).delete,
	commitlog.Version:             (*translator).version,
	commitlog.DeleteVersions:      (*translator).deleteVersions,
	commitlog.DeleteVersionRanges: (*translator).deleteVersionRanges,
	commitlog.DropTable:           (*translator).dropTable,
	commitlog.RenameTable:         (*translator).renameTable,
	commitlog.Stats:               (*translator).stats,
	commitlog.Event:               (*translator).event,
}

// translator is one translate call: the changes and the change feed's
// events so far, and the tables put earlier in the same batch (location →
// id).
type translator struct {
	t       *Table
	overlay map[string]string
	out     []change
	events  []api.Event
	// rederived are the versions the segment's gap re-derived from
	// storage (rederiveGap), events and all.
	rederived map[verAt]bool
	// settled are the records of unproven claims as they ended, by log
	// entry id (settleUnproven); nil: taken back.
	settled map[string]*redisstate.Record
}

// verAt is a version of a chain (verKey).
type verAt struct {
	chain string
	v     uint64
}

// evented reports whether version v of chain id's branch has had its
// event already: re-derived from storage after a gap in the log (in this
// segment, or an earlier one: its row is in the index) before its own
// log entry was read. A version's row exists only once, so a row there
// before its entry means just that.
func (tr *translator) evented(id, branch string, v uint64) bool {
	k := verKey(id, branch)
	if tr.rederived[verAt{k, v}] {
		return true
	}
	tr.t.idx.RLock()
	defer tr.t.idx.RUnlock()
	_, ok := findVersion(tr.t.idx.rows.vers[k], v)
	return ok
}

func (tr *translator) add(c change) { tr.out = append(tr.out, c) }

func (tr *translator) idOf(loc string) (string, bool) {
	if id, ok := tr.overlay[loc]; ok {
		return id, true
	}
	return tr.t.TableByLocation(loc)
}

func (tr *translator) chainOf(chain string) (id, branch string) {
	c := lancemanifest.ParseChain(chain, func(l string) bool { _, ok := tr.idOf(l); return ok })
	if id, ok := tr.idOf(string(c.Table)); ok {
		return id, c.Branch
	}
	return string(c.Table), c.Branch
}

func (tr *translator) put(e logEntry) error {
	r, err := UnmarshalRow([]byte(e.str("row")))
	if err != nil {
		return err
	}
	if r.ObjectType != TypeTable || r.Location == "" {
		tr.add(change{seq: e.seq, row: r})
		return nil
	}
	tr.overlay[r.Location] = r.ObjectID
	tr.add(change{seq: e.seq, row: r})
	// Versions recorded of the directory before it was a table's are the
	// table's: a transaction that declares a table and commits its first
	// version logs the version first. (A directory that is also some
	// table's id names that table, not a directory.)
	if r.ObjectID != r.Location && !tr.isTable(r.Location) {
		tr.moveVersions(e.seq, r.Location, r.ObjectID)
		for i := range tr.events {
			if ev := &tr.events[i]; ev.ID == nil && ev.Location == r.Location {
				ev.Location = ""
				tr.eventOf(ev, r.ObjectID)
			}
		}
	}
	return nil
}

// readVersion moves a partition table's read_version to v, never down:
// claims are logged in claim order, and a late entry of an older commit
// must not undo a newer one.
func (tr *translator) readVersion(e logEntry) error {
	v, err := strconv.ParseUint(e.str("v"), 10, 64)
	if err != nil {
		return fmt.Errorf("manifesttable: bad read_version entry at %d: %w", e.seq, err)
	}
	id := e.str("t")
	r, seen, ok := lastChange(tr.out, Key{Type: TypeTable, ID: id})
	if !seen {
		r, ok = tr.t.Object(TypeTable, id)
	}
	if !ok || v <= r.ReadVersion {
		return nil
	}
	r.ReadVersion = v
	tr.add(change{seq: e.seq, row: r})
	return nil
}

func (tr *translator) delete(e logEntry) error {
	var k logKey
	if err := json.Unmarshal([]byte(e.str("key")), &k); err != nil {
		return fmt.Errorf("manifesttable: bad delete entry at %d: %w", e.seq, err)
	}
	tr.add(change{seq: e.seq, del: true, row: Row{ObjectType: k.Type, ObjectID: k.ID, Branch: k.Branch, TableVersion: k.Version}})
	return nil
}

func (tr *translator) version(e logEntry) error {
	v, err := strconv.ParseUint(e.str("v"), 10, 64)
	if err != nil {
		return fmt.Errorf("manifesttable: bad version entry at %d: %w", e.seq, err)
	}
	rec, err := redisstate.ParseRecord(e.str("r"))
	if err != nil {
		return fmt.Errorf("manifesttable: bad version record at %d: %w", e.seq, err)
	}
	if cur, ok := tr.settled[e.id]; ok {
		if cur == nil {
			return nil // an unproven claim taken back: no version was
		}
		rec = *cur
	}
	id, branch := tr.chainOf(e.str("t"))
	row := Row{ObjectType: TypeTableVersion, ObjectID: id, Branch: branch, TableVersion: v,
		ManifestPath: rec.Final, ManifestSize: uint64(max(rec.Size, 0)), TxnID: rec.TxnID, CommittedAt: rec.ClaimedAt}
	tr.t.noted(&row)
	evented := tr.evented(id, branch, v)
	tr.add(change{seq: e.seq, row: row})
	if evented {
		return nil
	}
	ev := api.Event{Seq: e.seq, Time: rec.ClaimedAt.UTC(), Type: api.EventVersionCreated, Branch: branch, Version: v,
		ManifestPath: rec.Final, ManifestSize: rec.Size, TxnID: rec.TxnID, Principal: e.str("p")}
	tr.eventOf(&ev, id)
	tr.events = append(tr.events, ev)
	return nil
}

// eventOf names the object of ev, a version of chain id, as the batch
// has it so far (nameEvent).
func (tr *translator) eventOf(ev *api.Event, id string) { nameEvent(ev, id, tr.isTable(id)) }

// isTable reports whether id is a table's id (in the index, or put
// earlier in the batch).
func (tr *translator) isTable(id string) bool {
	if _, seen, ok := lastChange(tr.out, Key{Type: TypeTable, ID: id}); seen {
		return ok
	}
	_, ok := tr.t.Object(TypeTable, id)
	return ok
}

// event is a change as the change feed shows it, written by the layer
// that made the change, with the entry's sequence.
func (tr *translator) event(e logEntry) error {
	var ev api.Event
	if err := json.Unmarshal([]byte(e.str("e")), &ev); err != nil {
		tr.t.log.Warn("manifesttable: an event entry that is not JSON is skipped", "seq", e.seq, "err", err)
		return nil
	}
	ev.Seq = e.seq
	tr.events = append(tr.events, ev)
	return nil
}

// versionsDeleted is the event of versions forgotten from a chain.
func (tr *translator) versionsDeleted(e logEntry, id, branch string, versions []uint64) {
	if len(versions) == 0 {
		return
	}
	ev := api.Event{Seq: e.seq, Time: tr.t.cfg.Now().UTC(), Type: api.EventVersionsDeleted, Branch: branch, Versions: versions, TxnID: e.str("txn")}
	tr.eventOf(&ev, id)
	tr.events = append(tr.events, ev)
}

func (tr *translator) deleteVersions(e logEntry) error {
	id, branch := tr.chainOf(e.str("t"))
	var gone []uint64
	for _, vs := range strings.Split(e.str("vs"), ",") {
		v, err := strconv.ParseUint(vs, 10, 64)
		if err != nil {
			continue
		}
		tr.add(change{seq: e.seq, del: true, row: versionKeyRow(id, branch, v)})
		gone = append(gone, v)
	}
	if len(gone) > 0 {
		tr.cleaned(e.seq, id)
	}
	tr.versionsDeleted(e, id, branch, gone)
	return nil
}

// cleaned stamps table id's row with the time of a cleanup: a change
// that removed version records of it (maintenance.go). A directory that
// is no table's has no row to stamp.
func (tr *translator) cleaned(seq uint64, id string) {
	r, seen, ok := lastChange(tr.out, Key{Type: TypeTable, ID: id})
	if !seen {
		r, ok = tr.t.Object(TypeTable, id)
	}
	if !ok {
		return
	}
	r.LastCleanupAt = tr.t.cfg.Now().UTC().Truncate(time.Microsecond)
	tr.add(change{seq: seq, row: r})
}

// deleteVersionRanges deletes the version rows in ranges
// (commitlog.EncodeRanges).
func (tr *translator) deleteVersionRanges(e logEntry) error {
	ranges, err := commitlog.DecodeRanges(e.str("ranges"))
	if err != nil {
		tr.t.log.Warn("manifesttable: a log entry with malformed version ranges is skipped", "seq", e.seq, "err", err)
		return nil
	}
	id, branch := tr.chainOf(e.str("t"))
	var gone []uint64
	for _, r := range tr.t.versionsAt(tr.out, id) {
		if r.Branch == branch && commitlog.InRanges(r.TableVersion, ranges) {
			tr.add(change{seq: e.seq, del: true, row: versionKeyRow(id, branch, r.TableVersion)})
			gone = append(gone, r.TableVersion)
		}
	}
	if len(gone) > 0 {
		tr.cleaned(e.seq, id)
	}
	slices.Sort(gone)
	tr.versionsDeleted(e, id, branch, gone)
	return nil
}

// dropTable: a table's drop takes every branch's rows; a branch's chain
// forgotten (Lance removed the branch) takes its own.
func (tr *translator) dropTable(e logEntry) error {
	id, branch := tr.chainOf(e.str("t"))
	for _, r := range tr.t.versionsAt(tr.out, id) {
		if branch == "" || r.Branch == branch {
			tr.add(change{seq: e.seq, del: true, row: versionKeyRow(id, r.Branch, r.TableVersion)})
		}
	}
	return nil
}

// renameTable: the version rows, every branch's, follow their table to
// its new id.
func (tr *translator) renameTable(e logEntry) error {
	tr.moveVersions(e.seq, e.str("from"), e.str("to"))
	return nil
}

// moveVersions gives the version rows of from, every branch's, to to.
func (tr *translator) moveVersions(seq uint64, from, to string) {
	for _, r := range tr.t.versionsAt(tr.out, from) {
		tr.add(change{seq: seq, del: true, row: versionKeyRow(from, r.Branch, r.TableVersion)})
		r.ObjectID = to
		tr.add(change{seq: seq, row: r})
	}
}

func (tr *translator) stats(e logEntry) error {
	if c, ok := tr.t.statsChange(tr.out, e.seq, e.str("row")); ok {
		tr.add(c)
	}
	return nil
}

// lastChange finds the last change of k in out: seen if there is one,
// and its row with ok when it is a put.
func lastChange(out []change, k Key) (r Row, seen, ok bool) {
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].row.Key() == k {
			return out[i].row, true, !out[i].del
		}
	}
	return Row{}, false, false
}

// versionKeyRow is the key of a version row, as a Row.
func versionKeyRow(id, branch string, v uint64) Row {
	return Row{ObjectType: TypeTableVersion, ObjectID: id, Branch: branch, TableVersion: v}
}

// versionsAt returns table id's current version rows, every branch's, as
// of the changes in out, which follow the index's state: the index's
// rows, then out's puts and deletes of id's versions, in order.
func (t *Table) versionsAt(out []change, id string) []Row {
	rows := t.allVersionRows(id)
	for _, c := range out {
		if c.row.ObjectType != TypeTableVersion || c.row.ObjectID != id {
			continue
		}
		rows = slices.DeleteFunc(rows, func(r Row) bool {
			return r.Branch == c.row.Branch && r.TableVersion == c.row.TableVersion
		})
		if !c.del {
			rows = append(rows, c.row)
		}
	}
	return rows
}

// reconcile re-derives every known table's version rows from storage:
// main's from the table's _versions directory, each Lance branch's (those
// with rows, and those Lance records in _refs/branches/) from its
// tree/<branch>/_versions directory. Versions in storage but not in the
// table are added, and rows whose final manifest is gone are deleted. The
// changes carry seq.
func (t *Table) reconcile(ctx context.Context, seq uint64) ([]change, error) {
	chains, reads, err := t.versionChains(ctx)
	if err != nil {
		return nil, err
	}
	var out []change
	for _, c := range chains {
		changes, err := t.reconcileChain(ctx, seq, c, reads)
		if err != nil {
			return nil, err
		}
		out = append(out, changes...)
	}
	return out, nil
}

// versionChain is one version chain of a table: main ("") or a branch,
// and the directory its versions are in.
type versionChain struct {
	id, branch string
	dir        lancemanifest.Dir
}

// versionChains lists the version chains reconcile compares with
// storage: every table's main chain and every branch it has rows of or
// Lance recorded; reads are the tables with a read_version.
func (t *Table) versionChains(ctx context.Context) ([]versionChain, map[string]Row, error) {
	t.idx.RLock()
	tables := map[string]lancemanifest.Dir{} // id -> location
	reads := map[string]Row{}                // tables with a read_version
	for k, r := range t.idx.rows.objects {
		if k.Type == TypeTable && r.Location != "" {
			tables[k.ID] = lancemanifest.Dir(r.Location)
			if r.ReadVersion > 0 {
				reads[k.ID] = r
			}
		}
	}
	branches := map[string]map[string]bool{} // id -> branches with rows
	for k := range t.idx.rows.vers {
		id, branch := splitVerKey(k)
		if branch != "" {
			if branches[id] == nil {
				branches[id] = map[string]bool{}
			}
			branches[id][branch] = true
		} else if _, ok := tables[id]; !ok && objstore.ValidateKey(id) == nil {
			tables[id] = lancemanifest.Dir(id) // versions of a directory without a table row
		}
	}
	t.idx.RUnlock()
	var chains []versionChain
	for id, loc := range tables {
		chains = append(chains, versionChain{id, "", loc})
		named := branches[id]
		if named == nil {
			named = map[string]bool{}
		}
		prefix := loc.BranchRefs()
		for a, err := range t.cfg.Objects.List(ctx, prefix) {
			if err != nil {
				return nil, nil, err
			}
			if b, ok := lancemanifest.BranchOfRef(a.Key[len(prefix):]); ok {
				named[b] = true
			}
		}
		for b := range named {
			chains = append(chains, versionChain{id, b, lancemanifest.Chain{Table: loc, Branch: b}.Dir()})
		}
	}
	return chains, reads, nil
}

// reconcileChain is the row changes that make one chain's version rows
// what storage holds: rows for final manifests the index lacks,
// deletions of rows whose manifest is gone.
func (t *Table) reconcileChain(ctx context.Context, seq uint64, c versionChain, reads map[string]Row) ([]change, error) {
	known := map[uint64]bool{}
	for _, r := range t.BranchVersionRows(c.id, c.branch) {
		known[r.TableVersion] = true
	}
	var out []change
	found := map[uint64]bool{}
	if objstore.ValidateKey(string(c.dir)) == nil {
		for a, err := range t.cfg.Objects.List(ctx, c.dir.Versions()) {
			if err != nil {
				return nil, err
			}
			m, err := lancemanifest.ParseManifestName(path.Base(a.Key))
			if err != nil || m.Staging || m.Detached || m.Version == 0 {
				continue
			}
			found[m.Version] = true
			if !known[m.Version] {
				out = append(out, change{seq: seq, row: Row{ObjectType: TypeTableVersion, ObjectID: c.id, Branch: c.branch,
					TableVersion: m.Version, ManifestPath: a.Key, ManifestSize: uint64(a.Size),
					CommittedAt: a.ModTime.UTC().Truncate(time.Microsecond)}})
			}
		}
	}
	for v := range known {
		if !found[v] {
			out = append(out, change{seq: seq, del: true, row: versionKeyRow(c.id, c.branch, v)})
		}
	}
	// A read_version whose version never became final (its claim was
	// lost with Redis before its transaction was recorded) falls back to
	// the newest version storage has.
	if r, ok := reads[c.id]; ok && c.branch == "" && !found[r.ReadVersion] {
		r.ReadVersion = 0
		for v := range found {
			r.ReadVersion = max(r.ReadVersion, v)
		}
		out = append(out, change{seq: seq, row: r})
	}
	return out, nil
}

// sequences counts the catalog sequences (commits and catalog mutations)
// of entries, which are in sequence order: the size of a group commit.
func sequences(entries []logEntry) int {
	n := 0
	for i, e := range entries {
		if i == 0 || e.seq != entries[i-1].seq {
			n++
		}
	}
	return n
}

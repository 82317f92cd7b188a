package manifesttable

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/redisstate"
)

// Unproven claims. Where the store refuses a conditional copy onto an
// existing key, redisclaim claims a version before it has seen the
// staging object (redisstate.Record.Unproven), and takes the claim back
// when the promotion finds none. The claim's log entry is written with
// the claim, so it can precede both outcomes: the materializer makes
// the version's row and its change feed event only once Redis says the
// claim is final — with the record's size then, read from the final
// manifest — and none for a claim taken back (its tombstone, or another
// claim of the version since). Until then the log is held at the entry;
// one still staged after settleAfter (its writer gone) is finished as a
// reader would (SettleWith).

// settleAfter is how long the log waits at an unproven claim before the
// materializer finishes it itself: well past a writer's copy and flip,
// and past the twice PromoteWindow (1 s) of taking a claim back.
const settleAfter = 3 * time.Second

// heldClaim is the unproven claim the log was last held at.
type heldClaim struct {
	seq   uint64
	since time.Time
}

// SettleWith gives the table what finishes an unproven claim left
// staged (redisclaim.Store.Settle).
func (t *Table) SettleWith(fn func(ctx context.Context, chain string, version uint64) error) {
	t.settle.Store(&fn)
}

// settleUnproven looks up the unproven claims among entries. It returns
// the entries the segment may hold — all of them, or those before the
// first sequence that holds a claim still staged — and, by entry id, the
// record to make each claim's row from (nil: the claim was taken back,
// and makes nothing). held reports that the log is held.
func (t *Table) settleUnproven(ctx context.Context, entries []logEntry) (out []logEntry, settled map[string]*redisstate.Record, held bool, err error) {
	var at []int
	var refs []redisstate.VersionRef
	var logged []redisstate.Record
	for i, e := range entries {
		// Only an unproven claim's record has a "pf" field: the others
		// are not decoded here (translate decodes every one).
		if e.str(commitlog.KindField) != commitlog.Version || !strings.Contains(e.str("r"), `"pf"`) {
			continue
		}
		rec, err := redisstate.ParseRecord(e.str("r"))
		if err != nil || !rec.Unproven {
			continue // (a bad entry is the translation's to report)
		}
		v, err := strconv.ParseUint(e.str("v"), 10, 64)
		if err != nil {
			continue
		}
		at, logged = append(at, i), append(logged, rec)
		refs = append(refs, redisstate.VersionRef{Table: e.str("t"), Version: v})
	}
	if len(at) == 0 {
		t.held = heldClaim{}
		return entries, nil, false, nil
	}
	cur, err := t.rs.Records(ctx, refs)
	if err != nil {
		return nil, nil, false, err
	}
	settled = map[string]*redisstate.Record{}
	for k, i := range at {
		c, e := cur[k], entries[i]
		switch {
		case c == nil || c.Deleted():
			// No record (the table dropped since, Redis's state lost) or
			// a tombstone of a version deleted since: as logged, as for
			// every claim.
		case c.Staging != logged[k].Staging || c.Retracted():
			settled[e.id] = nil // taken back (and perhaps claimed again)
		case c.Staged():
			t.holdAt(ctx, e.seq, refs[k])
			cut := i
			for cut > 0 && entries[cut-1].seq == e.seq {
				cut--
			}
			return entries[:cut], settled, true, nil
		default:
			settled[e.id] = c
		}
	}
	t.held = heldClaim{}
	return entries, settled, false, nil
}

// holdAt notes that the log is held at sequence seq, an unproven claim of
// ref still staged, and settles the claim when it stays so past
// settleAfter.
func (t *Table) holdAt(ctx context.Context, seq uint64, ref redisstate.VersionRef) {
	if t.held.seq != seq {
		t.held = heldClaim{seq: seq, since: time.Now()}
		return
	}
	fn := t.settle.Load()
	if fn == nil || time.Since(t.held.since) < settleAfter {
		return
	}
	if !t.settling.CompareAndSwap(false, true) {
		return
	}
	t.held.since = time.Now() // the next attempt, if this one fails, after as long again
	// Apart from the loop, which goes on renewing the lease meanwhile
	// (taking a claim back waits twice PromoteWindow).
	t.runDone.Add(1) // (Close waits for it; run holds the group open meanwhile)
	go func() {
		defer t.runDone.Done()
		defer t.settling.Store(false)
		sctx, cancel := context.WithTimeout(ctx, 2*settleAfter)
		defer cancel()
		if err := (*fn)(sctx, ref.Table, ref.Version); err != nil && ctx.Err() == nil {
			t.log.Warn("manifesttable: an unproven claim holds the commit log and could not be settled", "table", ref.Table, "version", ref.Version, "err", err)
		}
	}()
}

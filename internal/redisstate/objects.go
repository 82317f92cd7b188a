package redisstate

import (
	"context"
	"time"
)

// Indexed is an object of __manifest to index, for RebuildIndex; one of
// Type Reserved (and only a Location) reserves a table directory no live
// table has.
type Indexed struct{ ID, Parent, Type, Location string }

// Reserved is the Indexed type of a location reserved alone (the
// directory of a drop kept for undrop).
const Reserved = "reserved"

// RebuildIndex runs rebuild_index.lua: during a recovery (token is its
// lock's), objs are indexed, after the index is cleared when first. It
// reports whether the lock was held.
func (c *Catalog) RebuildIndex(ctx context.Context, token string, first bool, objs []Indexed) (bool, error) {
	keys := []Key{c.Recovering(), c.Obj(), c.Loc(), c.ByLoc(), c.Locs()}
	args := []any{token, flag(first)}
	for _, o := range objs {
		if o.Type != Reserved {
			keys = append(keys, c.Kids(o.Parent))
		}
		args = append(args, o.ID, o.Type, o.Location)
	}
	return c.runBool(ctx, rebuildIndexS, keys, args...)
}

// ReserveLocationsReply is reserve_locs.lua's reply.
type ReserveLocationsReply struct {
	Status Status // OK, DONE (reserved before) or NOEPOCH
	Added  int    // OK: locations reserved now
}

// ReserveLocations runs reserve_locs.lua: once per catalog, the table
// directories (every live table's, and kept, the locations a drop keeps)
// are reserved in Keys.Locs, for a catalog whose state predates it.
func (c *Catalog) ReserveLocations(ctx context.Context, kept []string) (ReserveLocationsReply, error) {
	args := make([]any, len(kept))
	for i, l := range kept {
		args[i] = l
	}
	r, err := c.run(ctx, reserveLocsS, []Key{c.Epoch(), c.ByLoc(), c.Locs()}, args...)
	if err != nil {
		return ReserveLocationsReply{}, err
	}
	switch r.status() {
	case OK:
		return ReserveLocationsReply{Status: OK, Added: int(r.uint(1))}, nil
	case Done, NoEpoch:
		return ReserveLocationsReply{Status: r.status()}, nil
	}
	return ReserveLocationsReply{}, UnexpectedReply("reserve_locs.lua", r)
}

// ReleaseLocation runs release_loc.lua: the reservation of loc ends
// (OK) unless a live table has it (TAKEN); NOEPOCH when Redis lost the
// catalog's state.
func (c *Catalog) ReleaseLocation(ctx context.Context, loc string) (Status, error) {
	r, err := c.run(ctx, releaseLocS, []Key{c.Epoch(), c.ByLoc(), c.Locs()}, loc)
	if err != nil {
		return "", err
	}
	switch r.status() {
	case OK, Taken, NoEpoch:
		return r.status(), nil
	}
	return "", UnexpectedReply("release_loc.lua", r)
}

// ClearKids runs clear_kids.lua: during a recovery (token is its lock's),
// the children sets named by keys are deleted. It reports whether the
// lock was held.
func (c *Catalog) ClearKids(ctx context.Context, token string, keys []Key) (bool, error) {
	return c.runBool(ctx, clearKidsS, append([]Key{c.Recovering()}, keys...), token)
}

// TxnApplyReply is txn_apply.lua's reply.
type TxnApplyReply struct {
	Status Status // OK, DONE (applied before), NOLOCK or NOEPOCH
	Seq    uint64 // OK, DONE: the sequence the entries were appended under
}

// TxnApply runs txn_apply.lua: a committed transaction's catalog entries
// are appended to the log once. token is the recovery lock's token during
// a recovery, else "".
func (c *Catalog) TxnApply(ctx context.Context, txnID, token string, entries []LogEntry) (TxnApplyReply, error) {
	args := []any{token, c.maxLen}
	for _, e := range entries {
		args = append(args, len(e)/2)
		for _, f := range e {
			args = append(args, f)
		}
	}
	r, err := c.run(ctx, txnApplyS, []Key{c.Epoch(), c.Recovering(), c.Txn(txnID), c.Seq(), c.Log()}, args...)
	if err != nil {
		return TxnApplyReply{}, err
	}
	switch r.status() {
	case OK, Done, NoLock, NoEpoch:
		return TxnApplyReply{Status: r.status(), Seq: r.uint(1)}, nil
	}
	return TxnApplyReply{}, UnexpectedReply("txn_apply.lua", r)
}

// AppendReply is append.lua's reply.
type AppendReply struct {
	Status Status // OK or NOEPOCH
	Seq    uint64 // OK
}

// Append runs append.lua: row changes (kind, payload pairs: commitlog.Put
// with a row, commitlog.Delete with a key) go to the log under one new
// sequence.
func (c *Catalog) Append(ctx context.Context, pairs []string) (AppendReply, error) {
	args := make([]any, 0, len(pairs)+1)
	args = append(args, c.maxLen)
	for _, p := range pairs {
		args = append(args, p)
	}
	r, err := c.run(ctx, appendS, []Key{c.Epoch(), c.Seq(), c.Log()}, args...)
	if err != nil {
		return AppendReply{}, err
	}
	switch r.status() {
	case OK, NoEpoch:
		return AppendReply{Status: r.status(), Seq: r.uint(1)}, nil
	}
	return AppendReply{}, UnexpectedReply("append.lua", r)
}

// TakeLease runs lease.lua: the materializer lease is taken or renewed for
// token, for d. It reports whether token holds it.
func (c *Catalog) TakeLease(ctx context.Context, token string, d time.Duration) (bool, error) {
	return c.TakeLeaseOf(ctx, c.Lease(), token, d)
}

// TakeLeaseOf is TakeLease of another lease key (MaintainLease).
func (c *Catalog) TakeLeaseOf(ctx context.Context, key Key, token string, d time.Duration) (bool, error) {
	return c.runBool(ctx, leaseS, []Key{key}, token, d.Milliseconds())
}

package redisstate

import (
	"context"
	"strconv"
	"time"

	"github.com/flightns/flightns/internal/commitlog"
)

func version(v uint64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatUint(v, 10)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// GetReply is get.lua's reply.
type GetReply struct {
	Status    Status // OK, NOHEAD or NOEPOCH
	Epoch     string
	Head      uint64
	Record    Record // the version's record, when HasRecord
	HasRecord bool
}

// Get runs get.lua: a table's head and the record of version (0: the
// head's).
func (c *Catalog) Get(ctx context.Context, table string, v uint64) (GetReply, error) {
	r, err := c.run(ctx, getS, []Key{c.Epoch(), c.Heads(), c.Versions(table)}, table, version(v))
	if err != nil {
		return GetReply{}, err
	}
	out := GetReply{Status: r.status()}
	switch out.Status {
	case OK:
		out.Epoch, out.Head = r.str(1), r.uint(2)
		if s := r.str(3); s != "" {
			out.HasRecord = true
			if out.Record, err = ParseRecord(s); err != nil {
				return GetReply{}, err
			}
		}
	case NoHead, NoEpoch:
	default:
		return GetReply{}, UnexpectedReply("get.lua", r)
	}
	return out, nil
}

// ListReply is list.lua's reply.
type ListReply struct {
	Status   Status // OK, NOHEAD or NOEPOCH
	Epoch    string
	Head     uint64
	Versions []uint64 // in the order asked
	Records  []Record // Records[i] is Versions[i]'s
}

// List runs list.lua: up to limit records of a table's versions after
// the version after (0: from the first), descending with desc.
func (c *Catalog) List(ctx context.Context, table string, desc bool, after uint64, limit int) (ListReply, error) {
	dir := "asc"
	if desc {
		dir = "desc"
	}
	r, err := c.run(ctx, listS, []Key{c.Epoch(), c.Heads(), c.Versions(table), c.Index(table)}, table, dir, version(after), limit)
	if err != nil {
		return ListReply{}, err
	}
	out := ListReply{Status: r.status()}
	switch out.Status {
	case OK:
		out.Epoch, out.Head = r.str(1), r.uint(2)
		for i := 3; i+1 < len(r); i += 2 {
			rec, err := ParseRecord(r.str(i + 1))
			if err != nil {
				return ListReply{}, err
			}
			out.Versions = append(out.Versions, r.uint(i))
			out.Records = append(out.Records, rec)
		}
	case NoHead, NoEpoch:
	default:
		return ListReply{}, UnexpectedReply("list.lua", r)
	}
	return out, nil
}

// LatestReply is latest.lua's reply.
type LatestReply struct {
	Status Status // OK or NOEPOCH
	Seq    uint64
	Heads  []uint64 // per table asked
	Known  []bool   // per table asked: whether Redis has its head
}

// Latest runs latest.lua: the heads of tables at one catalog sequence.
func (c *Catalog) Latest(ctx context.Context, tables []string) (LatestReply, error) {
	args := make([]any, len(tables))
	for i, t := range tables {
		args[i] = t
	}
	r, err := c.run(ctx, latestS, []Key{c.Epoch(), c.Heads(), c.Seq()}, args...)
	if err != nil {
		return LatestReply{}, err
	}
	out := LatestReply{Status: r.status()}
	switch out.Status {
	case OK:
		out.Seq = r.uint(1)
		out.Heads, out.Known = make([]uint64, len(tables)), make([]bool, len(tables))
		for i := range tables {
			out.Known[i] = r.str(2+i) != ""
			out.Heads[i] = r.uint(2 + i)
		}
	case NoEpoch:
	default:
		return LatestReply{}, UnexpectedReply("latest.lua", r)
	}
	return out, nil
}

// Flip runs flip.lua: version's record, claimed as rec says, becomes
// final (with rec's size). It reports whether the record is final (or a
// tombstone) now.
func (c *Catalog) Flip(ctx context.Context, table string, v uint64, rec Record) (bool, error) {
	return c.runBool(ctx, flipS, []Key{c.Versions(table)}, strconv.FormatUint(v, 10), rec.Staging, rec.Final, strconv.FormatInt(rec.Size, 10))
}

// Supersede runs supersede.lua: the claim of version with staging path
// staging is replaced by what storage holds at final (size bytes). It
// reports whether it was.
func (c *Catalog) Supersede(ctx context.Context, table string, v uint64, staging, final string, size int64) (bool, error) {
	return c.runBool(ctx, supersedeS, []Key{c.Versions(table)}, strconv.FormatUint(v, 10), staging, final, strconv.FormatInt(size, 10))
}

// RetractMark runs retract.lua's mark: the unproven claim of version v
// with staging path staging begins to be taken back at now, unless it
// had begun already. OK with the time it began; Final when the version
// committed; Proven when the claim is not unproven; Gone when no record
// holds the claim.
func (c *Catalog) RetractMark(ctx context.Context, table string, v uint64, staging string, now time.Time) (Status, time.Time, error) {
	r, err := c.run(ctx, retractS, []Key{c.Versions(table), c.Index(table), c.Heads()}, "mark", table, strconv.FormatUint(v, 10), staging,
		strconv.FormatInt(now.UnixMicro(), 10))
	if err != nil {
		return "", time.Time{}, err
	}
	switch st := r.status(); st {
	case OK:
		us, err := strconv.ParseInt(r.str(1), 10, 64)
		if err != nil {
			return "", time.Time{}, UnexpectedReply("retract.lua", r)
		}
		return st, time.UnixMicro(us).UTC(), nil
	case Final, Proven, Gone:
		return st, time.Time{}, nil
	}
	return "", time.Time{}, UnexpectedReply("retract.lua", r)
}

// RetractRemove runs retract.lua's remove: the marked claim of version v
// with staging path staging is deleted, and the table's head lowered
// below it if it is the head. It reports whether it was.
func (c *Catalog) RetractRemove(ctx context.Context, table string, v uint64, staging string) (bool, error) {
	return c.runBool(ctx, retractS, []Key{c.Versions(table), c.Index(table), c.Heads()}, "remove", table, strconv.FormatUint(v, 10), staging, "")
}

// Found is a version found in object storage, for Seed.
type Found struct {
	Version uint64
	Path    string
	Size    int64
	Staging string // with Tx, when a recovery rolled a transaction forward
	Tx      string
}

// SeedReply is seed.lua's reply.
type SeedReply struct {
	Status Status // OK or NOEPOCH
	Head   uint64 // after seeding
}

// Seed runs seed.lua: found is recorded and the table's head raised to at
// least head. token is the recovery lock's token when a recovery seeds
// (the epoch is absent then), else "".
func (c *Catalog) Seed(ctx context.Context, table string, head uint64, token string, found []Found) (SeedReply, error) {
	args := []any{table, strconv.FormatUint(head, 10), token}
	for _, f := range found {
		args = append(args, strconv.FormatUint(f.Version, 10), f.Path, strconv.FormatInt(f.Size, 10), f.Staging, f.Tx)
	}
	r, err := c.run(ctx, seedS, []Key{c.Epoch(), c.Recovering(), c.Heads(), c.Versions(table), c.Index(table)}, args...)
	if err != nil {
		return SeedReply{}, err
	}
	switch r.status() {
	case OK, NoEpoch:
		return SeedReply{Status: r.status(), Head: r.uint(1)}, nil
	}
	return SeedReply{}, UnexpectedReply("seed.lua", r)
}

// Member is a transaction's member, for Confirm.
type Member struct {
	Table   string
	Version uint64
	Staging string
}

// Confirm runs confirm.lua: whether every member's claim still stands,
// made by transaction txnID in epoch.
func (c *Catalog) Confirm(ctx context.Context, epoch, txnID string, members []Member) (bool, error) {
	keys := []Key{c.Epoch()}
	args := []any{epoch, txnID}
	for _, m := range members {
		keys = append(keys, c.Versions(m.Table))
		args = append(args, strconv.FormatUint(m.Version, 10), m.Staging)
	}
	return c.runBool(ctx, confirmS, keys, args...)
}

// The modes of DeleteVersions (delete_versions.lua's header).
const (
	DeleteProbe  = "probe"
	DeleteSettle = "settle"
	DeleteNow    = "delete"
)

// DeleteVersionsReply is delete_versions.lua's reply.
type DeleteVersionsReply struct {
	Status  Status // OK, STAGED or NOEPOCH
	Deleted int    // OK
	Staged  []uint64
}

// DeleteVersions runs delete_versions.lua in mode over ranges (each
// non-empty; End 0: no end).
func (c *Catalog) DeleteVersions(ctx context.Context, table, mode string, ranges []commitlog.Range) (DeleteVersionsReply, error) {
	args := []any{table, c.maxLen, mode}
	for _, rg := range ranges {
		end := "+inf"
		if rg.End != 0 {
			end = strconv.FormatUint(rg.End, 10)
		}
		args = append(args, strconv.FormatUint(rg.Start, 10), end)
	}
	r, err := c.run(ctx, deleteVersionsS, []Key{c.Epoch(), c.Seq(), c.Log(), c.Versions(table), c.Index(table)}, args...)
	if err != nil {
		return DeleteVersionsReply{}, err
	}
	out := DeleteVersionsReply{Status: r.status()}
	switch out.Status {
	case OK:
		out.Deleted, _ = strconv.Atoi(r.str(1))
	case Staged:
		for i := 1; i < len(r); i++ {
			v, err := strconv.ParseUint(r.str(i), 10, 64)
			if err != nil {
				return DeleteVersionsReply{}, UnexpectedReply("delete_versions.lua", r)
			}
			out.Staged = append(out.Staged, v)
		}
	case NoEpoch:
	default:
		return DeleteVersionsReply{}, UnexpectedReply("delete_versions.lua", r)
	}
	return out, nil
}

// Drop runs drop.lua: Redis forgets a table's head, records and index.
// It replies OK or NOEPOCH.
func (c *Catalog) Drop(ctx context.Context, table string) (Status, error) {
	r, err := c.run(ctx, dropS, []Key{c.Epoch(), c.Heads(), c.Seq(), c.Log(), c.Versions(table), c.Index(table)}, table, c.maxLen)
	if err != nil {
		return "", err
	}
	return r.status(), nil
}

// OpenEpoch runs open_epoch.lua: the catalog sequence rises to at least
// floor and, with open, epoch opens, both only for the holder of the
// recovery lock (token). It replies OK or LOST.
func (c *Catalog) OpenEpoch(ctx context.Context, epoch string, floor uint64, token string, open bool) (Status, error) {
	r, err := c.run(ctx, openEpochS, []Key{c.Epoch(), c.Seq(), c.Log(), c.Recovering()}, epoch, strconv.FormatUint(floor, 10), token, flag(open))
	if err != nil {
		return "", err
	}
	return r.status(), nil
}

// CloseEpoch runs close_epoch.lua: the catalog's epoch closes, and the
// next call of every process recovers the state from storage.
func (c *Catalog) CloseEpoch(ctx context.Context) error {
	_, err := c.run(ctx, closeEpochS, []Key{c.Epoch()})
	return err
}

// ForkReply is fork.lua's reply.
type ForkReply struct {
	Status Status // OK, BUSY or NOEPOCH
	Head   uint64 // OK: the chain's head after it
}

// Fork runs fork.lua: with reset the chain is forgotten first; with a
// version > 0 an empty chain starts at it.
func (c *Catalog) Fork(ctx context.Context, chain string, v uint64, reset bool) (ForkReply, error) {
	r, err := c.run(ctx, forkS, []Key{c.Epoch(), c.Heads(), c.Seq(), c.Log(), c.Versions(chain), c.Index(chain)}, chain, v, flag(reset), c.maxLen)
	if err != nil {
		return ForkReply{}, err
	}
	return ForkReply{Status: r.status(), Head: r.uint(1)}, nil
}

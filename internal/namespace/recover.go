package namespace

import (
	"context"
	"fmt"
	"strconv"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/redisclaim"
)

// catalog is the Service as its claim store reaches it
// (redisclaim.Catalog): the catalog's recovery and the completion of its
// transactions are the Service's, the claims' steps among theirs.
type catalog struct{ s *Service }

func (c catalog) Recover(ctx context.Context) (redisclaim.RecoveryStats, error) {
	return c.s.recover(ctx)
}

func (c catalog) CompleteTxn(ctx context.Context, t redisclaim.TxnCommit) error {
	return c.s.txnCommitted(ctx, t)
}

// NoteManifest keeps a committed version's manifest bytes for its row's
// statistics (manifesttable.Table.NoteManifest).
func (c catalog) NoteManifest(path string, data []byte) { c.s.table.NoteManifest(path, data) }

// Name names a claim chain (a table's directory, or a branch's under it)
// as callers know it, from this process's index of __manifest: the
// table's id, and the branch; "" for a directory no table has.
func (c catalog) Name(chain string) string {
	t := c.s.table
	isTable := func(loc string) bool { _, ok := t.TableByLocation(loc); return ok }
	ch := lancemanifest.ParseChain(chain, isTable)
	id, ok := t.TableByLocation(string(ch.Table))
	switch {
	case !ok:
		return ""
	case ch.Branch != "":
		return strconv.Quote(id) + " (branch " + strconv.Quote(ch.Branch) + ")"
	}
	return strconv.Quote(id)
}

// recover rebuilds the catalog's Redis state from storage when Redis lost
// it (its epoch is missing), holding the recovery lock throughout: the
// claims first (a catalog that never made anything durable in __manifest
// has no claims of the lost epoch to wait out, and the catalog sequence
// rises above every one __manifest holds), then the object index from
// __manifest, then a new epoch. It returns at once when the epoch is
// present.
func (s *Service) recover(ctx context.Context) (redisclaim.RecoveryStats, error) {
	r, err := s.claims.BeginRecovery(ctx)
	if r == nil || err != nil {
		return redisclaim.RecoveryStats{}, err
	}
	st, err := s.recoverLocked(ctx, r)
	return st, r.End(ctx, err)
}

func (s *Service) recoverLocked(ctx context.Context, r *redisclaim.Recovery) (redisclaim.RecoveryStats, error) {
	durable, err := s.table.DurableSeq(ctx)
	if err != nil {
		return redisclaim.RecoveryStats{}, err
	}
	if err := r.WaitOut(ctx, durable == 0); err != nil {
		return redisclaim.RecoveryStats{}, err
	}
	floor, err := s.table.SeqFloor(ctx)
	if err != nil {
		return redisclaim.RecoveryStats{}, err
	}
	if st, err := r.RebuildClaims(ctx, floor); err != nil {
		return st, err
	}
	if err := s.rebuildIndex(ctx, r.Token()); err != nil {
		return redisclaim.RecoveryStats{}, fmt.Errorf("namespace: recovery: %w", err)
	}
	return r.Finish(ctx)
}

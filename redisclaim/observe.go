package redisclaim

import (
	"context"
	"time"
)

// Observer watches the protocol for an operator's metrics. Every field may
// be nil. The functions are called on the protocol's own goroutines, after
// the step they describe: they must be cheap and must not block, and they
// can never change an outcome.
type Observer struct {
	// Claim is called after every claim script run (one per single-table
	// commit or multi-table transaction), with its member count; err is
	// ConcurrentModification for a lost race.
	Claim func(members int, took time.Duration, err error)
	// Finalize is called after every finalization of a single-table claim
	// (the create-only copy to the final path, the commit point), by the
	// writer or by a reader that helps.
	Finalize func(took time.Duration, err error)
	// Recovery is called after every recovery this process ran (not when
	// the epoch was present or another process recovered).
	Recovery func(st RecoveryStats, err error)
}

// claim is runClaim, observed.
func (s *Store) claim(ctx context.Context, txnID string, txnRecord []byte, entries []entry, x *Extras) (claimResult, error) {
	if s.obs == nil || s.obs.Claim == nil {
		return s.runClaim(ctx, txnID, txnRecord, entries, x)
	}
	start := time.Now()
	r, err := s.runClaim(ctx, txnID, txnRecord, entries, x)
	s.obs.Claim(len(entries), time.Since(start), err)
	return r, err
}

// finalize is runFinalize, observed.
func (s *Store) finalize(ctx context.Context, table string, version uint64, rec record, observed time.Time, w *claimant) (Location, error) {
	if s.obs == nil || s.obs.Finalize == nil || !rec.Staged() {
		return s.runFinalize(ctx, table, version, rec, observed, w)
	}
	start := time.Now()
	loc, err := s.runFinalize(ctx, table, version, rec, observed, w)
	s.obs.Finalize(time.Since(start), err)
	return loc, err
}

package redisclaim

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// foundVersion is a final manifest found in storage.
type foundVersion struct {
	version     uint64
	path        string
	size        int64
	staging, tx string // set when a recovery rolled a transaction forward
}

// scanVersions lists a table's final manifests in storage. Detached
// versions and staging objects are skipped.
func (s *Store) scanVersions(ctx context.Context, table string) ([]foundVersion, error) {
	var out []foundVersion
	for a, err := range s.objs.List(ctx, lancemanifest.Dir(table).Versions()) {
		if err != nil {
			return nil, err
		}
		m, err := lancemanifest.ParseManifestName(path.Base(a.Key))
		if err != nil || m.Staging || m.Detached || m.Version == 0 || m.Version > redisstate.MaxVersion {
			continue
		}
		out = append(out, foundVersion{version: m.Version, path: a.Key, size: a.Size})
	}
	return out, nil
}

// seedFromStorage records the table's final manifests from storage and
// raises its head to the highest (heads only move up). With create, a
// table without versions gets head 0, so that version 1 can be claimed.
// It returns the head.
func (s *Store) seedFromStorage(ctx context.Context, table string, create bool) (uint64, error) {
	found, err := s.scanVersions(ctx, table)
	if err != nil {
		return 0, err
	}
	var head uint64
	for _, f := range found {
		head = max(head, f.version)
	}
	if head == 0 && !create {
		return 0, nil
	}
	return head, s.seedVersions(ctx, table, head, "", found)
}

// seedVersions runs the seed script in chunks. token is the recovery lock
// token when called by a recovery (the epoch is absent then).
func (s *Store) seedVersions(ctx context.Context, table string, head uint64, token string, found []foundVersion) error {
	const chunk = 200
	for start := 0; ; start += chunk {
		end := min(start+chunk, len(found))
		part := make([]redisstate.Found, 0, end-start)
		for _, f := range found[start:end] {
			part = append(part, redisstate.Found{Version: f.version, Path: f.path, Size: f.size, Staging: f.staging, Tx: f.tx})
		}
		err := s.withEpoch(ctx, func() (redisstate.Status, error) {
			r, err := s.rs.Seed(ctx, table, head, token, part)
			return r.Status, err
		})
		if err != nil {
			return err
		}
		if end >= len(found) {
			return nil
		}
	}
}

// RecoveryStats says what a recovery did.
type RecoveryStats struct {
	Transactions   int // commit records found
	RolledForward  int // of which committed now (or found committed)
	Voided         int // of which could never commit, and were removed
	Stuck          int // of which are partly final and cannot be completed (logged, kept)
	TablesReseeded int
	Duration       time.Duration
}

// Catalog is the catalog a Store's claims belong to (NewIn), as the
// Store reaches it. Recovering from a Redis that lost the catalog's state
// is the catalog's work, not the claims' alone (it rebuilds what the
// catalog keeps on top of them: its object index), and so is finishing a
// committed transaction (applying its catalog part): the Store runs the
// claims' steps, the Catalog the rest. A Store of its own (New) has no
// Catalog: it recovers its claims only, and its transactions have no
// catalog part.
type Catalog interface {
	// Recover rebuilds the catalog's Redis state from storage when Redis
	// lost it, driving a Recovery (BeginRecovery) through its steps;
	// it returns at once when Redis holds the catalog's epoch.
	Recover(ctx context.Context) (RecoveryStats, error)
	// CompleteTxn applies a committed transaction's catalog part once
	// its members are final — called by the coordinator, a helping
	// reader, or a recovery (TxnCommit.RecoveryToken set) — before the
	// transaction is cleaned up. It must be idempotent.
	CompleteTxn(ctx context.Context, c TxnCommit) error
	// Name names a chain (a table's directory, or a branch's under it)
	// in errors as the catalog's callers know it: the table's id and
	// the branch; "" for a directory no table has. Errors only call it,
	// and it must not do I/O: a claim refused under contention is
	// answered with it.
	Name(chain string) string
	// NoteManifest is given the bytes of a committed version's final
	// manifest where the claim store read them anyway: a claim made
	// before its staging object was seen reads its final manifest after
	// the reply, for its size (retract.go's prove), and the version's
	// statistics then need no read of their own. path is relative to the
	// catalog root.
	NoteManifest(path string, data []byte)
}

// Recover rebuilds the catalog's Redis state from object storage when the
// epoch key is missing (Redis lost state): every transaction with a commit
// record is rolled forward (or removed if it can never commit), the heads
// Redis still has are raised to what storage holds, the catalog sequence is
// raised to its floor, and a new epoch opens claims again. Heads of other
// tables are seeded from storage on first use. Only one process recovers at
// a time (a lock in Redis); the others wait for the epoch. Recover returns
// at once when the epoch is present. A Store in a catalog (NewIn) runs
// the catalog's recovery (Catalog.Recover).
func (s *Store) Recover(ctx context.Context) error {
	_, err := s.RecoverWithStats(ctx)
	return err
}

// RecoverWithStats is Recover, reporting what it did (zero stats when
// nothing was needed or another process recovered).
func (s *Store) RecoverWithStats(ctx context.Context) (RecoveryStats, error) {
	if s.cat != nil {
		return s.cat.Recover(ctx)
	}
	r, err := s.BeginRecovery(ctx)
	if r == nil || err != nil {
		return RecoveryStats{}, err
	}
	err = r.WaitOut(ctx, false)
	if err == nil {
		_, err = r.RebuildClaims(ctx, 0)
	}
	var st RecoveryStats
	if err == nil {
		st, err = r.Finish(ctx)
	}
	return st, r.End(ctx, err)
}

// A Recovery is a recovery of the catalog's Redis state in progress
// (BeginRecovery). It holds the recovery lock, renewed while it lasts,
// and is driven through its steps in order: WaitOut, RebuildClaims, then
// whatever the catalog rebuilds on top of the claims under Token's lock,
// then Finish (a new epoch opens claims again). End, deferred, releases what
// an unfinished one holds and reports the outcome.
type Recovery struct {
	s     *Store
	token string
	start time.Time
	floor uint64
	stats RecoveryStats
	stop  chan struct{} // closed by End: the lock is no longer renewed
}

// BeginRecovery takes the recovery lock when Redis holds no epoch for the
// catalog; nil, with no error, when it does (or another process recovered
// meanwhile: it waits for that one's epoch, or for its lock to lapse).
// Only one recovery runs at a time in a process.
func (s *Store) BeginRecovery(ctx context.Context) (*Recovery, error) {
	s.recoverMu.Lock()
	for {
		open, err := s.rs.HasEpoch(ctx)
		if err != nil {
			s.recoverMu.Unlock()
			return nil, fmt.Errorf("redisclaim: recover: %w", err)
		}
		if open {
			s.recoverMu.Unlock()
			return nil, nil
		}
		token := uuid.NewString()
		ok, err := s.rs.LockRecovery(ctx, token, recoveryLockTTL)
		if err != nil {
			s.recoverMu.Unlock()
			return nil, fmt.Errorf("redisclaim: recover: %w", err)
		}
		if ok {
			// The previous holder may have opened the epoch just before we
			// took the lock.
			if open, err := s.rs.HasEpoch(ctx); err != nil || open {
				s.releaseLock(ctx, token)
				s.recoverMu.Unlock()
				return nil, err
			}
			r := &Recovery{s: s, token: token, start: time.Now(), stop: make(chan struct{})}
			go s.holdLock(ctx, token, r.stop)
			s.log.Info("redisclaim: Redis has no epoch for this catalog; recovering from object storage", "catalog", s.catalog)
			return r, nil
		}
		// Another process recovers: wait for its epoch (or its lock to lapse).
		select {
		case <-ctx.Done():
			s.recoverMu.Unlock()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Token is the recovery lock's token: the scripts that rebuild state while
// the epoch is absent check it.
func (r *Recovery) Token() string { return r.token }

// WaitOut waits out the writes a claim read from the lost state may
// still entitle (promotions, transaction records: they pass their gate
// within PromoteWindow of that reading, and land within another, a PUT in
// flight), so that what RebuildClaims reads from storage includes every
// one that lands (a claim of the new epoch then cannot take its version:
// a transaction would be left partly committed). A fresh catalog (it
// never made anything durable) has none, and does not wait.
func (r *Recovery) WaitOut(ctx context.Context, fresh bool) error {
	if fresh {
		return nil
	}
	return sleepCtx(ctx, 2*r.s.window)
}

// RebuildClaims rebuilds the claims: it raises the catalog sequence to
// floor (the highest durable outside Redis, read after WaitOut: what the
// recovery appends must not reuse sequences), rolls every transaction
// with a commit record forward or voids it (a committed one's catalog
// part completed by Catalog.CompleteTxn), and raises the heads Redis
// still has to storage's.
func (r *Recovery) RebuildClaims(ctx context.Context, floor uint64) (RecoveryStats, error) {
	s, st := r.s, &r.stats
	r.floor = floor
	if res, err := s.rs.OpenEpoch(ctx, "", floor, r.token, false); err != nil {
		return *st, err
	} else if res != redisstate.OK {
		return *st, nserror.New(nserror.ServiceUnavailable, "redisclaim: recovery lost its lock")
	}

	// Transactions with a commit record: roll forward or void. Every
	// committed one's members are made final before any is completed:
	// completing appends its catalog part to the commit log, and the
	// first entry after the loss has the materializer read storage for
	// the lost sequences (manifesttable's rederiveGap) — it must find
	// every rolled-forward member there, or a transaction's versions
	// would be re-derived at two losses' sequences.
	var committed []txnRecord
	for a, err := range s.objs.List(ctx, txnPrefix) {
		if err != nil {
			return *st, err
		}
		raw, err := s.objs.Get(ctx, a.Key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue // settled meanwhile
		}
		if err != nil {
			return *st, err
		}
		rec, err := parseTxnRecord(raw)
		if err != nil {
			s.log.Error("redisclaim: recovery skips an unreadable transaction record", "key", a.Key, "err", err)
			continue
		}
		st.Transactions++
		outcome, err := s.rollForward(ctx, rec, r.token)
		if err != nil {
			return *st, err
		}
		switch outcome {
		case txnCommitted:
			st.RolledForward++
			committed = append(committed, rec)
		case txnVoided:
			st.Voided++
		case txnStuck:
			st.Stuck++
		}
		if st.Transactions%100 == 0 {
			s.log.Info("redisclaim: recovery progress", "transactions", st.Transactions)
		}
	}
	for _, rec := range committed {
		if err := s.settleCommitted(ctx, rec, r.token); err != nil {
			return *st, err
		}
	}

	// Heads Redis still has (a partial loss) rise to storage's.
	tables, err := s.rs.HeadChains(ctx)
	if err != nil {
		return *st, err
	}
	for _, t := range tables {
		found, err := s.scanVersions(ctx, t)
		if err != nil {
			return *st, err
		}
		var head uint64
		for _, f := range found {
			head = max(head, f.version)
		}
		if err := s.seedVersions(ctx, t, head, r.token, found); err != nil {
			return *st, err
		}
		st.TablesReseeded++
	}
	return *st, nil
}

// Finish opens a new epoch: claims are accepted again, and the lock is
// released.
func (r *Recovery) Finish(ctx context.Context) (RecoveryStats, error) {
	s, st := r.s, &r.stats
	epoch := uuid.NewString()
	res, err := s.rs.OpenEpoch(ctx, epoch, r.floor, r.token, true)
	if err != nil {
		return *st, err
	}
	if res != redisstate.OK {
		return *st, nserror.New(nserror.ServiceUnavailable, "redisclaim: recovery lost its lock before it finished")
	}
	st.Duration = time.Since(r.start)
	s.log.Info("redisclaim: recovery done", "catalog", s.catalog, "transactions", st.Transactions,
		"rolled_forward", st.RolledForward, "voided", st.Voided, "stuck", st.Stuck, "tables_reseeded", st.TablesReseeded, "duration", st.Duration)
	return *st, nil
}

// End ends the recovery with err, its outcome: it stops renewing the lock
// and releases it (a finished recovery's is released already), reports
// the outcome to the Observer, lets the next recovery of this process
// begin, and returns err.
func (r *Recovery) End(ctx context.Context, err error) error {
	s := r.s
	close(r.stop)
	s.releaseLock(context.WithoutCancel(ctx), r.token)
	if s.obs != nil && s.obs.Recovery != nil {
		s.obs.Recovery(r.stats, err)
	}
	s.recoverMu.Unlock()
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// recoveryLockTTL is how long the recovery lock outlives its last
// renewal (a third of it apart): a recovery whose process died holds the
// others up at most this long.
const recoveryLockTTL = 15 * time.Second

// releaseRetries is how long releaseLock tries: a recovery that failed
// because Redis changed hands (a failover) releases its lock on the new
// primary once it answers, rather than leaving it to lapse.
const releaseRetries = 5 * time.Second

// releaseLock deletes the recovery lock if token still holds it.
func (s *Store) releaseLock(ctx context.Context, token string) {
	for deadline := time.Now().Add(releaseRetries); ; {
		_, err := s.rs.UnlockRecovery(ctx, token)
		if err == nil || time.Now().After(deadline) || sleepCtx(ctx, 100*time.Millisecond) != nil {
			return
		}
	}
}

// holdLock keeps the recovery lock alive while the recovery runs.
func (s *Store) holdLock(ctx context.Context, token string, stop <-chan struct{}) {
	t := time.NewTicker(recoveryLockTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = s.rs.RenewRecovery(ctx, token, recoveryLockTTL)
		}
	}
}

// memberState is what storage says of one transaction member.
type memberState int

const (
	memberFree    memberState = iota // final absent, staging present: can be finalized
	memberFinal                      // the final manifest holds the member's bytes
	memberBlocked                    // the final manifest holds other bytes
	memberGone                       // neither final nor staging manifest exists
)

func (m memberState) String() string {
	return [...]string{"free", "final", "blocked", "gone"}[m]
}

// rollForward decides a transaction from storage alone, while Redis is
// closed (no epoch). A record exists only for a transaction whose claims
// all succeeded, so it commits whenever every member can still be
// finalized (its members are then made final and recorded in Redis; the
// caller settles it: settleCommitted); if one cannot and none is final,
// it never committed anywhere and its record is removed. A transaction with some members final and
// others blocked cannot be completed: that is reported loudly and its
// record kept for an operator; recovery goes on.
func (s *Store) rollForward(ctx context.Context, rec txnRecord, token string) (txnOutcome, error) {
	states := make([]memberState, len(rec.Members))
	anyFinal, allFinalizable := false, true
	for i, m := range rec.Members {
		st, err := s.memberStateOf(ctx, m)
		if err != nil {
			return 0, err
		}
		states[i] = st
		anyFinal = anyFinal || st == memberFinal
		allFinalizable = allFinalizable && (st == memberFree || st == memberFinal)
	}
	switch {
	case anyFinal && !allFinalizable:
		s.log.Error("redisclaim: a committed transaction cannot be completed: a member's version holds other bytes or its manifests are gone",
			"txn", rec.TxnID, "states", fmt.Sprint(states))
		return txnStuck, nil
	case !allFinalizable:
		s.log.Warn("redisclaim: recovery voids a transaction that never committed", "txn", rec.TxnID, "states", fmt.Sprint(states))
		if err := s.objs.Delete(ctx, txnKey(rec.TxnID)); err != nil {
			return 0, err
		}
		for i, m := range rec.Members {
			if states[i] == memberFree {
				s.discard(m.StagingPath)
			}
		}
		return txnVoided, nil
	}
	for _, m := range rec.Members {
		if err := s.finalizeMember(ctx, rec.TxnID, m); err != nil {
			return 0, err
		}
		// Record the member with its staging path and transaction, so that
		// a retry of the same commit is recognized as a duplicate.
		f := foundVersion{version: m.Version, path: m.FinalPath, size: m.Size, staging: m.StagingPath, tx: rec.TxnID}
		if err := s.seedVersions(ctx, m.Table, m.Version, token, []foundVersion{f}); err != nil {
			return 0, err
		}
	}
	return txnCommitted, nil
}

// settleCommitted ends a transaction rollForward committed: its catalog
// part is completed, its staging objects discarded and its record
// removed (a recovery that dies before rolls it forward again: every
// member is final then, and completing is idempotent).
func (s *Store) settleCommitted(ctx context.Context, rec txnRecord, token string) error {
	if err := s.completeTxn(ctx, rec, token); err != nil {
		return err
	}
	for _, m := range rec.Members {
		s.discard(m.StagingPath)
	}
	return s.objs.Delete(ctx, txnKey(rec.TxnID))
}

type txnOutcome int

const (
	txnCommitted txnOutcome = iota + 1
	txnVoided
	txnStuck
)

func (s *Store) memberStateOf(ctx context.Context, m txnMember) (memberState, error) {
	fin, ferr := s.objs.Get(ctx, m.FinalPath)
	stg, serr := s.objs.Get(ctx, m.StagingPath)
	for _, err := range []error{ferr, serr} {
		if err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return 0, err
		}
	}
	switch {
	case ferr == nil && serr == nil:
		if string(fin) == string(stg) {
			return memberFinal, nil
		}
		return memberBlocked, nil
	case ferr == nil:
		// A member's staging object is deleted only after it was finalized.
		if int64(len(fin)) == m.Size {
			return memberFinal, nil
		}
		return memberBlocked, nil
	case serr == nil:
		return memberFree, nil
	}
	return memberGone, nil
}

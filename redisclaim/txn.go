package redisclaim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// MaxBatch bounds the tables of one multi-table commit.
const MaxBatch = 1000

// Entry is one table's part of a multi-table commit.
type Entry struct {
	Table       string
	Version     uint64
	StagingPath string
	Size        int64
	ETag        string
}

// Batch is a committed multi-table transaction.
type Batch struct {
	TxnID string
	// Seq is the catalog sequence at which all members became visible.
	Seq       uint64
	Locations []Location
	// Deleted counts the version records removed, per Extras.Deletions.
	Deleted []int
}

// txnRecord is a transaction's commit record, written create-only to
// __manifest/_txns/<id>.json. Its bytes are fixed when the transaction is
// claimed (and kept in Redis), so every writer of the record — the
// coordinator or a helper — writes the same bytes.
type txnRecord struct {
	TxnID     string          `json:"txn_id"`
	Catalog   string          `json:"catalog"`
	CreatedAt time.Time       `json:"created_at"`
	Members   []txnMember     `json:"members"`
	Extra     json.RawMessage `json:"extra,omitempty"`
}

type txnMember struct {
	Table       string `json:"table"`
	Version     uint64 `json:"version"`
	StagingPath string `json:"staging_path"`
	FinalPath   string `json:"final_path"`
	Size        int64  `json:"size"`
	ETag        string `json:"etag,omitempty"`
}

func txnKey(id string) string { return txnPrefix + id + ".json" }

func parseTxnRecord(b []byte) (txnRecord, error) {
	var r txnRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("redisclaim: corrupt transaction record: %w", err)
	}
	if r.TxnID == "" || len(r.Members) == 0 {
		return r, errors.New("redisclaim: transaction record without id or members")
	}
	return r, nil
}

var errEpochChanged = errors.New("redisclaim: Redis state changed under a transaction")

// errTxnGone: the transaction settled (and was cleaned up) while this
// helper was looking at it; re-read the state.
var errTxnGone = errors.New("redisclaim: the transaction settled meanwhile")

// BatchPut commits one new version of each of several tables atomically:
// every member gets its version or none does.
//
// Protocol: one script checks every member (version == head+1) and claims
// all with one transaction id; the transaction record is written
// create-only to object storage (the commit point); a second script
// confirms the claims still stand in the same Redis epoch; then every
// member is finalized (create-only copy), flipped, and its staging object
// deleted. A crash anywhere after the claim is finished by the next reader
// of any member (or by recovery), never undone.
func (s *Store) BatchPut(ctx context.Context, entries []Entry) (Batch, error) {
	if len(entries) == 0 {
		return Batch{}, nserror.New(nserror.InvalidInput, "a batch commits 1 to %d tables, not 0", MaxBatch)
	}
	return s.Commit(ctx, entries, nil)
}

// Commit is BatchPut with the state changes of a layer above made in the
// same atomic step (see Extras). Without entries it is not a transaction:
// the guards, writes, deletions and log entries happen in one script, and
// Batch.Seq is their catalog sequence.
func (s *Store) Commit(ctx context.Context, entries []Entry, x *Extras) (Batch, error) {
	if len(entries) > MaxBatch {
		return Batch{}, nserror.New(nserror.InvalidInput, "a batch commits 1 to %d tables, not %d", MaxBatch, len(entries))
	}
	if len(entries) == 0 {
		return s.commitExtras(ctx, x)
	}
	seen := map[string]bool{}
	es := make([]entry, len(entries))
	missing := 0
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, in := range entries {
		if seen[in.Table] {
			return Batch{}, nserror.New(nserror.InvalidInput, "table %s appears twice in one batch", s.name(in.Table))
		}
		seen[in.Table] = true
		if _, err := checkStaging(in.Table, in.Version, in.StagingPath); err != nil {
			return Batch{}, err
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			e, found, err := s.stagedEntry(ctx, in.Table, in.Version, in.StagingPath, in.Size, in.ETag, false)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if !found {
				missing++
			}
			es[i] = e
		})
	}
	wg.Wait()
	if firstErr != nil {
		return Batch{}, firstErr
	}
	if missing > 0 {
		// A retry after a lost reply: the staging objects were consumed.
		return s.retriedBatch(ctx, es)
	}

	txnID := ""
	if x != nil && x.TxnID != "" {
		txnID = x.TxnID
	} else {
		id, err := uuid.NewV7()
		if err != nil {
			return Batch{}, err
		}
		txnID = id.String()
	}
	rec := txnRecord{TxnID: txnID, Catalog: s.catalog, CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	if x != nil && len(x.Extra) > 0 {
		rec.Extra = x.Extra
	}
	for _, e := range es {
		rec.Members = append(rec.Members, txnMember{Table: e.table, Version: e.version, StagingPath: e.staging,
			FinalPath: e.final, Size: e.size})
	}
	recBytes, err := json.Marshal(rec)
	if err != nil {
		return Batch{}, err
	}
	observed := time.Now() // the claims exist no earlier than this
	c, err := s.claim(ctx, rec.TxnID, recBytes, es, x)
	if err != nil {
		var ce *ConflictError
		if errors.As(err, &ce) {
			s.discardUnclaimed(ctx, es)
		}
		return Batch{}, err
	}
	if c.dup {
		txnID = c.recs[0].TxnID
	}
	if err := s.at(ctx, StepClaimed, es[0].table, es[0].version); err != nil {
		return Batch{}, err
	}
	var known []byte
	if !c.dup {
		known = recBytes // the coordinator knows its record; helpers read it
	}
	if err := s.helpTxnRecord(ctx, txnID, c.epoch, known, observed); err != nil && !errors.Is(err, errTxnGone) {
		if errors.Is(err, errEpochChanged) {
			return Batch{}, nserror.New(nserror.ServiceUnavailable,
				"transaction %s: Redis lost its state while committing; recovery decides the outcome, retry the same request to learn it", txnID)
		}
		return Batch{}, err
	}
	if c.dup {
		return s.batchResult(ctx, txnID, es)
	}
	b := Batch{TxnID: txnID, Seq: c.seq, Deleted: c.deleted}
	for i, e := range es {
		loc := locationOf(c.recs[i], e.table, e.version)
		loc.CommittedAt = rec.CreatedAt
		b.Locations = append(b.Locations, loc)
	}
	return b, nil
}

// retriedBatch answers a BatchPut whose staging objects are gone: every
// member must be committed with its staging path, by one transaction.
func (s *Store) retriedBatch(ctx context.Context, es []entry) (Batch, error) {
	txn := ""
	for _, e := range es {
		loc, err := s.resolveVersion(ctx, e.table, e.version)
		if err != nil || loc.StagingPath != e.staging || loc.TxnID == "" || (txn != "" && loc.TxnID != txn) {
			return Batch{}, nserror.New(nserror.InvalidInput, "staging manifest %s does not exist", e.staging)
		}
		txn = loc.TxnID
	}
	return s.batchResult(ctx, txn, es)
}

func (s *Store) batchResult(ctx context.Context, txnID string, es []entry) (Batch, error) {
	b := Batch{TxnID: txnID}
	for _, e := range es {
		loc, err := s.resolveVersion(ctx, e.table, e.version)
		if err != nil {
			return Batch{}, err
		}
		if loc.Seq > b.Seq {
			b.Seq = loc.Seq
		}
		b.Locations = append(b.Locations, loc)
	}
	return b, nil
}

// helpTxn finishes transaction id, whose claims were made or read in
// epoch (observed: when, before the script that returned them ran): write
// its record (create-only; the same bytes whoever writes them), confirm
// the claims, finalize and flip every member, clean up. errEpochChanged
// means Redis lost state in between: recovery decides.
func (s *Store) helpTxn(ctx context.Context, id, epoch string, observed time.Time) error {
	return s.helpTxnRecord(ctx, id, epoch, nil, observed)
}

// helpTxnRecord is helpTxn for a caller that may already hold the record's
// bytes (the coordinator).
//
// The record is written only within PromoteWindow of reading the claims
// in Redis (later, Redis is read again): a recovery waits that long before
// it lists the records in storage, so a record written after a loss is
// never missed by the recovery that opens the next epoch.
func (s *Store) helpTxnRecord(ctx context.Context, id, epoch string, known []byte, observed time.Time) error {
	raw, inRedis, err := known, true, error(nil)
	if raw == nil {
		observed = time.Now()
		raw, inRedis, err = s.rs.TxnRecord(ctx, id)
	}
	switch {
	case err == nil && !inRedis:
		// Settled and cleaned up, or Redis lost it: storage has the record
		// if anything does.
		raw, err = s.objs.Get(ctx, txnKey(id))
		if errors.Is(err, objstore.ErrNotFound) {
			return s.confirmSettled(ctx, id, epoch)
		}
		if err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		// The transaction's hash stands in Redis while its claims do.
		err := s.putTxnRecord(ctx, id, raw, s.fence(ctx, &observed, func(ctx context.Context) error {
			ok, err := s.rs.HasTxn(ctx, id)
			if err == nil && !ok {
				return errEpochChanged
			}
			return err
		}))
		if err != nil {
			return err
		}
	}
	rec, err := parseTxnRecord(raw)
	if err != nil {
		return err
	}
	if err := s.at(ctx, StepTxnRecorded, rec.Members[0].Table, rec.Members[0].Version); err != nil {
		return err
	}
	ok, err := s.confirm(ctx, epoch, rec)
	if err != nil {
		return err
	}
	if !ok {
		return errEpochChanged
	}
	return s.finishTxn(ctx, rec)
}

// confirmSettled handles a transaction whose record is gone from Redis and
// storage: it settled (every member final) unless Redis lost it.
func (s *Store) confirmSettled(ctx context.Context, id, epoch string) error {
	cur, err := s.rs.CurrentEpoch(ctx)
	if err != nil {
		return err
	}
	if cur != epoch {
		return errEpochChanged
	}
	// Settled and cleaned up between our read of a staged member and now
	// (callers re-read), or corrupt (callers find the member still staged).
	return errTxnGone
}

func (s *Store) putTxnRecord(ctx context.Context, id string, raw []byte, gate func() error) error {
	err := s.objs.PutIfAbsentWith(ctx, txnKey(id), raw, objstore.WriteOptions{Gate: gate})
	if errors.Is(err, objstore.ErrAlreadyExists) {
		have, gerr := s.objs.Get(ctx, txnKey(id))
		if errors.Is(gerr, objstore.ErrNotFound) {
			return errTxnGone // written and deleted by the coordinator meanwhile
		}
		if gerr != nil {
			return gerr
		}
		if !bytes.Equal(have, raw) {
			return nserror.New(nserror.Internal, "transaction %s: a different commit record exists at %s", id, txnKey(id))
		}
		return nil
	}
	return err
}

func (s *Store) confirm(ctx context.Context, epoch string, rec txnRecord) (bool, error) {
	members := make([]redisstate.Member, len(rec.Members))
	for i, m := range rec.Members {
		members[i] = redisstate.Member{Table: m.Table, Version: m.Version, Staging: m.StagingPath}
	}
	return s.rs.Confirm(ctx, epoch, rec.TxnID, members)
}

// finishTxn finalizes, flips and cleans up every member of a committed
// transaction. Finalizing is create-only and idempotent, so several
// helpers may run it at once.
func (s *Store) finishTxn(ctx context.Context, rec txnRecord) error {
	errs := make([]error, len(rec.Members))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, m := range rec.Members {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = s.finalizeMember(ctx, rec.TxnID, m)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := s.completeTxn(ctx, rec, ""); err != nil {
		return err
	}
	// Past the commit point, every member durable. Flip and clean up; a
	// failure here is repaired by the next helper.
	// The flips run concurrently, so the pipeliner sends them together.
	for _, m := range rec.Members {
		if err := s.at(ctx, StepFlipping, m.Table, m.Version); err != nil {
			return err
		}
	}
	flipped := make([]bool, len(rec.Members))
	for i, m := range rec.Members {
		wg.Go(func() {
			ok, err := s.flip(ctx, m.Table, m.Version, memberRecord(rec.TxnID, m))
			if err != nil || !ok {
				s.log.Warn("redisclaim: transaction member committed but not flipped", "txn", rec.TxnID, "table", m.Table, "version", m.Version, "err", err)
				return
			}
			flipped[i] = true
		})
	}
	wg.Wait()
	for i, m := range rec.Members {
		if !flipped[i] {
			return nil
		}
		if err := s.at(ctx, StepFlipped, m.Table, m.Version); err != nil {
			return err
		}
	}
	if !s.objs.PromotesByRename() { // else staging was renamed into place
		for _, m := range rec.Members {
			s.discard(m.StagingPath)
		}
	}
	if err := s.objs.Delete(ctx, txnKey(rec.TxnID)); err != nil {
		s.log.Warn("redisclaim: deleting a settled transaction record", "txn", rec.TxnID, "err", err)
		return nil
	}
	if err := s.rs.DeleteTxn(ctx, rec.TxnID); err != nil {
		s.log.Warn("redisclaim: deleting a settled transaction's hash", "txn", rec.TxnID, "err", err)
	}
	return nil
}

func memberRecord(txn string, m txnMember) record {
	return record{State: redisstate.StateStaged, Staging: m.StagingPath, Final: m.FinalPath, Size: m.Size, ETag: m.ETag, TxnID: txn}
}

// finalizeMember copies one member create-only. Other bytes at its final
// path would mean the transaction's claim was not exclusive: corruption,
// reported loudly and never papered over.
func (s *Store) finalizeMember(ctx context.Context, txn string, m txnMember) error {
	_, err := s.objs.PromoteIfAbsent(ctx, m.StagingPath, m.FinalPath, objstore.WriteOptions{})
	switch {
	case err == nil:
	case errors.Is(err, objstore.ErrNotFound):
		a, herr := s.objs.Head(ctx, m.FinalPath)
		if herr != nil || a.Size != m.Size {
			return nserror.New(nserror.Internal, "transaction %s: member %s version %d has neither its staging manifest nor its final manifest", txn, m.Table, m.Version)
		}
	case errors.Is(err, objstore.ErrAlreadyExists):
		s.log.Error("redisclaim: a committed transaction's member version holds other bytes", "txn", txn, "table", m.Table, "version", m.Version)
		return nserror.New(nserror.Internal, "transaction %s: member %s version %d is occupied by other bytes", txn, m.Table, m.Version)
	default:
		return err
	}
	return s.at(ctx, StepFinalized, m.Table, m.Version)
}

// TxnCommit is what Catalog.CompleteTxn gets: a committed transaction.
type TxnCommit struct {
	ID    string
	Extra []byte
	// RecoveryToken is set when a recovery rolls the transaction forward
	// (the epoch is absent; scripts check the recovery lock instead).
	RecoveryToken string
}

// completeTxn has the catalog apply a committed transaction's catalog
// part (its Extra), if it has one; token is a recovery's lock token.
func (s *Store) completeTxn(ctx context.Context, rec txnRecord, token string) error {
	if s.cat == nil || len(rec.Extra) == 0 {
		return nil
	}
	return s.cat.CompleteTxn(ctx, TxnCommit{ID: rec.TxnID, Extra: rec.Extra, RecoveryToken: token})
}

// SeedHead makes sure Redis holds table's head — seeded from storage,
// "0" for a table without versions — and returns it, so that a guard on
// HeadsKey compares against a present field.
func (s *Store) SeedHead(ctx context.Context, table string) (uint64, error) {
	heads, _, err := s.LatestVersions(ctx, []string{table})
	if err != nil {
		return 0, err
	}
	if heads[0] > 0 {
		return heads[0], nil
	}
	return s.seedFromStorage(ctx, table, true)
}

// Tag is the hash tag every key of the catalog starts with: "{catalog}".
func (s *Store) Tag() string { return s.k.Tag() }

// Extras are what a layer above (the namespace service) commits together
// with a batch of versions: guards and writes on its own Redis state
// (keys of this catalog only; redisstate.GuardEq, HSet, …), version
// deletions (as DeleteVersions does, in the same atomic step), log
// entries, and bytes kept in the transaction record for Catalog.CompleteTxn. A
// failed guard is a *GuardError and nothing is written.
type Extras struct {
	// TxnID names the transaction (default: a new UUIDv7); it must be
	// unique.
	TxnID     string
	Guards    []redisstate.Guard
	Writes    []redisstate.Write
	Deletions []redisstate.Deletion
	Log       []redisstate.LogEntry
	Extra     []byte
}

// GuardError says which guard failed.
type GuardError struct{ Index int }

func (e *GuardError) Error() string {
	return fmt.Sprintf("redisclaim: guard %d does not hold", e.Index)
}

// commitExtras runs a claim without versions: the extras alone, atomically.
func (s *Store) commitExtras(ctx context.Context, x *Extras) (Batch, error) {
	if x == nil || len(x.Log) == 0 {
		return Batch{}, nserror.New(nserror.InvalidInput, "a commit without versions needs log entries")
	}
	c, err := s.claim(ctx, "", nil, nil, x)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Seq: c.seq, Deleted: c.deleted}, nil
}

// discardUnclaimed deletes the staging objects of a refused batch's
// members, but for one that a claim holds: a member may name the staging
// object of another writer's claim of the same version (a staging name
// carries its table and version), and that object is the other commit's
// to promote. Read failures keep the object (a later sweep takes it).
func (s *Store) discardUnclaimed(ctx context.Context, es []entry) {
	for _, e := range es {
		if _, cur, err := s.claimNow(ctx, e.table, e.version); err != nil || cur.Staging == e.staging {
			continue
		}
		s.discard(e.staging)
	}
}

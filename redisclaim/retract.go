package redisclaim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// Claiming first. Where the store refuses a conditional copy onto an
// existing key (objstore.Store.ConditionalCopy) and a writer gives its
// staged manifest's size, Put claims before it has seen the staging
// object: the claim is unproven (redisstate.Record.Unproven), and the
// commit waits for one round trip to the store instead of two. Every
// claim used to commit once made; an unproven one commits when its
// promotion finds the staging object, and is taken back (retract) when
// no promotion can. docs/protocol.md argues why that is safe; in short:
//
//   - no claim is made above an unproven one still staged (claim.lua's
//     PENDING: that one is finished first), so taking it back leaves no
//     hole;
//   - the materializer makes no row or event of an unproven claim before
//     it is final, and none of one taken back;
//   - taking back marks the record first, after which nothing promotes
//     it, waits until every promotion entitled by an earlier reading has
//     landed or given up, and only then looks for the final manifest:
//     found, the version committed after all.

var (
	// errRetracted: the unproven claim was taken back; the version does
	// not exist.
	errRetracted = errors.New("redisclaim: the unproven claim was taken back: its staging object does not exist")
	// errRetracting is a gate's answer to a promotion of a claim being
	// taken back.
	errRetracting = errors.New("redisclaim: the claim is being taken back")
)

// retract takes back the unproven claim rec of version when its staging
// object was not found, or finishes taking it back: it marks the record
// (from then on no reading entitles a promotion, and a gate that reads it
// again refuses; with replicas, once one has the mark), waits twice
// PromoteWindow (a promotion entitled by a
// reading before the mark lands within that, or never), and looks for the
// final manifest. Found, the version committed after all (a helper
// promoted a staging object that appeared late): it is flipped and its
// location returned. Not found, the record is removed and the head
// lowered below it: errRetracted.
func (s *Store) retract(ctx context.Context, table string, version uint64, rec record) (Location, error) {
	st, _, err := s.rs.RetractMark(ctx, table, version, rec.Staging, s.now())
	marked := time.Now()
	if err != nil {
		return Location{}, fmt.Errorf("redisclaim: retract: %w", err)
	}
	switch st {
	case redisstate.Final:
		return s.resolveVersion(ctx, table, version)
	case redisstate.Gone:
		return Location{}, errRetracted
	case redisstate.Proven:
		return Location{}, nserror.New(nserror.Internal, "version %d of table %s: a proven claim cannot be taken back", version, s.name(table))
	}
	// The wait rests on the mark: a failover must not take it back, or
	// a reader of the new primary could promote a late upload after the
	// final manifest was looked for.
	if err := s.replicas.Confirm(ctx); err != nil {
		return Location{}, err
	}
	if err := s.at(ctx, StepRetracting, table, version); err != nil {
		return Location{}, err
	}
	t := time.NewTimer(time.Until(marked.Add(2 * s.window)))
	select {
	case <-ctx.Done():
		t.Stop()
		return Location{}, ctx.Err() // the next reader finishes it
	case <-t.C:
	}
	a, err := s.objs.Head(ctx, rec.Final)
	switch {
	case err == nil:
		rec.Size, rec.Unproven = a.Size, false
		loc := locationOf(rec, table, version)
		return loc, s.repair(ctx, table, version, rec)
	case !errors.Is(err, objstore.ErrNotFound):
		return Location{}, err
	}
	removed, err := s.rs.RetractRemove(ctx, table, version, rec.Staging)
	if err != nil {
		return Location{}, fmt.Errorf("redisclaim: retract: %w", err)
	}
	if !removed {
		// Someone else finished taking it back, or the mark was lost (a
		// failover to a replica without it): read what there is now.
		_, cur, err := s.claimNow(ctx, table, version)
		if err != nil {
			return Location{}, err
		}
		if cur.Retracted() || cur.Staging != rec.Staging {
			return Location{}, errRetracted // (and the version, if any, another claim's)
		}
		loc, err := s.resolveVersion(ctx, table, version)
		if errors.Is(err, nserror.ErrTableVersionNotFound) {
			return Location{}, errRetracted // taken back by that reading
		}
		return loc, err
	}
	s.log.Info("redisclaim: an unproven claim was taken back: its staging manifest does not exist",
		"table", table, "version", version, "staging", rec.Staging)
	// The answer rests on the removal: a failover must not bring the
	// claim back.
	if err := s.replicas.Confirm(ctx); err != nil {
		return Location{}, err
	}
	return Location{}, errRetracted
}

// prove reads the final manifest of an unproven claim that committed: the
// record's size becomes what storage holds, and the bytes go to
// the catalog (Catalog.NoteManifest) for the version's statistics.
func (s *Store) prove(ctx context.Context, rec record) (record, error) {
	data, err := s.objs.Get(ctx, rec.Final)
	if err != nil {
		return rec, err
	}
	if s.cat != nil {
		s.cat.NoteManifest(rec.Final, data)
	}
	rec.Size, rec.Unproven = int64(len(data)), false
	return rec, nil
}

// Settle finishes a staged version as a reader would — promoting it, or
// taking an unproven claim back — and reports nothing else: the
// materializer calls it for an unproven claim that stayed staged (its
// writer gone) before it makes the version's row.
func (s *Store) Settle(ctx context.Context, table string, version uint64) error {
	_, err := s.resolveVersion(ctx, table, version)
	if errors.Is(err, nserror.ErrTableVersionNotFound) {
		return nil
	}
	return err
}

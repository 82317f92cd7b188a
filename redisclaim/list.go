package redisclaim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
)

// ListOptions pages a version listing.
type ListOptions struct {
	// Descending lists the newest first.
	Descending bool
	// After is an exclusive start version (0: from the first or newest).
	After uint64
	// Limit is the page size (0: 1000).
	Limit int
}

// ListVersions returns one page of a table's versions in version order,
// finishing any half-done commit it meets, and the start of the next page
// (0 when this is the last).
func (s *Store) ListVersions(ctx context.Context, table string, opts ListOptions) ([]Location, uint64, error) {
	if err := checkTable(table); err != nil {
		return nil, 0, err
	}
	limit := opts.Limit
	if limit <= 0 || limit > 10000 {
		limit = 1000
	}
	var out []Location
	var next uint64
	var r redisstate.ListReply
	err := s.WithEpoch(ctx, "redisclaim: listing versions of "+table, 0, func() (redisstate.Status, error) {
		var err error
		if r, err = s.rs.List(ctx, table, opts.Descending, opts.After, limit+1); err != nil {
			return "", fmt.Errorf("redisclaim: list: %w", err)
		}
		return r.Status, nil
	}, func(redisstate.Status) (bool, error) {
		if r.Status == redisstate.NoHead {
			// Seeded with head 0 when storage has no versions either: the
			// table's next list (Lance lists a new table's versions twice
			// while it creates it) and its first claim then need no
			// listing of storage.
			_, err := s.seedFromStorage(ctx, table, true)
			return false, err
		}
		out = out[:0]
		for i, v := range r.Versions {
			rec := r.Records[i]
			loc := locationOf(rec, table, v)
			if rec.Staged() {
				var err error
				if loc, err = s.resolveVersion(ctx, table, v); err != nil {
					if rec.Unproven && errors.Is(err, nserror.ErrTableVersionNotFound) {
						continue // taken back: it never was a version
					}
					return false, err
				}
			}
			out = append(out, loc)
		}
		if len(out) > limit {
			out = out[:limit]
			next = out[limit-1].Version
		}
		return true, nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, next, nil
}

// Range is a range of versions: Start inclusive, End exclusive (0: no end).
type Range = commitlog.Range

// DeleteVersions forgets the records of the versions in ranges and returns
// how many it removed; the head never moves. Every version acknowledged
// before the call is among them: a commit it finds half-finished (claimed,
// its record not yet flipped) it finishes first, as a reader does; a
// commit that begins while it runs may be kept. Object storage is not
// touched: Lance deletes its own files.
func (s *Store) DeleteVersions(ctx context.Context, table string, ranges []Range) (int, error) {
	if err := checkDeletion(table, ranges); err != nil {
		return 0, err
	}
	// Commonly nothing is half-finished and one script deletes.
	n, staged, err := s.runDeletion(ctx, table, redisstate.DeleteSettle, ranges)
	if err != nil || len(staged) == 0 {
		return n, err
	}
	if err := s.finish(ctx, table, staged); err != nil {
		return 0, err
	}
	n, _, err = s.runDeletion(ctx, table, redisstate.DeleteNow, ranges)
	return n, err
}

// checkDeletion checks a deletion's table and ranges.
func checkDeletion(table string, ranges []Range) error {
	if err := checkTable(table); err != nil {
		return err
	}
	if len(ranges) == 0 || len(ranges) > 1000 {
		return nserror.New(nserror.InvalidInput, "delete 1 to 1000 version ranges, not %d", len(ranges))
	}
	for _, rg := range ranges {
		if rg.End != 0 && rg.End <= rg.Start {
			return nserror.New(nserror.InvalidInput, "version range [%d, %d) is empty or reversed", rg.Start, rg.End)
		}
	}
	return nil
}

// runDeletion runs delete_versions.lua in mode over ranges (checked) and
// returns how many versions it deleted or the staged versions it found
// instead.
func (s *Store) runDeletion(ctx context.Context, table, mode string, ranges []Range) (int, []uint64, error) {
	var r redisstate.DeleteVersionsReply
	err := s.withEpoch(ctx, func() (redisstate.Status, error) {
		var err error
		r, err = s.rs.DeleteVersions(ctx, table, mode, ranges)
		return r.Status, err
	})
	return r.Deleted, r.Staged, err
}

// finish finishes a table's half-done commits at versions, helping as a
// reader does, so that a deletion that follows finds them final: a writer
// replies before it flips its record, and without this a version just
// acknowledged would look in flight to the deletion and be kept.
func (s *Store) finish(ctx context.Context, table string, versions []uint64) error {
	for _, v := range versions {
		if _, err := s.resolveVersion(ctx, table, v); err != nil && !errors.Is(err, nserror.ErrTableVersionNotFound) {
			return err
		}
	}
	return nil
}

// LatestVersions returns the heads of several tables (0 for a table
// without versions) as of one catalog sequence, which it also returns: a
// multi-table commit is either wholly in the answer or not at all.
func (s *Store) LatestVersions(ctx context.Context, tables []string) ([]uint64, uint64, error) {
	for _, t := range tables {
		if err := checkTable(t); err != nil {
			return nil, 0, err
		}
	}
	seeded := false
	var r redisstate.LatestReply
	err := s.WithEpoch(ctx, "redisclaim: reading heads", 0, func() (redisstate.Status, error) {
		var err error
		if r, err = s.rs.Latest(ctx, tables); err != nil {
			return "", fmt.Errorf("redisclaim: latest: %w", err)
		}
		return r.Status, nil
	}, func(redisstate.Status) (bool, error) {
		if !slices.Contains(r.Known, false) || seeded {
			return true, nil
		}
		// Seed unknown tables from storage, then read all again at once.
		for i, t := range tables {
			if !r.Known[i] {
				if _, err := s.seedFromStorage(ctx, t, false); err != nil {
					return false, err
				}
			}
		}
		seeded = true
		return false, nil
	})
	if err != nil {
		return nil, 0, err
	}
	return r.Heads, r.Seq, nil
}

// settleDeletions finishes the half-done commits among the versions a
// claim's extras delete, before the claim (whose script then deletes the
// rest, as "delete" does).
func (s *Store) settleDeletions(ctx context.Context, x *Extras) error {
	if x == nil {
		return nil
	}
	for _, d := range x.Deletions {
		if err := checkDeletion(d.Table, d.Ranges); err != nil {
			return err
		}
		_, staged, err := s.runDeletion(ctx, d.Table, redisstate.DeleteProbe, d.Ranges)
		if err != nil {
			return err
		}
		if err := s.finish(ctx, d.Table, staged); err != nil {
			return err
		}
	}
	return nil
}

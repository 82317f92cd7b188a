package redisclaim

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/flightns/flightns/internal/commitlog"
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
	dir := "asc"
	if opts.Descending {
		dir = "desc"
	}
	after := ""
	if opts.After != 0 {
		after = strconv.FormatUint(opts.After, 10)
	}
	var out []Location
	var next uint64
	err := s.WithEpoch(ctx, "redisclaim: listing versions of "+table, 0, func() ([]any, error) {
		r, err := run(ctx, s.pipe, s.sc.list, []string{s.k.Epoch(), s.k.Heads(), s.k.Versions(table), s.k.Index(table)},
			table, dir, after, limit+1)
		if err != nil {
			return nil, fmt.Errorf("redisclaim: list: %w", err)
		}
		return r, nil
	}, func(raw []any) (bool, error) {
		r := reply(raw)
		if r.status() == "NOHEAD" {
			// Seeded with head 0 when storage has no versions either: the
			// table's next list (Lance lists a new table's versions twice
			// while it creates it) and its first claim then need no
			// listing of storage.
			_, err := s.seedFromStorage(ctx, table, true)
			return false, err
		}
		out = out[:0]
		for i := 3; i+1 < len(r); i += 2 {
			v, _ := strconv.ParseUint(r.str(i), 10, 64)
			rec, err := parseRecord(r.str(i + 1))
			if err != nil {
				return false, err
			}
			loc := rec.location(table, v)
			if rec.staged() {
				if loc, err = s.resolveVersion(ctx, table, v); err != nil {
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
	args, err := s.deletionArgs(table, ranges)
	if err != nil {
		return 0, err
	}
	// Commonly nothing is half-finished and one script deletes.
	n, staged, err := s.runDeletion(ctx, table, "settle", args)
	if err != nil || len(staged) == 0 {
		return n, err
	}
	if err := s.finish(ctx, table, staged); err != nil {
		return 0, err
	}
	n, _, err = s.runDeletion(ctx, table, "delete", args)
	return n, err
}

// deletionArgs checks a deletion and returns the delete_versions script's
// arguments from its mode on.
func (s *Store) deletionArgs(table string, ranges []Range) ([]any, error) {
	if err := checkTable(table); err != nil {
		return nil, err
	}
	if len(ranges) == 0 || len(ranges) > 1000 {
		return nil, nserror.New(nserror.InvalidInput, "delete 1 to 1000 version ranges, not %d", len(ranges))
	}
	args := make([]any, 0, 2*len(ranges))
	for _, rg := range ranges {
		if rg.End != 0 && rg.End <= rg.Start {
			return nil, nserror.New(nserror.InvalidInput, "version range [%d, %d) is empty or reversed", rg.Start, rg.End)
		}
		end := "+inf"
		if rg.End != 0 {
			end = strconv.FormatUint(rg.End, 10)
		}
		args = append(args, strconv.FormatUint(rg.Start, 10), end)
	}
	return args, nil
}

// runDeletion runs delete_versions.lua in mode over ranges (deletionArgs)
// and returns how many versions it deleted or the staged versions it
// found instead.
func (s *Store) runDeletion(ctx context.Context, table, mode string, ranges []any) (int, []uint64, error) {
	var n int
	var staged []uint64
	err := s.withEpoch(ctx, func() (reply, error) {
		r, err := run(ctx, s.pipe, s.sc.deleteVersions,
			[]string{s.k.Epoch(), s.k.Seq(), s.k.Log(), s.k.Versions(table), s.k.Index(table)},
			append([]any{table, s.logMaxLen, mode}, ranges...)...)
		if err != nil {
			return r, err
		}
		switch r.status() {
		case "OK":
			n = atoiOr(r.str(1), 0)
		case "STAGED":
			for i := 1; i < len(r); i++ {
				v, perr := strconv.ParseUint(r.str(i), 10, 64)
				if perr != nil {
					return r, fmt.Errorf("redisclaim: delete_versions replied version %q", r.str(i))
				}
				staged = append(staged, v)
			}
		}
		return r, nil
	})
	return n, staged, err
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
	args := make([]any, len(tables))
	for i, t := range tables {
		if err := checkTable(t); err != nil {
			return nil, 0, err
		}
		args[i] = t
	}
	seeded := false
	var heads []uint64
	var seq uint64
	err := s.WithEpoch(ctx, "redisclaim: reading heads", 0, func() ([]any, error) {
		r, err := run(ctx, s.pipe, s.sc.latest, []string{s.k.Epoch(), s.k.Heads(), s.k.Seq()}, args...)
		if err != nil {
			return nil, fmt.Errorf("redisclaim: latest: %w", err)
		}
		return r, nil
	}, func(raw []any) (bool, error) {
		r := reply(raw)
		seq, _ = strconv.ParseUint(r.str(1), 10, 64)
		heads = make([]uint64, len(tables))
		missing := false
		for i := range tables {
			h := r.str(2 + i)
			if h == "" {
				missing = true
				continue
			}
			heads[i], _ = strconv.ParseUint(h, 10, 64)
		}
		if !missing || seeded {
			return true, nil
		}
		// Seed unknown tables from storage, then read all again at once.
		for i, t := range tables {
			if r.str(2+i) == "" {
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
	return heads, seq, nil
}

// settleDeletions finishes the half-done commits among the versions a
// claim's extras delete, before the claim (whose script then deletes the
// rest, as "delete" does).
func (s *Store) settleDeletions(ctx context.Context, x *Extras) error {
	if x == nil {
		return nil
	}
	for _, d := range x.Deletions {
		args, err := s.deletionArgs(d.Table, d.Ranges)
		if err != nil {
			return err
		}
		_, staged, err := s.runDeletion(ctx, d.Table, "probe", args)
		if err != nil {
			return err
		}
		if err := s.finish(ctx, d.Table, staged); err != nil {
			return err
		}
	}
	return nil
}

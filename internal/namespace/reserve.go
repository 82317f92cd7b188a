package namespace

import (
	"context"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// Table directories are disjoint and owned. The catalog reserves, in one
// sorted set of its Redis state (redisstate.Keys.Locs), the directory of
// every live table and of every table a drop keeps for undrop or is still
// deleting. A location is taken into the catalog only by the index change
// that reserves it, guarded in the same script (redisstate.GuardDisjoint)
// so that no reserved directory equals it, contains it or lies inside it,
// compared by path segment ("t1" and "t10" are apart): two declarations
// racing for nested directories cannot both win, and a dropped table's
// directory comes back only through undrop.
//
// A reservation ends with what holds it: a deregistration (its data
// stays, owned by nobody: registering it again needs the catalog's write
// role), a drop's deletion of the data once it is done, or the purge of a
// kept drop. A reservation left behind by a process that died (the data's
// tombstone names it) is released by `admin gc`; one left behind with
// nothing naming it only keeps a directory from being reused.
//
// Deleting a table's data (a drop, a purge, gc of a tombstone) spares
// what another table holds: nothing at all when the directory is a live
// table's or lies inside a reserved one, and every reserved directory
// below it. Catalogs written before this rule may hold nested tables;
// `admin verify` reports them.

// errOverlap is the refusal of a location that meets a reserved
// directory. It names no other object: the caller may not see it.
func errOverlap(loc string) error {
	return nserror.New(nserror.InvalidInput,
		"table location %q overlaps the directory of another table (or of a dropped table kept for undrop): table directories may neither equal, contain nor lie inside one another", loc)
}

// reserve guards that loc meets no reserved directory but except (the
// change's own reservation, "" for none), failing with overlap, and
// reserves it.
func (c *indexChange) reserve(loc, except string, overlap error) {
	c.guard(overlap, redisstate.GuardDisjoint(c.k.Locs(), loc, except))
	c.writes = append(c.writes, redisstate.ZAdd(c.k.Locs(), loc))
}

// release ends the reservation of loc.
func (c *indexChange) release(loc string) {
	c.writes = append(c.writes, redisstate.ZRem(c.k.Locs(), loc))
}

// Inside reports whether location loc is dir or lies inside it, by path
// segment.
func Inside(loc, dir string) bool {
	return loc == dir || strings.HasPrefix(loc, dir+"/")
}

// overlap reports whether two table locations meet: equal, or one inside
// the other.
func overlap(a, b string) bool { return Inside(a, b) || Inside(b, a) }

// claimLocation is the location a new table id declares (given by the
// caller, or chosen) or registers: validated, and, when it already holds
// objects that no table owns, only for a caller with the write role on
// the whole catalog (the data's owner is unknown: a deregistered table's,
// or written around the catalog), not for one whose grants stop at a
// namespace (a location that holds another table's data is refused as an
// overlap, as the guard of the index change that reserves it would).
func (s *Service) claimLocation(ctx context.Context, id api.ID, given string) (string, error) {
	loc, err := s.locationFor(ctx, id, given)
	if err != nil {
		return "", err
	}
	// A cleanup of a table that was at loc deletes what its plan found
	// there: a table made there meanwhile would lose its files.
	if held, err := s.rs.Held(ctx, s.k.Cleanup(loc)); err != nil {
		return "", err
	} else if held {
		return "", nserror.New(nserror.ConcurrentModification, "a cleanup of the table that was at %q is running: retry once it ends", loc)
	}
	return loc, nil
}

// locationFor is claimLocation's location, checked as its doc says.
func (s *Service) locationFor(ctx context.Context, id api.ID, given string) (string, error) {
	if given == "" {
		return defaultLocation(id), nil
	}
	loc, err := s.root.tableLocation(given)
	if err != nil {
		return "", err
	}
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Role >= auth.Write {
		return loc, nil
	}
	gs, err := s.Access().Grants(ctx)
	if err != nil {
		return "", err
	}
	if gs.RoleOn(p, api.ID{}) >= auth.Write {
		return loc, nil
	}
	for _, err := range s.objs.List(ctx, loc+"/") {
		if err != nil {
			return "", err
		}
		// Data is there: the table's own is its own (registered again),
		// another table's is refused as an overlap (the index change's
		// guard would refuse it too), anyone else's as data no table of
		// the caller's owns.
		a, err := s.reservedAround(ctx, loc)
		switch {
		case err != nil:
			return "", err
		case s.ownLocation(ctx, id, loc, a):
			return loc, nil
		case a.Reserved || a.Above || len(a.Below) > 0:
			return "", errOverlap(loc)
		}
		return "", nserror.New(nserror.PermissionDenied,
			"table location %q already holds data no table of yours owns: taking it into the catalog needs the write role on the whole catalog; %q has it on namespaces only", given, p.Name)
	}
	return loc, nil
}

// ownLocation reports whether loc is table id's own directory (a's live
// reservation is id's).
func (s *Service) ownLocation(ctx context.Context, id api.ID, loc string, a redisstate.Reservations) bool {
	if !a.Live || !a.Reserved {
		return false
	}
	owner, ok, err := s.indexField(ctx, s.k.ByLoc(), loc)
	return err == nil && ok && owner == id.String()
}

// Sparing is what a deletion of a table directory must leave alone.
type Sparing struct {
	// All: the directory is a live table's, or lies inside a reserved
	// directory; nothing of it may go.
	All bool
	// Dirs are the reserved directories inside it (each ending in '/'),
	// whose objects stay.
	Dirs []string
}

// reservedAround reads what the catalog's reservations in Redis hold
// about loc, in one MULTI with the epoch that vouches for it; a Redis
// that lost the catalog's state is ServiceUnavailable (nothing is decided
// on a guess).
func (s *Service) reservedAround(ctx context.Context, loc string) (redisstate.Reservations, error) {
	a, st, err := s.rs.ReservationsAround(ctx, loc)
	if err == nil && st == redisstate.NoEpoch {
		err = nserror.New(nserror.ServiceUnavailable, "the catalog's Redis state is being recovered; retry")
	}
	return a, err
}

// Sparing reads what a deletion of the data in loc must spare (see
// Sparing), from the catalog's reservations in Redis; kept holds
// locations known reserved besides (the drops kept for undrop, as `admin
// gc` reads them). A Redis that lost the catalog's state is an error:
// nothing is deleted on a guess.
func (ix Index) Sparing(ctx context.Context, loc string, kept []string) (Sparing, error) {
	s := ix.s
	a, err := s.reservedAround(ctx, loc)
	if err != nil {
		return Sparing{}, err
	}
	sp := Sparing{All: a.Live || a.Above}
	seen := map[string]bool{}
	for _, d := range a.Below {
		seen[d] = true
	}
	for _, k := range kept {
		switch {
		case k != loc && Inside(loc, k):
			sp.All = true
		case k != loc && Inside(k, loc):
			seen[k] = true
		}
	}
	for d := range seen {
		sp.Dirs = append(sp.Dirs, d+"/")
	}
	return sp, nil
}

// ReleaseLocation ends the reservation of loc unless a live table has it
// (a drop's deletion done, a purge, `admin gc` of a tombstone).
func (ix Index) ReleaseLocation(ctx context.Context, loc string) error {
	s := ix.s
	return s.claims.WithEpoch(ctx, "namespace: releasing a table directory", 0, func() (redisstate.Status, error) {
		return s.rs.ReleaseLocation(ctx, loc)
	}, redisclaim.Final)
}

// reserveLocations reserves the directories of a catalog whose Redis
// state predates reservations: every live table's and every kept drop's,
// once (redisstate.Catalog.ReserveLocations).
func (s *Service) reserveLocations(ctx context.Context) error {
	if reserved, err := s.rs.LocationsReserved(ctx); err != nil || reserved {
		return err // reserved before: the records of drops need no reading
	}
	kept, err := s.keptLocations(ctx)
	if err != nil {
		return err
	}
	return s.claims.WithEpoch(ctx, "namespace: reserving table directories", 0, func() (redisstate.Status, error) {
		r, err := s.rs.ReserveLocations(ctx, kept)
		if err == nil && r.Status == redisstate.OK && r.Added > 0 {
			s.log.Info("namespace: table directories reserved", "catalog", s.cfg.Catalog, "locations", r.Added)
		}
		return r.Status, err
	}, redisclaim.Final)
}

// keptLocations are the table locations of the drops kept for undrop,
// those that are table locations of this root.
func (s *Service) keptLocations(ctx context.Context) ([]string, error) {
	kept, err := KeptTables(ctx, s.objs)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range kept {
		if loc, err := s.root.tableLocation(k.Location); err == nil && loc == k.Location {
			out = append(out, loc)
		}
	}
	return out, nil
}

// KeptTable is a table a drop keeps for undrop.
type KeptTable struct{ ID, Location string }

// KeptTables lists the tables the drops kept for undrop hold, as their
// records in storage say (locations unchecked).
func KeptTables(ctx context.Context, objs *objstore.Store) ([]KeptTable, error) {
	all, err := ListTrash(ctx, objs)
	if err != nil {
		return nil, err
	}
	var out []KeptTable
	for _, t := range all {
		rows, err := t.Objects()
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.ObjectType == manifesttable.TypeTable && r.Location != "" {
				out = append(out, KeptTable{ID: r.ObjectID, Location: r.Location})
			}
		}
	}
	return out, nil
}

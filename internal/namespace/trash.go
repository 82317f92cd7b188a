package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// A drop kept recoverable (Config.DropRetention > 0) removes its objects
// from the catalog as any drop does, but leaves the dropped tables'
// directories, and first writes a record of itself, create-only, to
// manifesttable.TrashPrefix: the rows it removes (derived from durable
// state only). UndropTable and UndropNamespace put those rows back in one
// index change; PurgeTrash (`admin gc`) deletes past the retention the way
// a drop with retention 0 deletes: data first, the record last.
//
// A record whose drop never applied (the process died between the two)
// names objects that are still live: undrop refuses it (the ids are
// taken) and the purge spares every location a live table owns.

// Trash is the record of one drop kept recoverable.
type Trash = manifesttable.Trash

// ListTrash lists the drops kept recoverable, oldest first.
func ListTrash(ctx context.Context, objs *objstore.Store) ([]Trash, error) {
	return manifesttable.ListTrash(ctx, objs)
}

// ValidDropID fails with InvalidInput unless id is a drop id.
func ValidDropID(id string) error { return manifesttable.ValidDropID(id) }

func trashKey(dropID string) string { return manifesttable.TrashKey(dropID) }

// retains reports whether drops keep what they drop recoverable.
func (s *Service) retains() bool { return s.cfg.DropRetention > 0 }

// DropRetention is how long a dropped object stays recoverable (0: drops
// delete at once).
func (dr Drops) DropRetention() time.Duration { return dr.s.cfg.DropRetention }

// trashDrop writes the record of a drop of id (of type typ) removing the
// objects of ids (namespaces before what they hold), create-only, and
// returns its key. A row missing from the catalog's memory fails the
// drop (errStale: it is built again).
func (s *Service) trashDrop(ctx context.Context, id api.ID, typ string, ids []indexed) (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	t := Trash{DropID: u.String(), ID: id, Type: typ, DroppedAt: s.now().UTC()}
	for _, o := range ids {
		r, ok, err := s.row(ctx, o.typ, o.id)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", errStale
		}
		b, err := manifesttable.MarshalRow(r)
		if err != nil {
			return "", err
		}
		t.Rows = append(t.Rows, b)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	key := trashKey(t.DropID)
	if err := s.objs.PutIfAbsent(ctx, key, b); err != nil {
		return "", err
	}
	return key, nil
}

// untrash deletes a record whose drop did not apply; a failure is logged
// (undrop refuses such a record, the purge spares live locations).
func (s *Service) untrash(ctx context.Context, key string) {
	if key == "" {
		return
	}
	if err := s.objs.Delete(ctx, key); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		s.log.Warn("namespace: deleting the record of a drop that did not apply", "key", key, "err", err)
	}
}

// settleTrash settles the record of a drop of id (of type typ) that
// answered an error: the drop may still have applied (an unknown
// outcome), so the record goes only while id is still there.
func (s *Service) settleTrash(ctx context.Context, key string, id api.ID, typ string) {
	if key == "" {
		return
	}
	if t, err := s.objectType(ctx, id); err == nil && t == typ {
		s.untrash(ctx, key)
	}
}

// UndropTable puts a dropped table back, with its versions, branches and
// tags (its directory was kept).
func (dr Drops) UndropTable(ctx context.Context, req api.UndropTableRequest) (*api.UndropResponse, error) {
	s := dr.s
	if err := tableID(req.ID); err != nil {
		return nil, err
	}
	return s.undrop(ctx, req.ID, manifesttable.TypeTable, req.DropID)
}

// UndropNamespace puts a dropped namespace back with everything the drop
// removed inside it.
func (dr Drops) UndropNamespace(ctx context.Context, req api.UndropNamespaceRequest) (*api.UndropResponse, error) {
	s := dr.s
	if err := req.ID.Validate("namespace"); err != nil {
		return nil, err
	}
	if req.ID.IsRoot() {
		return nil, nserror.New(nserror.InvalidInput, "the root namespace is never dropped")
	}
	return s.undrop(ctx, req.ID, manifesttable.TypeNamespace, req.DropID)
}

// undrop restores the drop dropID of id (the newest drop of id when
// dropID is empty) in one index change: every namespace and table of the
// drop comes back, or none does (an id or a location taken meanwhile
// answers AlreadyExists). Then the record goes.
func (s *Service) undrop(ctx context.Context, id api.ID, typ, dropID string) (*api.UndropResponse, error) {
	notFound := func() error {
		code := nserror.TableNotFound
		if typ == manifesttable.TypeNamespace {
			code = nserror.NamespaceNotFound
		}
		if dropID != "" {
			return nserror.New(code, "no drop %s of %s %q to undo", dropID, typ, id.String())
		}
		return nserror.New(code, "no dropped %s %q to undo", typ, id.String())
	}
	var t *Trash
	if dropID != "" {
		if err := ValidDropID(dropID); err != nil {
			return nil, err
		}
		var err error
		if t, err = manifesttable.ReadTrash(ctx, s.objs, dropID); errors.Is(err, objstore.ErrNotFound) {
			return nil, notFound()
		} else if err != nil {
			return nil, err
		}
		if !api.ID(t.ID).Equal(id) || t.Type != typ {
			return nil, notFound()
		}
	} else {
		all, err := ListTrash(ctx, s.objs)
		if err != nil {
			return nil, err
		}
		for i := range all {
			if api.ID(all[i].ID).Equal(id) && all[i].Type == typ {
				t = &all[i] // the newest: ids sort by time
			}
		}
		if t == nil {
			return nil, notFound()
		}
	}
	rows, err := t.Objects()
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	resp := &api.UndropResponse{DropID: t.DropID}
	err = s.changeIndex(ctx, typ+" "+strconv.Quote(id.String()), func(c *indexChange) error {
		c.undrop, c.created = true, api.EventTableUndropped
		// A purge that began deletes what the record keeps: too late.
		c.guard(nserror.New(nserror.ConcurrentModification, "cannot undrop %s: `admin gc` is purging it", t.DropID),
			redisstate.GuardAbsent(s.k.Purging(), t.DropID))
		resp.Tables, resp.Namespaces = nil, nil
		for i, r := range rows {
			oid, err := api.ParseID(r.ObjectID, "")
			if err != nil || (i == 0) != oid.Equal(id) || !auth.Within(oid, id) {
				return nserror.New(nserror.InvalidInput, "the record of drop %s names %q outside %q", t.DropID, r.ObjectID, id.String())
			}
			r.CommittedAt = now
			b, err := manifesttable.MarshalRow(r)
			if err != nil {
				return err
			}
			taken := func(what string) error {
				code := nserror.TableAlreadyExists
				if r.ObjectType == manifesttable.TypeNamespace {
					code = nserror.NamespaceAlreadyExists
				}
				return nserror.New(code, "cannot undrop %s: %s", t.DropID, what)
			}
			if i == 0 {
				c.parentIsNamespace(oid, nserror.New(nserror.NamespaceNotFound, "cannot undrop %s: namespace %q of %q does not exist", t.DropID, oid.Parent().String(), oid.String()))
			}
			switch r.ObjectType {
			case manifesttable.TypeNamespace:
				c.addNamespace(oid, b, taken(strconv.Quote(oid.String())+" exists"))
				resp.Namespaces = append(resp.Namespaces, r.ObjectID)
			case manifesttable.TypeTable:
				if loc, err := s.root.tableLocation(r.Location); err != nil || loc != r.Location {
					return nserror.New(nserror.InvalidInput, "the record of drop %s places %q at %q, not a table location", t.DropID, r.ObjectID, r.Location)
				}
				// Its directory is still reserved (the drop kept it): that
				// reservation is the one it may meet.
				c.addTable(oid, r.Location, r.Location, b, taken(strconv.Quote(oid.String())+" exists"),
					taken("its location "+strconv.Quote(r.Location)+" overlaps another table's directory"))
				resp.Tables = append(resp.Tables, r.ObjectID)
			default:
				return nserror.New(nserror.InvalidInput, "the record of drop %s holds a %q row", t.DropID, r.ObjectType)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.objs.Delete(ctx, trashKey(t.DropID)); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		// Restored: the record left behind names live objects, which a
		// purge spares and an undrop refuses.
		s.log.Warn("namespace: deleting the record of an undone drop", "drop_id", t.DropID, "err", err)
	}
	s.table.RefreshDropped()
	return resp, nil
}

// PurgeReport is what PurgeTrash did.
type PurgeReport struct {
	Records   int      // drop records read
	Purged    []string // drop ids purged
	Locations int      // table locations whose data was deleted
	Spared    int      // locations a live table owns, left alone
}

// PurgeTrash deletes what drops kept past the retention (older than
// before): each dropped table's data (tombstoned as a drop with retention
// 0 does), then the record, then the directories' reservations. What
// another table holds is spared (Sparing): the whole location when a live
// table owns it or it lies inside a reserved directory (Spared counts
// them), the reserved directories inside it. dry says what would go and
// deletes nothing.
func (dr Drops) PurgeTrash(ctx context.Context, before time.Time, dry bool) (PurgeReport, error) {
	s := dr.s
	var rep PurgeReport
	all, err := ListTrash(ctx, s.objs)
	if err != nil {
		return rep, err
	}
	rep.Records = len(all)
	// The directories of the drops kept (within the retention): a purge
	// spares them and what they hold, even when an older record names the
	// same directory (a record whose removal failed).
	var kept []string
	for _, t := range all {
		if t.DroppedAt.Before(before) {
			continue
		}
		rows, err := t.Objects()
		if err != nil {
			return rep, err
		}
		for _, r := range rows {
			if r.ObjectType == manifesttable.TypeTable && r.Location != "" {
				kept = append(kept, r.Location)
			}
		}
	}
	for _, t := range all {
		if !t.DroppedAt.Before(before) {
			continue
		}
		rows, err := t.Objects()
		if err != nil {
			return rep, err
		}
		if !dry {
			// Marked first, so that no undrop begins now; one already
			// made holds its directories live, and they are spared below.
			if err := s.rs.MarkPurging(ctx, t.DropID, s.now().UTC().Format(time.RFC3339Nano)); err != nil {
				return rep, fmt.Errorf("namespace: marking the purge of drop %s: %w", t.DropID, err)
			}
		}
		var locs []string // the directories purged
		for _, r := range rows {
			if r.ObjectType != manifesttable.TypeTable || r.Location == "" {
				continue
			}
			loc, err := s.root.tableLocation(r.Location)
			if err != nil || loc != r.Location {
				continue // never a path outside the root
			}
			sp, err := s.Index().Sparing(ctx, loc, kept)
			if err != nil {
				return rep, err
			}
			if sp.All || slices.Contains(kept, loc) {
				rep.Spared++
				continue
			}
			rep.Locations++
			locs = append(locs, loc)
			if dry {
				continue
			}
			if err := s.deleteTableData(ctx, loc, sp); err != nil {
				return rep, err
			}
		}
		rep.Purged = append(rep.Purged, t.DropID)
		if dry {
			continue
		}
		if err := s.objs.Delete(ctx, trashKey(t.DropID)); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return rep, err
		}
		s.table.RefreshDropped()
		// The record gone, its directories are nobody's (a crash before
		// this leaves them reserved: their tombstones let gc release them).
		for _, loc := range locs {
			if err := s.Index().ReleaseLocation(ctx, loc); err != nil {
				return rep, err
			}
		}
		if err := s.rs.UnmarkPurging(ctx, t.DropID); err != nil {
			return rep, fmt.Errorf("namespace: ending the purge of drop %s: %w", t.DropID, err)
		}
	}
	return rep, nil
}

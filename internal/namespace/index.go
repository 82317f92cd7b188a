package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/redisclaim"
)

// indexChange is one atomic change of the object index (which ids are
// namespaces and tables, where the tables live, each namespace's
// children) with its commit-log entries: guards on what the change was
// built from, each with the error it means when it fails, then the writes.
// It is the index's one way to change: a BatchCommitTables adds every
// operation's part to one change (batchBuilder embeds it), and
// CreateNamespace, DeclareTable, RegisterTable, RenameTable, DropTable,
// DeregisterTable, DropNamespace and EvolveNamespace each build one; the
// claim script applies it whole or not at all (redisclaim.Commit).
type indexChange struct {
	k        nsKeys
	guards   []redisstate.Guard
	guardErr []error // the error of each guard failing
	writes   []redisstate.Write
	log      [][]string
	// stale is set when the change is built again after a guard on what
	// an earlier build assumed or read failed: a build that assumed the
	// common case (a free id, say) reads the index this time, to answer
	// precisely.
	stale bool
	// principal and at are who makes the change and when, for its
	// events; created is the event type of a table the change adds
	// (declared unless the operation says registered or undropped), and
	// undrop says that namespaces it adds are undropped.
	principal string
	at        time.Time
	created   string
	undrop    bool
	// txn is the multi-table transaction the change is part of.
	txn string
}

// newIndexChange is an empty change made by the caller of ctx, now.
func (s *Service) newIndexChange(ctx context.Context) *indexChange {
	c := &indexChange{k: s.k, at: s.now().UTC()}
	if p, ok := auth.PrincipalFrom(ctx); ok {
		c.principal = p.Name
	}
	return c
}

// event records ev, stamped with the change's principal and time, as an
// event of the change feed: an entry of the change's own commit log
// entries, written by the same script, so that it exists if and only if
// the change commits.
func (c *indexChange) event(ev api.Event) {
	ev.Principal, ev.Time, ev.TxnID = c.principal, c.at, c.txn
	b, err := json.Marshal(ev)
	if err != nil {
		return // an Event always marshals
	}
	c.log = append(c.log, []string{commitlog.KindField, commitlog.Event, "e", string(b)})
}

// errStale is the error of a guard on what a single operation read before
// it built its change: the index changed meanwhile, and changeIndex
// builds the change again from what it holds now.
var errStale = errors.New("namespace: the object index changed while a change of it was built")

// errUnchanged is a build's answer when there is nothing to change (a
// CreateNamespace in ExistOk mode that finds the namespace).
var errUnchanged = errors.New("namespace: nothing to change")

func (c *indexChange) guard(err error, g redisstate.Guard) {
	c.guards = append(c.guards, g)
	c.guardErr = append(c.guardErr, err)
}

// parentIsNamespace guards that id's parent is a namespace (the root
// always is).
func (c *indexChange) parentIsNamespace(id api.ID, err error) {
	if p := id.Parent(); !p.IsRoot() {
		c.guard(err, redisstate.GuardEq(c.k.Obj(), p.String(), manifesttable.TypeNamespace))
	}
}

// parentOf reads whether id's parent is a namespace, answering err when
// it is not, and guards that it still is.
func (s *Service) parentOf(ctx context.Context, c *indexChange, id api.ID, err error) error {
	typ, rerr := s.objectType(ctx, id.Parent())
	if rerr != nil {
		return rerr
	}
	if typ != manifesttable.TypeNamespace {
		return err
	}
	c.parentIsNamespace(id, err)
	return nil
}

// tableAt guards that id is a table at location loc.
func (c *indexChange) tableAt(id api.ID, loc string, notFound, moved error) {
	c.guard(notFound, redisstate.GuardEq(c.k.Obj(), id.String(), manifesttable.TypeTable))
	c.guard(moved, redisstate.GuardEq(c.k.Loc(), id.String(), loc))
}

func (c *indexChange) put(row []byte) {
	c.log = append(c.log, []string{commitlog.KindField, commitlog.Put, "row", string(row)})
}

func (c *indexChange) deleteRow(typ, id string) {
	key, _ := json.Marshal(map[string]string{"object_type": typ, "object_id": id})
	c.log = append(c.log, []string{commitlog.KindField, commitlog.Delete, "key", string(key)})
}

// addNamespace indexes namespace id, free (taken is the error when it is
// not), with its row.
func (c *indexChange) addNamespace(id api.ID, row []byte, taken error) {
	c.guard(taken, redisstate.GuardAbsent(c.k.Obj(), id.String()))
	c.writes = append(c.writes,
		redisstate.HSet(c.k.Obj(), id.String(), manifesttable.TypeNamespace),
		redisstate.SAdd(c.k.kids(id.Parent()), id.String()))
	c.put(row)
	typ := api.EventNamespaceCreated
	if c.undrop {
		typ = api.EventNamespaceUndropped
	}
	c.event(api.Event{Type: typ, ID: id})
}

// addTable indexes table id, free, at location loc, which belongs to no
// table and meets no reserved directory but except (an undrop's own:
// reserve), with its row; taken and locTaken are the errors when either
// is not so.
func (c *indexChange) addTable(id api.ID, loc, except string, row []byte, taken, locTaken error) {
	c.guard(taken, redisstate.GuardAbsent(c.k.Obj(), id.String()))
	c.guard(locTaken, redisstate.GuardAbsent(c.k.ByLoc(), loc))
	c.reserve(loc, except, locTaken)
	c.indexTable(id, loc)
	c.put(row)
	c.tableCreated(id, loc)
}

// tableCreated is the event of table id added at loc.
func (c *indexChange) tableCreated(id api.ID, loc string) {
	typ := c.created
	if typ == "" {
		typ = api.EventTableDeclared
	}
	c.event(api.Event{Type: typ, ID: id, Location: loc})
}

// indexTable indexes table id at loc (reserved by the caller).
func (c *indexChange) indexTable(id api.ID, loc string) {
	c.writes = append(c.writes,
		redisstate.HSet(c.k.Obj(), id.String(), manifesttable.TypeTable),
		redisstate.HSet(c.k.Loc(), id.String(), loc),
		redisstate.HSet(c.k.ByLoc(), loc, id.String()),
		redisstate.SAdd(c.k.kids(id.Parent()), id.String()))
}

// removeTable forgets table id at loc (guarded by the caller: tableAt);
// its versions follow (the drop_table entry). Its directory stays
// reserved unless release (a deregistration, whose data no table owns
// now): a drop keeps it until its data is deleted, or for undrop.
func (c *indexChange) removeTable(id api.ID, loc string, release bool) {
	c.writes = append(c.writes,
		redisstate.HDel(c.k.Obj(), id.String()),
		redisstate.HDel(c.k.Loc(), id.String()),
		redisstate.HDel(c.k.ByLoc(), loc),
		redisstate.SRem(c.k.kids(id.Parent()), id.String()))
	if release {
		c.release(loc)
	}
	c.log = append(c.log, []string{commitlog.KindField, commitlog.DropTable, "t", loc})
	c.deleteRow(manifesttable.TypeTable, id.String())
	typ := api.EventTableDropped
	if release {
		typ = api.EventTableDeregistered
	}
	c.event(api.Event{Type: typ, ID: id, Location: loc})
}

// applyIndex applies c in one claim and waits until its rows are
// durable. A guard that fails answers its error.
func (s *Service) applyIndex(ctx context.Context, c *indexChange) error {
	log := make([]redisstate.LogEntry, len(c.log))
	for i, e := range c.log {
		log[i] = e
	}
	batch, err := s.claims.Commit(ctx, nil, &redisclaim.Extras{Guards: c.guards, Writes: c.writes, Log: log})
	var ge *redisclaim.GuardError
	if errors.As(err, &ge) {
		return c.guardErr[ge.Index]
	}
	if err != nil {
		return err
	}
	return s.durable(ctx, batch.Seq)
}

// changeIndex builds a change of the index and applies it. build reads
// what it needs (or, on a first build, may assume the common case: no
// read, one claim), answers the caller's errors, and guards what it read
// or assumed with errStale: when that does not hold the change is built
// again (c.stale), within WithEpoch's budget (redisclaim.Attempts).
func (s *Service) changeIndex(ctx context.Context, what string, build func(c *indexChange) error) error {
	stale := false
	return s.claims.WithEpoch(ctx, what, 0, func() (redisstate.Status, error) {
		c := s.newIndexChange(ctx)
		c.stale = stale
		stale = true
		err := build(c) // errStale: what it read changed as it read it
		if err == nil {
			err = s.applyIndex(ctx, c)
		}
		if errors.Is(err, errStale) {
			return redisstate.GuardFailed, nil
		}
		return redisstate.OK, err
	}, againOnGuard(func() error {
		return nserror.New(nserror.ConcurrentModification, "%s kept changing while it was being changed; retry", what)
	}))
}

// againOnGuard is the WithEpoch settle function of a call that answers
// GuardFailed when what it was built from changed meanwhile: the call
// runs again (redisclaim.Again), and kept makes its error once the
// budget is spent.
func againOnGuard(kept func() error) func(redisstate.Status) (bool, error) {
	return func(st redisstate.Status) (bool, error) {
		if st == redisstate.GuardFailed {
			return false, redisclaim.Again(kept())
		}
		return true, nil
	}
}

// indexed is an object of the index.
type indexed struct {
	id  api.ID
	typ string
	loc string // tables
}

// indexedChildren reads namespace id's children from the index, sorted.
func (s *Service) indexedChildren(ctx context.Context, id api.ID) ([]indexed, error) {
	kids, err := s.rs.Children(ctx, id.String())
	if err != nil {
		return nil, err
	}
	out := make([]indexed, len(kids))
	for i, kid := range kids {
		kidID, err := api.ParseID(kid.ID, "")
		if err != nil {
			return nil, errStale // not a child as the index writes them
		}
		out[i] = indexed{id: kidID, typ: kid.Type, loc: kid.Location}
	}
	return out, nil
}

// removeTree forgets namespace id and everything inside it (guarded: the
// namespace holds what was read, no more), appending what it drops to
// gone, each namespace before what it holds; restrict refuses a namespace
// that holds anything.
func (s *Service) removeTree(ctx context.Context, c *indexChange, id api.ID, restrict bool, gone *[]indexed) error {
	kids, err := s.indexedChildren(ctx, id)
	if err != nil {
		return err
	}
	if restrict && len(kids) > 0 {
		return nserror.New(nserror.NamespaceNotEmpty, "namespace %q is not empty", id.String())
	}
	c.guard(errStale, redisstate.GuardEq(c.k.Obj(), id.String(), manifesttable.TypeNamespace))
	c.guard(errStale, redisstate.GuardCard(c.k.kids(id), len(kids)))
	c.writes = append(c.writes,
		redisstate.HDel(c.k.Obj(), id.String()),
		redisstate.SRem(c.k.kids(id.Parent()), id.String()))
	c.deleteRow(manifesttable.TypeNamespace, id.String())
	c.event(api.Event{Type: api.EventNamespaceDropped, ID: id})
	*gone = append(*gone, indexed{id: id, typ: manifesttable.TypeNamespace})
	for _, k := range kids {
		switch k.typ {
		case manifesttable.TypeTable:
			c.tableAt(k.id, k.loc, errStale, errStale)
			c.removeTable(k.id, k.loc, false)
			*gone = append(*gone, k)
		case manifesttable.TypeNamespace:
			if err := s.removeTree(ctx, c, k.id, false, gone); err != nil {
				return err
			}
		default:
			return errStale // gone meanwhile
		}
	}
	return nil
}

package redisstate

import (
	"context"
	"time"
)

// The modes of CreateObject (create_object.lua's header).
const (
	CreateNew       = "create"
	CreateExistOK   = "existok"
	CreateOverwrite = "overwrite"
)

// Object is a namespace or table to create, for CreateObject.
type Object struct {
	ID, Parent string // Parent "" is the root
	Type       string // "namespace" or "table"
	Location   string // tables; "" for namespaces
	Row        string // its __manifest row, JSON
}

// CreateObjectReply is create_object.lua's reply.
type CreateObjectReply struct {
	Status Status // OK, NOPARENT, EXISTS, EXISTING, NOTEMPTY, LOCTAKEN or NOEPOCH
	Seq    uint64 // OK
	Type   string // EXISTS: the type of the object that holds the id
	Owner  string // LOCTAKEN: the table that holds the location
}

// CreateObject runs create_object.lua: o is indexed and its row logged,
// in mode.
func (c *Catalog) CreateObject(ctx context.Context, o Object, mode string) (CreateObjectReply, error) {
	r, err := c.run(ctx, createObjectS,
		[]string{c.Epoch(), c.Obj(), c.Loc(), c.ByLoc(), c.Kids(o.Parent), c.Kids(o.ID), c.Seq(), c.Log()},
		o.ID, o.Parent, o.Type, mode, o.Location, o.Row, c.maxLen)
	if err != nil {
		return CreateObjectReply{}, err
	}
	out := CreateObjectReply{Status: r.status()}
	switch out.Status {
	case OK:
		out.Seq = r.uint(1)
	case Exists:
		out.Type = r.str(1)
	case LocTaken:
		out.Owner = r.str(1)
	case NoParent, Existing, NotEmpty, NoEpoch:
	default:
		return CreateObjectReply{}, UnexpectedReply("create_object.lua", r)
	}
	return out, nil
}

// ObjectRef names an object to drop, for DropObjects.
type ObjectRef struct{ ID, Type string }

// DropObjectsReply is drop_objects.lua's reply.
type DropObjectsReply struct {
	Status    Status // OK, NOTFOUND, NOTEMPTY, CHANGED or NOEPOCH
	Seq       uint64 // OK
	Locations []string
	Missing   string // NOTFOUND: the id of the object that is not there
}

// DropObjects runs drop_objects.lua: objs (the top object first, then,
// for a cascade, everything inside it) are dropped together; parent is
// the top object's parent, restrict refuses a namespace that holds
// anything.
func (c *Catalog) DropObjects(ctx context.Context, parent string, objs []ObjectRef, restrict bool) (DropObjectsReply, error) {
	keys := []string{c.Epoch(), c.Obj(), c.Loc(), c.ByLoc(), c.Seq(), c.Log(), c.Kids(parent)}
	args := []any{c.maxLen, flag(restrict)}
	for _, o := range objs {
		args = append(args, o.ID, o.Type)
		if o.Type == "namespace" {
			keys = append(keys, c.Kids(o.ID))
		}
	}
	r, err := c.run(ctx, dropObjectsS, keys, args...)
	if err != nil {
		return DropObjectsReply{}, err
	}
	out := DropObjectsReply{Status: r.status()}
	switch out.Status {
	case OK:
		out.Seq = r.uint(1)
		for i := 2; i < len(r); i++ {
			out.Locations = append(out.Locations, r.str(i))
		}
	case NotFound:
		out.Missing = r.str(1)
	case NotEmpty, Changed, NoEpoch:
	default:
		return DropObjectsReply{}, UnexpectedReply("drop_objects.lua", r)
	}
	return out, nil
}

// RenameReply is rename_table.lua's reply.
type RenameReply struct {
	Status Status // OK, NOTFOUND, NOPARENT, EXISTS or NOEPOCH
	Seq    uint64 // OK
	Type   string // EXISTS: the type of the object that holds the new id
}

// RenameTable runs rename_table.lua: table from (whose parent is
// fromParent) becomes to, inside toParent, with row its new __manifest
// row.
func (c *Catalog) RenameTable(ctx context.Context, from, fromParent, to, toParent, row string) (RenameReply, error) {
	r, err := c.run(ctx, renameTableS,
		[]string{c.Epoch(), c.Obj(), c.Loc(), c.ByLoc(), c.Kids(fromParent), c.Kids(toParent), c.Seq(), c.Log()},
		from, to, toParent, row, c.maxLen)
	if err != nil {
		return RenameReply{}, err
	}
	out := RenameReply{Status: r.status()}
	switch out.Status {
	case OK:
		out.Seq = r.uint(1)
	case Exists:
		out.Type = r.str(1)
	case NotFound, NoParent, NoEpoch:
	default:
		return RenameReply{}, UnexpectedReply("rename_table.lua", r)
	}
	return out, nil
}

// Indexed is an object of __manifest to index, for RebuildIndex.
type Indexed struct{ ID, Parent, Type, Location string }

// RebuildIndex runs rebuild_index.lua: during a recovery (token is its
// lock's), objs are indexed, after the index is cleared when first. It
// reports whether the lock was held.
func (c *Catalog) RebuildIndex(ctx context.Context, token string, first bool, objs []Indexed) (bool, error) {
	keys := []string{c.Recovering(), c.Obj(), c.Loc(), c.ByLoc()}
	args := []any{token, flag(first)}
	for _, o := range objs {
		keys = append(keys, c.Kids(o.Parent))
		args = append(args, o.ID, o.Type, o.Location)
	}
	return c.runBool(ctx, rebuildIndexS, keys, args...)
}

// ClearKids runs clear_kids.lua: during a recovery (token is its lock's),
// the children sets named by keys are deleted. It reports whether the
// lock was held.
func (c *Catalog) ClearKids(ctx context.Context, token string, keys []string) (bool, error) {
	return c.runBool(ctx, clearKidsS, append([]string{c.Recovering()}, keys...), token)
}

// TxnApplyReply is txn_apply.lua's reply.
type TxnApplyReply struct {
	Status Status // OK, DONE (applied before), NOLOCK or NOEPOCH
	Seq    uint64 // OK, DONE: the sequence the entries were appended under
}

// TxnApply runs txn_apply.lua: a committed transaction's catalog entries
// are appended to the log once. token is the recovery lock's token during
// a recovery, else "".
func (c *Catalog) TxnApply(ctx context.Context, txnID, token string, entries []LogEntry) (TxnApplyReply, error) {
	args := []any{token, c.maxLen}
	for _, e := range entries {
		args = append(args, len(e)/2)
		for _, f := range e {
			args = append(args, f)
		}
	}
	r, err := c.run(ctx, txnApplyS, []string{c.Epoch(), c.Recovering(), c.Txn(txnID), c.Seq(), c.Log()}, args...)
	if err != nil {
		return TxnApplyReply{}, err
	}
	switch r.status() {
	case OK, Done, NoLock, NoEpoch:
		return TxnApplyReply{Status: r.status(), Seq: r.uint(1)}, nil
	}
	return TxnApplyReply{}, UnexpectedReply("txn_apply.lua", r)
}

// AppendReply is append.lua's reply.
type AppendReply struct {
	Status Status // OK or NOEPOCH
	Seq    uint64 // OK
}

// Append runs append.lua: row changes (kind, payload pairs: commitlog.Put
// with a row, commitlog.Delete with a key) go to the log under one new
// sequence.
func (c *Catalog) Append(ctx context.Context, pairs []string) (AppendReply, error) {
	args := make([]any, 0, len(pairs)+1)
	args = append(args, c.maxLen)
	for _, p := range pairs {
		args = append(args, p)
	}
	r, err := c.run(ctx, appendS, []string{c.Epoch(), c.Seq(), c.Log()}, args...)
	if err != nil {
		return AppendReply{}, err
	}
	switch r.status() {
	case OK, NoEpoch:
		return AppendReply{Status: r.status(), Seq: r.uint(1)}, nil
	}
	return AppendReply{}, UnexpectedReply("append.lua", r)
}

// TakeLease runs lease.lua: the materializer lease is taken or renewed for
// token, for d. It reports whether token holds it.
func (c *Catalog) TakeLease(ctx context.Context, token string, d time.Duration) (bool, error) {
	return c.runBool(ctx, leaseS, []string{c.Lease()}, token, d.Milliseconds())
}

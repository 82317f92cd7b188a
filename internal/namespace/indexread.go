package namespace

import (
	"context"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
)

// Reads of the catalog as this process holds it: its index of __manifest
// (manifesttable.Table), for what plans over the catalog's rows (the
// planner) without reaching into the table.

// Objects returns every current namespace and table row.
func (ix Index) Objects() []manifesttable.Row { return ix.s.table.Objects() }

// Object returns the current namespace or table row with that key.
func (ix Index) Object(typ, id string) (manifesttable.Row, bool) { return ix.s.table.Object(typ, id) }

// View calls fn with the index held still (manifesttable.Table.View).
func (ix Index) View(fn func(manifesttable.Index)) { ix.s.table.View(fn) }

// Sync brings the index up to every change acknowledged anywhere before
// the call.
func (ix Index) Sync(ctx context.Context) error { return ix.s.table.Sync(ctx) }

// Head returns the sequence of the newest change in the commit log.
func (ix Index) Head(ctx context.Context) (uint64, error) { return ix.s.table.Head(ctx) }

// WaitDurable returns when sequence seq is durable and in the index.
func (ix Index) WaitDurable(ctx context.Context, seq uint64) error {
	return ix.s.table.WaitDurable(ctx, seq)
}

// RegisterTableFunction makes f callable from every SQL query of the
// catalog.
func (ix Index) RegisterTableFunction(ctx context.Context, f sqlengine.TableFunc) error {
	return ix.s.table.RegisterTableFunction(ctx, f)
}

package namespace

import (
	"context"
	"strings"
	"testing"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// A catalog is bound to its root: a second root on the same Redis catalog,
// or a root of another catalog, is refused with both named; the binding
// survives restarts and Redis losing its state.
func TestACatalogIsBoundToItsRoot(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t) // opens catalog e.catalog on root e.objs
	open := func(objs *objstore.Store, catalog string) (*Service, error) {
		return Open(ctx, Config{Objects: objs, Redis: e.rdb, Catalog: catalog, Logger: quiet, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	}
	other, err := objstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if s, err := open(other, e.catalog); err == nil {
		_ = s.Close()
		t.Fatal("a second root on the same Redis catalog opened")
	} else if !strings.Contains(err.Error(), e.objs.URI()) || !strings.Contains(err.Error(), other.URI()) {
		t.Fatalf("the refusal does not name both roots: %v", err)
	}
	if s, err := open(e.objs, e.catalog+"b"); err == nil {
		_ = s.Close()
		t.Fatal("a root of another catalog opened")
	} else if !strings.Contains(err.Error(), `belongs to catalog "`+e.catalog+`"`) {
		t.Fatalf("the refusal does not name the root's catalog: %v", err)
	}
	// The other root serves a catalog of its own on the same Redis.
	s, err := open(other, e.catalog+"c")
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	// Redis loses everything: the first root binds again (its marker), and
	// the second still cannot take the catalog.
	e.redis.FlushAll()
	first, err := open(e.objs, e.catalog)
	if err != nil {
		t.Fatalf("the catalog's own root after Redis lost its state: %v", err)
	}
	defer func() { _ = first.Close() }()
	if s, err := open(other, e.catalog); err == nil {
		_ = s.Close()
		t.Fatal("a second root took the catalog after Redis lost its state")
	}
}

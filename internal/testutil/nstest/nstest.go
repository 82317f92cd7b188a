package nstest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// Quiet is a logger that discards everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var catalogs atomic.Int64

// Env is a redis-server, a file:// root and a catalog name, owned by one
// test.
type Env struct {
	Redis   *redistest.Server
	RDB     *redis.Client
	Objects *objstore.Store
	Root    string // the root's directory
	Catalog string
}

// New starts a redis-server and opens a root in a temporary directory,
// both released when the test ends.
func New(tb testing.TB) *Env {
	tb.Helper()
	r := redistest.Start(tb)
	e := &Env{Redis: r, RDB: r.Client(), Root: tb.TempDir(), Catalog: fmt.Sprintf("c%d", catalogs.Add(1))}
	var err error
	if e.Objects, err = objstore.Open(context.Background(), "file://"+e.Root); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Objects.Close() })
	return e
}

// Config is the service configuration over the environment: a quiet
// logger and a 1 GB SQL engine.
func (e *Env) Config() namespace.Config {
	return namespace.Config{Objects: e.Objects, Redis: e.RDB, Catalog: e.Catalog, Logger: Quiet, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}}
}

// Open opens a service over the environment, closed when the test ends;
// mod adjusts its configuration first.
func (e *Env) Open(tb testing.TB, mod ...func(*namespace.Config)) *namespace.Service {
	tb.Helper()
	cfg := e.Config()
	for _, m := range mod {
		m(&cfg)
	}
	svc, err := namespace.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = svc.Close() })
	return svc
}

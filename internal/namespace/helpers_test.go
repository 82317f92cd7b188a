package namespace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var catalogN atomic.Int64

type tenv struct {
	t       *testing.T
	redis   *redistest.Server
	rdb     redis.UniversalClient
	objs    *objstore.Store
	catalog string
	s       *Service
}

func newTenv(t *testing.T) *tenv { return newTenvOn(t, "file") }

// backends are the object stores a test of onEveryBackend runs on: a
// directory, and a bucket of a MinIO server of the test's own.
var backends = []string{"file", "s3"}

// onEveryBackend runs test once on every backend, each a subtest.
func onEveryBackend(t *testing.T, test func(t *testing.T, backend string)) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { test(t, b) })
	}
}

// newTenvOn is newTenv with the root on backend: "file" (a temporary
// directory) or "s3" (a bucket of a MinIO server of the test's own).
func newTenvOn(t *testing.T, backend string) *tenv {
	t.Helper()
	r := redistest.Start(t)
	uri := "file://" + t.TempDir()
	if backend == "s3" {
		uri = s3test.Start(t, "cat").URI("cat", "root")
	}
	objs, err := objstore.Open(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	e := &tenv{t: t, redis: r, rdb: r.Client(), objs: objs, catalog: fmt.Sprintf("ns%d", catalogN.Add(1))}
	e.s = e.open()
	return e
}

func (e *tenv) open() *Service {
	e.t.Helper()
	s, err := Open(context.Background(), Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog, Logger: quiet, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

func id(names ...string) api.ID { return api.ID(names) }

func ptr[T any](v T) *T { return &v }

// wantCode fails unless err carries code.
func wantCode(t *testing.T, what string, err error, code nserror.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want code %d (%v)", what, int(code), code)
	}
	if got := nserror.CodeOf(err); got != code {
		t.Fatalf("%s: %v (code %d), want code %d (%v)", what, err, int(got), int(code), code)
	}
}

// must returns v, or panics (failing the test) on an error: for steps
// whose success is not what the test is about.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// stage uploads a staging manifest for version v of the table at loc (a
// key) and returns its object-store path, the form Lance sends.
func (e *tenv) stage(loc string, v uint64, content string) string {
	e.t.Helper()
	key := lancemanifest.StagingPath(lancemanifest.Dir(loc).Manifest(lancemanifest.V2, v))
	if err := e.objs.Put(context.Background(), key, []byte(content)); err != nil {
		e.t.Fatal(err)
	}
	return e.s.root.objectPath(key)
}

// locOf is the location key of a table.
func (e *tenv) locOf(tid api.ID) string {
	e.t.Helper()
	loc, err := e.s.tableLoc(context.Background(), tid)
	if err != nil {
		e.t.Fatal(err)
	}
	return loc
}

// final reads version v's final manifest (V2 naming) of the table at loc;
// "" when there is none.
func (e *tenv) final(loc string, v uint64) string {
	e.t.Helper()
	b, err := e.objs.Get(context.Background(), lancemanifest.Dir(loc).Manifest(lancemanifest.V2, v))
	if errors.Is(err, objstore.ErrNotFound) {
		return ""
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// withVersions declares table tid (its namespace exists) and commits
// versions 1..n, version v's manifest being v bytes; it returns the
// table's location key.
func (e *tenv) withVersions(tid api.ID, n int) string {
	e.t.Helper()
	ctx := context.Background()
	must(e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: tid}))
	loc := e.locOf(tid)
	for v := 1; v <= n; v++ {
		must(e.s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: int64(v), ManifestPath: e.stage(loc, uint64(v), strings.Repeat("m", v))}))
	}
	return loc
}

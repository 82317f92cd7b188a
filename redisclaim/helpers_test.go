package redisclaim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// env is one test's catalog: a real Redis, an object store, a Store.
type env struct {
	t     testing.TB
	redis *redistest.Server
	rdb   redis.UniversalClient
	objs  *objstore.Store
	s     *Store
	step  atomic.Pointer[StepFunc]

	mu     sync.Mutex
	stores []*Store // every Store opened on this env, e.s first
	// requests are the S3 requests of an s3-copy env, as its proxy saw
	// them (guarded by mu).
	requests []s3test.Request
}

// sent returns the S3 requests of an s3-copy env so far, and forgets
// them.
func (e *env) sent() []s3test.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.requests
	e.requests = nil
	return out
}

var catalogSeq atomic.Int64

// quiet discards the store's logs; tests assert outcomes instead.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newEnv starts a Redis server and opens the object store at uri
// ("mem://", "file", "s3", or "s3-copy": S3 that honours a conditional
// copy).
func newEnv(t testing.TB, backend string) *env {
	t.Helper()
	r := redistest.Start(t)
	return newEnvOn(t, r, r.Client(), backend)
}

func newEnvOn(t testing.TB, r *redistest.Server, rdb redis.UniversalClient, backend string) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, redis: r, rdb: rdb}
	uri := ""
	switch backend {
	case "mem":
		uri = "mem://"
	case "file":
		uri = "file://" + t.TempDir()
	case "s3":
		uri = s3test.Start(t, "cat").URI("cat", "root")
	case "s3-copy":
		// A store that refuses a conditional copy onto an existing key
		// (as AWS S3 does; a proxy in front of MinIO here): promotions of
		// sources not read — a reader finishing a commit, a transaction's
		// members — are one server-side copy.
		p := s3test.StartFaultProxy(t, s3test.Start(t, "cat").URL)
		p.HonourCopyCondition(minioproc.AccessKey, minioproc.SecretKey, minioproc.Region)
		p.Trace = func(r s3test.Request) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.requests = append(e.requests, r)
		}
		uri = p.URI("cat", "root")
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	objs, err := objstore.Open(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	if backend == "s3-copy" {
		if ok, how, err := objs.ProbeConditionalCopy(ctx); !ok || err != nil {
			t.Fatalf("the honouring proxy: %v %s %v", ok, how, err)
		}
		objs.SetConditionalCopy(true)
	}
	t.Cleanup(func() { _ = objs.Close() })
	e.objs = objs
	e.s = e.open(fmt.Sprintf("cat%d", catalogSeq.Add(1)))
	return e
}

// open opens another Store on the same Redis and storage (another process,
// as far as the protocol can tell).
func (e *env) open(catalog string) *Store {
	e.t.Helper()
	return e.openLogging(catalog, quiet)
}

// openLogging is open with the store's logs going to log.
func (e *env) openLogging(catalog string, log *slog.Logger) *Store {
	e.t.Helper()
	s, err := New(context.Background(), Config{Redis: e.rdb, Objects: e.objs, Catalog: catalog, Logger: log,
		Step: func(ctx context.Context, st Step, table string, v uint64) error {
			if f := e.step.Load(); f != nil {
				return (*f)(ctx, st, table, v)
			}
			return nil
		}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	e.mu.Lock()
	e.stores = append(e.stores, s)
	e.mu.Unlock()
	return s
}

// failAt makes the protocol fail at step for (table, version) once.
func (e *env) failAt(step Step, table string, version uint64, err error) *atomic.Bool {
	fired := new(atomic.Bool)
	f := StepFunc(func(_ context.Context, st Step, t string, v uint64) error {
		if st == step && t == table && v == version && fired.CompareAndSwap(false, true) {
			return err
		}
		return nil
	})
	e.step.Store(&f)
	return fired
}

func (e *env) noFaults() { e.step.Store(nil) }

// crashAt commits content as (table, version) with a fault at seam: the
// commit fails there, or, for a seam past the reply, succeeds and the
// fault fires after. Faults are off again afterwards.
func (e *env) crashAt(seam Step, table string, version uint64, content string) {
	e.t.Helper()
	fired := e.failAt(seam, table, version, errors.New("crash"))
	_, err := e.put(table, version, content)
	switch {
	case pastTheReply(seam) && err != nil:
		e.t.Fatalf("a fault at %s, past the reply, failed the commit: %v", seam, err)
	case !pastTheReply(seam) && err == nil:
		e.t.Fatalf("a fault at %s did not fail the commit", seam)
	}
	e.s.after.Wait()
	if !fired.Load() {
		e.t.Fatalf("the commit never reached %s", seam)
	}
	e.noFaults()
}

// stage writes a staging manifest for (table, version) holding content.
func (e *env) stage(table string, version uint64, content string) string {
	e.t.Helper()
	p := lancemanifest.StagingPath(lancemanifest.Dir(table).Manifest(lancemanifest.V2, version))
	if err := e.objs.Put(context.Background(), p, []byte(content)); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// put stages content and commits it as (table, version).
func (e *env) put(table string, version uint64, content string) (Location, error) {
	p := e.stage(table, version, content)
	return e.s.Put(context.Background(), table, version, p, int64(len(content)), "")
}

// final reads the final manifest of (table, version); "" when absent.
func (e *env) final(table string, version uint64) string {
	e.t.Helper()
	b, err := e.objs.Get(context.Background(), lancemanifest.Dir(table).Manifest(lancemanifest.V2, version))
	if errors.Is(err, objstore.ErrNotFound) {
		return ""
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// stagingLeft lists the staging objects left in a table, once the
// writers' cleanups that follow their replies have run and the staging
// objects they queued for deletion are deleted.
func (e *env) stagingLeft(table string) []string {
	e.t.Helper()
	e.settle()
	var out []string
	all, err := e.objs.ListAll(context.Background(), lancemanifest.Dir(table).Versions())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, a := range all {
		if m, err := lancemanifest.ParseManifestName(a.Key[len(lancemanifest.Dir(table).Versions()):]); err == nil && m.Staging {
			out = append(out, a.Key)
		}
	}
	return out
}

// settle waits, in every Store opened on this env, for the repairs that
// follow the writers' replies and for the deletions of the staging
// objects they queued.
func (e *env) settle() {
	e.mu.Lock()
	stores := slices.Clone(e.stores)
	e.mu.Unlock()
	for _, s := range stores {
		s.after.Wait()
		s.sweep.flush()
	}
}

func isCode(err error, code nserror.Code) bool { return err != nil && nserror.CodeOf(err) == code }

// cluster wraps a test cluster for newEnvOn.
type cluster struct {
	*redistest.Cluster
	*redis.ClusterClient
}

func redistestCluster(t testing.TB) *cluster {
	c := redistest.StartCluster(t, 3, 0)
	return &cluster{Cluster: c, ClusterClient: c.Client()}
}

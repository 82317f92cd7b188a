package namespace

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// A __manifest that cannot make progress (here: a store that refuses
// every write under __manifest/, as a full disk does) fails a catalog
// mutation with ServiceUnavailable once it has been so for StallTimeout,
// not at DurableTimeout, and says why; once writes work again the table
// catches up and mutations succeed.
func TestAMutationFailsFastWhileManifestCannotMakeProgress(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	var full atomic.Bool
	objs, err := objstore.OpenWith(ctx, e.objs.URI(), objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, p objstore.Phase) error {
		if full.Load() && p == objstore.Before && op != objstore.OpGet && op != objstore.OpHead && op != objstore.OpList &&
			strings.HasPrefix(key, manifesttable.Prefix) {
			return errors.New("no space left on device")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The catalog again, on the same root through a store that can fail.
	_ = e.s.Close()
	s, err := Open(ctx, Config{Objects: objs, Redis: e.rdb, Catalog: e.catalog, Logger: quiet, StallTimeout: 300 * time.Millisecond, DurableTimeout: 10 * time.Minute, Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	// The catalog first takes the lead and catches up, which on a loaded
	// machine may itself outlast the short StallTimeout: "before" is
	// retried until it is known to have taken effect.
	for try := 0; ; try++ {
		_, err := s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("before")})
		if err == nil || nserror.CodeOf(err) == nserror.NamespaceAlreadyExists {
			break
		}
		if nserror.CodeOf(err) != nserror.ServiceUnavailable || try == 20 {
			t.Fatalf("creating a namespace before the store fills: %v", err)
		}
	}
	full.Store(true)
	_, err = s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("during")})
	wantCode(t, "a mutation while __manifest cannot be written", err, nserror.ServiceUnavailable)
	if !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "may or may not") {
		t.Fatalf("the error does not say why, or that the outcome is unknown: %v", err)
	}
	if reason, ok := s.Table().Stalled(0); !ok || !strings.Contains(reason, "no space left") {
		t.Fatalf("Stalled: %q %v", reason, ok)
	}
	full.Store(false)
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("after")}))
	if _, ok := s.Table().Stalled(0); ok {
		t.Fatal("still stalled after a write went through")
	}
	l := must(s.ListNamespaces(ctx, api.ListNamespacesRequest{}))
	if strings.Join(l.Namespaces, ",") != "after,before,during" {
		t.Fatalf("namespaces after the stall: %v (the refused one's outcome was unknown; it took effect)", l.Namespaces)
	}
}

// A mutation on a process that does not materialize, while the process
// that does has died (its lease has not lapsed: nobody writes segments),
// fails with ServiceUnavailable after StallTimeout instead of waiting for
// the lease; once a process materializes again it takes effect.
func TestAMutationFailsFastWhileNoProcessMaterializes(t *testing.T) {
	ctx := context.Background()
	e := newTenv(t)
	_ = e.s.Close()
	lease := "{" + e.catalog + "}:mlease"
	if err := e.rdb.Set(ctx, lease, "a killed server", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog, Logger: quiet, StallTimeout: 300 * time.Millisecond, DurableTimeout: 10 * time.Minute, Table: manifesttable.Config{NoSQL: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	start := time.Now()
	_, err = s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("orphan")})
	wantCode(t, "a mutation while no process materializes", err, nserror.ServiceUnavailable)
	if !strings.Contains(err.Error(), "nothing in __manifest became durable") || time.Since(start) > time.Minute {
		t.Fatalf("error %v after %s", err, time.Since(start))
	}
	// The dead holder's lease lapses: this process takes over.
	if err := e.rdb.Del(ctx, lease).Err(); err != nil {
		t.Fatal(err)
	}
	must(s.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id("later")}))
	l := must(s.ListNamespaces(ctx, api.ListNamespacesRequest{}))
	if strings.Join(l.Namespaces, ",") != "later,orphan" {
		t.Fatalf("namespaces: %v", l.Namespaces)
	}
}

package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/objstore"
)

// lanceTemplate is a manifest LanceDB 0.39 (Lance 12) wrote: version 4 of
// lancemanifest/testdata (two fragments, a deletion file, a scalar index),
// copied here so that the benchmark's binary carries it. Every version the
// cleanup scenarios commit is this manifest renumbered
// (lancemanifest.Restored: its version, time, transaction file and inline
// transaction rewritten as Lance rewrites them), so that internal/cleanup
// reads real Lance manifests, references and all.
//
//go:embed manifests/v4.manifest
var lanceTemplate []byte

// lanceTables are tables of one namespace, committed to through the
// namespace service the way a Lance writer commits a one-row add on S3:
// it uploads the version's transaction file, then its manifest to a
// staging path, then asks for the version (CreateTableVersion). A table's
// versions are committed by one writer at a time (no conflicts).
type lanceTables struct {
	svc  *namespace.Service
	objs *objstore.Store
	ns   string
	ids  []api.ID
	keys []string // each table's directory, relative to the root
	// heads are the tables' latest committed versions.
	heads []atomic.Uint64
}

// newLanceTables declares n tables ns$<prefix>NNN (the namespace ns made
// first, with props) and writes each one's data, deletion and index files,
// those every version's manifest names.
func newLanceTables(ctx context.Context, svc *namespace.Service, objs *objstore.Store, ns, prefix string, n int, props api.Properties) (*lanceTables, error) {
	if _, err := svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{ns}, Mode: "ExistOk", Properties: props}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	refs, err := lancemanifest.ReadReferences(lanceTemplate)
	if err != nil {
		return nil, fmt.Errorf("the template manifest: %w", err)
	}
	var files []string
	for _, d := range refs.DataFiles {
		files = append(files, "data/"+d.Path)
	}
	for _, d := range refs.DeletionFiles {
		files = append(files, "_deletions/"+d.Path)
	}
	for _, ix := range refs.Indices {
		files = append(files, "_indices/"+ix.UUID+"/page_data.lance", "_indices/"+ix.UUID+"/page_lookup.lance")
	}
	t := &lanceTables{svc: svc, objs: objs, ns: ns, ids: make([]api.ID, n), keys: make([]string, n), heads: make([]atomic.Uint64, n)}
	root := strings.TrimSuffix(svc.Index().LocationURI(""), "/") + "/"
	err = parallel(ctx, n, 8, func(ctx context.Context, i int) error {
		id := api.ID{ns, fmt.Sprintf("%s%03d", prefix, i)}
		d, err := svc.DeclareTable(ctx, api.DeclareTableRequest{ID: id})
		if err != nil {
			return fmt.Errorf("declaring %s: %w", id, err)
		}
		key, ok := strings.CutPrefix(strings.TrimSuffix(d.Location, "/"), root)
		if !ok {
			return fmt.Errorf("table %s at %q is not under the root %s", id, d.Location, root)
		}
		t.ids[i], t.keys[i] = id, key
		for _, f := range files {
			if err := objs.Put(ctx, key+"/"+f, []byte("lance file of the cleanup benchmark")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// commit commits the next version of table i: its transaction file, its
// manifest (the template renumbered) at a staging path, CreateTableVersion.
func (t *lanceTables) commit(ctx context.Context, i int) Outcome {
	v := t.heads[i].Load() + 1
	m, err := stageLance(ctx, t.objs, t.keys[i], v)
	if err != nil {
		return Failed
	}
	staging := lancemanifest.StagingPath(lancemanifest.Dir(t.keys[i]).Manifest(lancemanifest.V2, v))
	if err := t.objs.PutWith(ctx, staging, m, objstore.WriteOptions{NoSync: true}); err != nil {
		return Failed
	}
	_, err = t.svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: t.ids[i], Version: int64(v), ManifestPath: staging})
	out := outcomeOf(err)
	switch out {
	case OK:
		t.heads[i].Store(v)
	case Conflict:
		// An earlier commit of this writer whose answer was lost (its
		// context ended) committed after all: learn the head, as Lance
		// does.
		if d, err := t.svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: t.ids[i]}); err == nil && d.Version != nil {
			t.heads[i].Store(uint64(d.Version.Version))
		}
	}
	return out
}

// build commits n more versions of every table, workers tables at a
// time.
func (t *lanceTables) build(ctx context.Context, n, workers int) error {
	return parallel(ctx, len(t.ids), workers, func(ctx context.Context, i int) error {
		for range n {
			if out := t.commit(ctx, i); out != OK {
				return fmt.Errorf("committing version %d of %s failed", t.heads[i].Load()+1, t.ids[i])
			}
		}
		return nil
	})
}

// settle waits until every change of the catalog so far is in a durable
// __manifest segment: what a phase leaves to the materializer is not the
// next phase's work.
func settle(ctx context.Context, svc *namespace.Service) error {
	seq, err := svc.Table().Head(ctx)
	if err != nil {
		return err
	}
	return svc.Table().WaitDurable(ctx, seq)
}

// parallel runs fn for 0 … n-1, workers at a time, and returns the errors
// it returned (it stops handing out work after the first).
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

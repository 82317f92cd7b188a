package cleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/objstore"
)

// Phase is a step of Execute, in the order Execute takes them.
type Phase int

// Execute's phases.
const (
	// PhaseForget: the caller forgets the pruned versions.
	PhaseForget Phase = iota + 1
	// PhaseManifests: the pruned versions' manifests are deleted.
	PhaseManifests
	// PhaseFiles: the files no kept version references are deleted.
	PhaseFiles
)

func (p Phase) String() string {
	switch p {
	case PhaseForget:
		return "forget"
	case PhaseManifests:
		return "manifests"
	case PhaseFiles:
		return "files"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Progress is how far Execute is in a phase: Done of Total (chains for
// PhaseForget, objects otherwise), and the bytes deleted in the phase.
type Progress struct {
	Phase       Phase
	Done, Total int
	Bytes       int64
}

// Result is what Execute did.
type Result struct {
	Forgotten        int // versions handed to forget
	ManifestsDeleted int
	FilesDeleted     int
	BytesDeleted     int64
	// Spared are the keys Execute kept although the plan deletes them: a
	// check before a phase found them referenced by what was written
	// since the plan (a new version, tag or branch).
	Spared []string
}

// ForgetFunc drops the catalog's records of a chain's pruned versions
// (branch "" is main). It must be idempotent: after a crash Execute calls
// it again for versions it may already have forgotten.
type ForgetFunc func(ctx context.Context, branch string, versions []uint64) error

// deleteBatch is how many objects one delete call takes: S3's
// DeleteObjects limit, so that a batch is one request there.
const deleteBatch = 1000

// Execute carries the plan out, in an order that leaves every kept
// version readable wherever it stops:
//
//  1. forget, for each chain with pruned versions, so that the catalog
//     never lists a version whose manifest is about to go;
//  2. delete the pruned versions' manifests;
//  3. delete the files no kept version references.
//
// Nothing a kept version references is ever deleted, so a kept version
// reads at every step. A pruned version whose manifest is still there
// after a crash is pruned again by the next plan (forget is idempotent);
// a file left behind is unreferenced and older than the grace period, and
// the next plan deletes it.
//
// Before steps 2 and 3 Execute lists the table's manifests and refs
// again: a manifest written since the plan protects every file it
// references, and a tag or branch made since on a pruned version spares
// that version's manifest and files (its catalog record is already
// forgotten; a recovery can learn it again from storage).
//
// forget may be nil when no catalog keeps records of the table's
// versions; progress may be nil.
func (p *Plan) Execute(ctx context.Context, objs *objstore.Store, forget ForgetFunc, progress func(Progress)) (Result, error) {
	var res Result
	report := func(pr Progress) {
		if progress != nil {
			progress(pr)
		}
	}

	var chains []Chain
	for _, c := range p.Chains {
		if len(c.Pruned) > 0 {
			chains = append(chains, c)
		}
	}
	for i, c := range chains {
		var versions []uint64
		for _, v := range c.Pruned {
			versions = append(versions, v.Version)
		}
		slices.Sort(versions)
		versions = slices.Compact(versions)
		if forget != nil {
			if err := forget(ctx, c.Branch, versions); err != nil {
				return res, fmt.Errorf("cleanup: forget versions %v of %s: %w", versions, chainName(c.Branch), err)
			}
		}
		res.Forgotten += len(versions)
		report(Progress{Phase: PhaseForget, Done: i + 1, Total: len(chains)})
	}

	chk, err := p.check(ctx, objs)
	if err != nil {
		return res, err
	}
	var manifests []File
	for _, c := range chains {
		for _, v := range c.Pruned {
			if chk.spare[v.Key] {
				res.Spared = append(res.Spared, v.Key)
				continue
			}
			manifests = append(manifests, File{Key: v.Key, Size: v.Size, Kind: KindManifest})
		}
	}
	slices.SortFunc(manifests, func(a, b File) int { return strings.Compare(a.Key, b.Key) })
	if err := p.beforeDelete(ctx, manifests); err != nil {
		return res, err
	}
	n, bytes, err := deleteAll(ctx, objs, PhaseManifests, manifests, report)
	res.ManifestsDeleted, res.BytesDeleted = n, bytes
	if err != nil {
		return res, err
	}

	chk2, err := p.check(ctx, objs)
	if err != nil {
		return res, err
	}
	var files []File
	for _, f := range p.Files {
		if chk.protects(f) || chk2.protects(f) {
			res.Spared = append(res.Spared, f.Key)
			continue
		}
		files = append(files, f)
	}
	if err := p.beforeDelete(ctx, files); err != nil {
		return res, err
	}
	n, bytes, err = deleteAll(ctx, objs, PhaseFiles, files, report)
	res.FilesDeleted, res.BytesDeleted = n, res.BytesDeleted+bytes
	return res, err
}

// beforeDelete calls BeforeDelete with the first of files, if there is
// one and it was not called yet.
func (p *Plan) beforeDelete(ctx context.Context, files []File) error {
	if p.BeforeDelete == nil || len(files) == 0 {
		return nil
	}
	hook := p.BeforeDelete
	p.BeforeDelete = nil
	return hook(ctx, files[0].Key)
}

// deleteAll deletes files in batches, reporting after each.
func deleteAll(ctx context.Context, objs *objstore.Store, phase Phase, files []File, report func(Progress)) (int, int64, error) {
	done, bytes := 0, int64(0)
	report(Progress{Phase: phase, Done: 0, Total: len(files)})
	for len(files) > 0 {
		if err := ctx.Err(); err != nil {
			return done, bytes, err
		}
		batch := files[:min(len(files), deleteBatch)]
		keys := make([]string, len(batch))
		for i, f := range batch {
			keys[i] = f.Key
		}
		if err := objs.DeleteMany(ctx, keys); err != nil {
			return done, bytes, fmt.Errorf("cleanup: delete %s: %w", phase, err)
		}
		for _, f := range batch {
			bytes += f.Size
		}
		done += len(batch)
		files = files[len(batch):]
		report(Progress{Phase: phase, Done: done, Total: done + len(files), Bytes: bytes})
	}
	return done, bytes, nil
}

// check is what a look at the table before a deletion phase found written
// since the plan.
type check struct {
	// spare are pruned manifests a tag or branch now names.
	spare map[string]bool
	// keep is what manifests written since the plan, and spared ones,
	// reference.
	keep *nameSet
}

// check lists the table's manifests (main's _versions/ and everything
// under tree/) and refs again, reads every manifest the plan did not see,
// and finds the pruned versions that a tag or branch names now.
func (p *Plan) check(ctx context.Context, objs *objstore.Store) (*check, error) {
	var c *check
	err := untilStill(func() error {
		var err error
		c, err = p.checkOnce(ctx, objs)
		return err
	})
	return c, err
}

func (p *Plan) checkOnce(ctx context.Context, objs *objstore.Store) (*check, error) {
	var objects []objstore.Attrs
	for _, prefix := range []string{p.Table.Versions(), p.Table.Tree(), p.Table.Refs()} {
		o, err := objs.ListAll(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("cleanup: list %s: %w", prefix, err)
		}
		objects = append(objects, o...)
	}
	r, err := readRefs(ctx, objs, p.Table, objects)
	if err != nil {
		return nil, err
	}
	var fresh []*manifest
	for _, o := range objects {
		if _, ok := chainDirOf(p.Table, o.Key); !ok || p.seen[o.Key] {
			continue
		}
		name, err := lancemanifest.ParseManifestName(baseName(o.Key))
		if err != nil {
			continue // chainDirOf parsed it
		}
		fresh = append(fresh, &manifest{attrs: o, name: name})
	}
	c := &check{spare: map[string]bool{}, keep: newNameSet()}
	if err := readAll(ctx, objs, fresh, func(_ *manifest, r *lancemanifest.References) { c.keep.add(r) }); err != nil {
		return nil, err
	}
	for _, ch := range p.Chains {
		at := &chain{dir: ch.Dir, branch: ch.Branch}
		named := map[uint64]bool{}
		for _, t := range r.tagsOn(at) {
			named[t.version] = true
		}
		for _, b := range r.forksOf(at) {
			named[b.parentVersion] = true
		}
		for _, v := range ch.Pruned {
			if !named[v.Version] {
				continue
			}
			// Spared: read again for what it references, unless it is
			// already deleted (a tag made after the manifests phase names
			// a version that is gone whatever this check does).
			c.spare[v.Key] = true
			name, err := lancemanifest.ParseManifestName(baseName(v.Key))
			if err != nil {
				return nil, err
			}
			refs, err := readManifest(ctx, objs, &manifest{attrs: objstore.Attrs{Key: v.Key, Size: v.Size}, name: name})
			switch {
			case errors.Is(err, objstore.ErrNotFound):
			case err != nil:
				return nil, err
			default:
				c.keep.add(refs)
			}
		}
	}
	return c, nil
}

// protects says whether the check found f referenced.
func (c *check) protects(f File) bool {
	base := baseName(f.Key)
	if c.keep.external[base] {
		return true
	}
	switch f.Kind {
	case KindTransaction:
		return c.keep.txn[base]
	case KindDeletion:
		return c.keep.deletion[base]
	case KindData:
		if c.keep.data[base] {
			return true
		}
		// A blob sidecar lives as long as its data file.
		dir := f.Key[:len(f.Key)-len(base)-1]
		return c.keep.data[baseName(dir)+".lance"]
	case KindIndex:
		// Any segment of the key that is a referenced index's UUID.
		return slices.ContainsFunc(strings.Split(f.Key, "/"), func(seg string) bool { return c.keep.index[seg] })
	}
	return false
}

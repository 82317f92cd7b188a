package cleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// Plan is what a cleanup of one table will do: per chain the versions it
// keeps and the ones it prunes, and the files no kept version references
// that it deletes. Making a plan deletes nothing; Execute carries it out.
type Plan struct {
	// Table is the table's directory.
	Table lancemanifest.Dir
	// Policy is the policy applied, defaults filled in.
	Policy Policy
	// Cutoff is the time before which a version was old enough to prune
	// (zero when Policy.OlderThan is 0).
	Cutoff time.Time
	// Chains are main's chain and each branch's, main first.
	Chains []Chain
	// Files are the files Execute deletes after the pruned manifests,
	// in key order.
	Files []File
	// Totals sums the above.
	Totals Totals
	// BeforeDelete, when set, is called by Execute once, right before its
	// first deletion, with the key of the object it deletes first (the
	// first of a batch): an error stops the cleanup there, having
	// deleted nothing. A cleanup that deletes nothing never calls it.
	BeforeDelete func(ctx context.Context, first string) error

	// seen is every manifest key the plan read, so that Execute's checks
	// can tell a manifest written since.
	seen map[string]bool
}

// Chain is one version chain of the table: main's (the table's directory)
// or a branch's (tree/<branch>/ inside it).
type Chain struct {
	Branch string            // "" for main
	Dir    lancemanifest.Dir // the chain's directory
	// Managed is false for a directory under tree/ that holds manifests
	// but that no branch records (no _refs/branches/ file, not named by
	// the caller): nothing of it is pruned or deleted, and its manifests
	// protect what they reference.
	Managed bool
	Kept    []Version // newest first
	Pruned  []Version // newest first
}

// Version is one version of a chain, with the manifest that is it.
type Version struct {
	Version   uint64
	Key       string
	Size      int64
	Timestamp time.Time
	// Why says why the version is kept ("latest", "tag t", …) or pruned.
	Why string
}

// Kind is what a file the plan deletes is.
type Kind int

// The kinds of file a plan deletes, each in a directory of a chain.
const (
	// KindManifest is a pruned version's manifest in _versions/.
	KindManifest Kind = iota + 1
	// KindTransaction is a transaction file in _transactions/.
	KindTransaction
	// KindDeletion is a deletion file in _deletions/.
	KindDeletion
	// KindIndex is a file of an index's directory _indices/<uuid>/.
	KindIndex
	// KindData is a data file in data/ (a .lance file, or a .blob
	// sidecar file of one).
	KindData
	// KindTempManifest is a leftover _versions/.tmp* file of a failed
	// Lance commit.
	KindTempManifest
)

func (k Kind) String() string {
	switch k {
	case KindManifest:
		return "manifest"
	case KindTransaction:
		return "transaction"
	case KindDeletion:
		return "deletion"
	case KindIndex:
		return "index"
	case KindData:
		return "data"
	case KindTempManifest:
		return "temporary manifest"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// File is a file the plan deletes.
type File struct {
	Key     string
	Size    int64
	ModTime time.Time
	Kind    Kind
	// Reason says why it may go: which pruned versions alone referenced
	// it, or that no manifest references it.
	Reason string
}

// Totals sums a plan.
type Totals struct {
	KeptVersions   int
	PrunedVersions int
	ManifestBytes  int64 // the pruned manifests
	Files          int
	FileBytes      int64
}

// NewPlan decides what a cleanup of the table in directory table does under
// policy p. branches are branches the caller knows of (the catalog's); the
// table's own records of its branches (_refs/branches/) count as well. It
// reads every manifest of every chain and every ref file, and fails
// (deleting nothing) if any cannot be read: a manifest it cannot read may
// reference any file.
func NewPlan(ctx context.Context, objs *objstore.Store, table lancemanifest.Dir, branches []string, p Policy) (*Plan, error) {
	p, err := p.normalized()
	if err != nil {
		return nil, err
	}
	if table == "" || strings.HasSuffix(string(table), "/") {
		return nil, nserror.New(nserror.InvalidInput, "cleanup: table directory %q must be a non-empty key without a trailing slash", table)
	}
	if err := objstore.ValidatePrefix(string(table) + "/"); err != nil {
		return nil, err
	}
	for _, b := range branches {
		if !validBranch(table, b) {
			return nil, nserror.New(nserror.InvalidInput, "cleanup: %q is not a branch name", b)
		}
	}
	cutoff := p.cutoff()
	var s *scan
	err = untilStill(func() error {
		s, err = newScan(ctx, objs, table, branches, cutoff, p.KeepLast)
		return err
	})
	if err != nil {
		return nil, err
	}
	pl := &Plan{Table: table, Policy: p, Cutoff: cutoff, seen: map[string]bool{}}
	for _, c := range s.chains {
		for _, m := range c.manifests {
			pl.seen[m.attrs.Key] = true
		}
		pl.Chains = append(pl.Chains, describe(c, cutoff, p.KeepLast))
	}
	for _, c := range s.chains {
		if !c.managed {
			continue
		}
		for _, o := range c.files {
			f, ok := candidate(c, o, s.keep, p)
			if !ok {
				continue
			}
			f.Reason = s.pruned.reason(nameKey(f.Kind, o.Key, c.dir))
			pl.Files = append(pl.Files, f)
		}
	}
	slices.SortFunc(pl.Files, func(a, b File) int { return strings.Compare(a.Key, b.Key) })
	for _, c := range pl.Chains {
		pl.Totals.KeptVersions += len(c.Kept)
		pl.Totals.PrunedVersions += len(c.Pruned)
		for _, v := range c.Pruned {
			pl.Totals.ManifestBytes += v.Size
		}
	}
	for _, f := range pl.Files {
		pl.Totals.Files++
		pl.Totals.FileBytes += f.Size
	}
	return pl, nil
}

// newScan lists the table, reads its refs, and reads its manifests,
// deciding each version and folding what it references into the scan's
// name sets as it goes.
func newScan(ctx context.Context, objs *objstore.Store, table lancemanifest.Dir, branches []string, cutoff time.Time, keepLast int) (*scan, error) {
	objects, err := objs.ListAll(ctx, string(table)+"/")
	if err != nil {
		return nil, fmt.Errorf("cleanup: list %s: %w", table, err)
	}
	s := &scan{table: table, objs: objs, keep: newNameSet(), pruned: prunedBy{}}
	if s.refs, err = readRefs(ctx, objs, table, objects); err != nil {
		return nil, err
	}
	s.addChains(objects, branches)
	s.assign(objects)
	s.rankVersions()
	var all []*manifest
	chainOf := map[*manifest]*chain{}
	for _, c := range s.chains {
		for _, m := range c.manifests {
			all = append(all, m)
			chainOf[m] = c
		}
	}
	err = readAll(ctx, objs, all, func(m *manifest, r *lancemanifest.References) {
		c := chainOf[m]
		s.judge(c, m, r.Timestamp, cutoff, keepLast)
		if !m.pruned {
			s.keep.add(r)
			return
		}
		for _, n := range namesOf(r) {
			s.pruned.add(n, chainName(c.branch), m.name.Version)
		}
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// prunedBy is, for each name pruned manifests reference (nameKey's form),
// how many reference it and the first of them (by chain, then version),
// for a file's reason.
type prunedBy map[string]*prunedRef

type prunedRef struct {
	n       int
	branch  string
	version uint64
}

func (p prunedBy) add(name, branch string, version uint64) {
	r := p[name]
	if r == nil {
		p[name] = &prunedRef{n: 1, branch: branch, version: version}
		return
	}
	r.n++
	if branch < r.branch || branch == r.branch && version < r.version {
		r.branch, r.version = branch, version
	}
}

func (p prunedBy) reason(name string) string {
	switch r := p[name]; {
	case r == nil:
		return "referenced by no manifest"
	case r.n == 1:
		return fmt.Sprintf("referenced only by pruned %s@%d", r.branch, r.version)
	default:
		return fmt.Sprintf("referenced only by pruned %s@%d and %d other pruned versions", r.branch, r.version, r.n-1)
	}
}

// listAttempts bounds untilStill.
const listAttempts = 5

// untilStill runs a list-then-read fn again while an object it listed is
// gone by the time it reads it: a staging manifest promoted to its final
// name (which the next listing holds), a manifest or ref another cleanup
// deleted. Any other error, or one that persists, is returned.
func untilStill(fn func() error) error {
	var err error
	for range listAttempts {
		if err = fn(); !errors.Is(err, objstore.ErrNotFound) {
			return err
		}
	}
	return fmt.Errorf("cleanup: the table kept changing while it was read (%d attempts): %w", listAttempts, err)
}

func chainName(branch string) string {
	if branch == "" {
		return "main"
	}
	return branch
}

// candidate says whether the object o of chain c may be deleted: it is a
// file of a kind Lance's cleanup deletes, in the place Lance puts it, no
// kept manifest of the table references it, and it is older than the
// grace period. Anything it does not recognise is kept.
func candidate(c *chain, o objstore.Attrs, keep *nameSet, p Policy) (File, bool) {
	rel, _ := c.dir.Rel(o.Key)
	area, rest, _ := strings.Cut(rel, "/")
	base := rest[strings.LastIndex(rest, "/")+1:]
	f := File{Key: o.Key, Size: o.Size, ModTime: o.ModTime}
	switch area {
	case lancemanifest.VersionsDir:
		// Pruned manifests go in their own phase; of the rest only the
		// leftovers of Lance's rename commits (.tmp*), as Lance does.
		if strings.Contains(rest, "/") || !strings.HasPrefix(rest, ".tmp") {
			return f, false
		}
		f.Kind = KindTempManifest
	case "_transactions":
		if !strings.HasSuffix(base, ".txn") || keep.txn[base] {
			return f, false
		}
		f.Kind = KindTransaction
	case "_deletions":
		if !strings.HasSuffix(base, ".arrow") && !strings.HasSuffix(base, ".bin") || keep.deletion[base] {
			return f, false
		}
		f.Kind = KindDeletion
	case "_indices":
		uuid, _, inDir := strings.Cut(rest, "/")
		if !inDir || keep.index[uuid] {
			return f, false
		}
		f.Kind = KindIndex
	case "data":
		switch {
		case strings.HasSuffix(base, ".lance"):
			if keep.data[base] {
				return f, false
			}
		case strings.HasSuffix(base, ".blob"):
			// A blob sidecar file, data/<data file stem>/<id>.blob, lives
			// as long as its data file (Lance's cleanup does the same).
			stem, file, ok := strings.Cut(rest, "/")
			if !ok || strings.Contains(file, "/") || keep.data[stem+".lance"] {
				return f, false
			}
		default:
			return f, false
		}
		f.Kind = KindData
	default:
		return f, false
	}
	if keep.external[base] {
		return f, false
	}
	// When in doubt, keep: an object without a time, or one younger than
	// the grace period, may belong to a write in progress.
	if o.ModTime.IsZero() || p.Now.Sub(o.ModTime) < p.Grace {
		return f, false
	}
	return f, true
}

// nameKey is the name under which the references of a file of kind k are
// kept in a nameSet (see namesOf), for the reason of its deletion.
func nameKey(k Kind, key string, dir lancemanifest.Dir) string {
	rel, _ := dir.Rel(key)
	_, rest, _ := strings.Cut(rel, "/")
	base := rest[strings.LastIndex(rest, "/")+1:]
	switch k {
	case KindTransaction:
		return "txn:" + base
	case KindDeletion:
		return "deletion:" + base
	case KindIndex:
		uuid, _, _ := strings.Cut(rest, "/")
		return "index:" + uuid
	case KindData:
		if strings.HasSuffix(base, ".blob") {
			stem, _, _ := strings.Cut(rest, "/")
			return "data:" + stem + ".lance"
		}
		return "data:" + base
	}
	return ""
}

// nameSet is what kept manifests reference, by name: a file is protected
// wherever in the table it is, whichever base its manifest names it in.
// Lance names data, deletion, transaction and index files with random
// parts, so a name matches one file; matching by name rather than by
// resolved path means a file a branch names through a base path (its
// parent's directory) is protected without resolving the base's URI, and
// a path written in an unexpected form still protects its file.
type nameSet struct {
	data, deletion, txn, index, external map[string]bool
}

func newNameSet() *nameSet {
	return &nameSet{data: map[string]bool{}, deletion: map[string]bool{}, txn: map[string]bool{}, index: map[string]bool{}, external: map[string]bool{}}
}

func baseName(p string) string { return p[strings.LastIndex(p, "/")+1:] }

func (s *nameSet) add(r *lancemanifest.References) {
	for _, d := range r.DataFiles {
		s.data[baseName(d.Path)] = true
	}
	for _, d := range r.DeletionFiles {
		s.deletion[baseName(d.Path)] = true
	}
	for _, e := range r.ExternalFiles {
		s.external[baseName(e)] = true
	}
	for _, ix := range r.Indices {
		s.index[ix.UUID] = true
	}
	if r.TransactionFile != "" {
		s.txn[baseName(r.TransactionFile)] = true
	}
}

// namesOf lists the names r references, in nameKey's form.
func namesOf(r *lancemanifest.References) []string {
	var out []string
	for _, d := range r.DataFiles {
		out = append(out, "data:"+baseName(d.Path))
	}
	for _, d := range r.DeletionFiles {
		out = append(out, "deletion:"+baseName(d.Path))
	}
	for _, ix := range r.Indices {
		out = append(out, "index:"+ix.UUID)
	}
	if r.TransactionFile != "" {
		out = append(out, "txn:"+baseName(r.TransactionFile))
	}
	return out
}

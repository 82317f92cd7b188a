package cleanup

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// scan is a table as NewPlan found it: its chains, each with its
// manifests (read and decided) and the other objects of its directories,
// its refs, and what its manifests reference.
type scan struct {
	table  lancemanifest.Dir
	objs   *objstore.Store
	refs   *refs
	chains []*chain // main first, then by directory
	byDir  map[lancemanifest.Dir]*chain
	// keep is what the kept manifests of every chain reference; pruned
	// what the pruned ones do.
	keep   *nameSet
	pruned prunedBy
}

type chain struct {
	dir       lancemanifest.Dir
	branch    string
	managed   bool
	manifests []*manifest      // every manifest file under _versions/
	files     []objstore.Attrs // every other object the chain owns
	// rank is each final version's place from the newest (0); a version
	// may have two files (a V1 and a V2 name).
	rank map[uint64]int
}

// manifest is a manifest file and what was decided of it. What it
// references is folded into the scan's name sets as it is read, not kept:
// a table's manifests together may name far more than memory holds.
type manifest struct {
	attrs     objstore.Attrs
	name      lancemanifest.ManifestFile
	timestamp time.Time
	why       []string // why it is kept
	pruned    bool
}

// final says whether m is a version of the chain's linear history (not a
// staging object, not a detached version).
func (m *manifest) final() bool { return !m.name.Staging && !m.name.Detached }

// validBranch says whether branch names a directory inside the table's
// tree/.
func validBranch(table lancemanifest.Dir, branch string) bool {
	return branch != "" && objstore.ValidatePrefix(lancemanifest.Chain{Table: table, Branch: branch}.Key()+"/") == nil
}

// chainDirOf returns the chain directory of a manifest key
// (<dir>/_versions/<name>, dir the table or a directory inside its tree/),
// if key is one.
func chainDirOf(table lancemanifest.Dir, key string) (lancemanifest.Dir, bool) {
	i := strings.LastIndex(key, "/"+lancemanifest.VersionsDir+"/")
	if i < 0 {
		return "", false
	}
	dir, name := lancemanifest.Dir(key[:i]), key[i+len(lancemanifest.VersionsDir)+2:]
	if strings.Contains(name, "/") {
		return "", false
	}
	if _, err := lancemanifest.ParseManifestName(name); err != nil {
		return "", false
	}
	return dir, dir == table || strings.HasPrefix(string(dir), table.Tree())
}

// addChains finds the chains: main, every branch the table records or the
// caller names, and every directory under tree/ that holds manifests
// (unmanaged when no branch is recorded for it).
func (s *scan) addChains(objects []objstore.Attrs, branches []string) {
	s.byDir = map[lancemanifest.Dir]*chain{}
	add := func(dir lancemanifest.Dir, branch string, managed bool) {
		if c := s.byDir[dir]; c != nil {
			c.managed = c.managed || managed
			return
		}
		c := &chain{dir: dir, branch: branch, managed: managed}
		s.byDir[dir] = c
		s.chains = append(s.chains, c)
	}
	add(s.table, "", true)
	for _, b := range branches {
		add(lancemanifest.Chain{Table: s.table, Branch: b}.Dir(), b, true)
	}
	for b := range s.refs.branches {
		// A recorded name that cannot be a directory holds no files.
		if dir := (lancemanifest.Chain{Table: s.table, Branch: b}).Dir(); validBranch(s.table, b) {
			add(dir, b, true)
		}
	}
	for _, o := range objects {
		if dir, ok := chainDirOf(s.table, o.Key); ok {
			add(dir, strings.TrimPrefix(string(dir), s.table.Tree()), false)
		}
	}
	slices.SortStableFunc(s.chains[1:], func(a, b *chain) int { return strings.Compare(string(a.dir), string(b.dir)) })
}

// assign gives each object to the chain whose directory holds it most
// closely (a branch's tree/<b>/ inside main's directory, tree/a/b inside
// tree/a), so that no chain ever deletes a file of a chain nested in it.
func (s *scan) assign(objects []objstore.Attrs) {
	for _, o := range objects {
		var owner *chain
		for i := strings.LastIndexByte(o.Key, '/'); i > 0 && owner == nil; i = strings.LastIndexByte(o.Key[:i], '/') {
			owner = s.byDir[lancemanifest.Dir(o.Key[:i])]
		}
		if owner == nil {
			continue
		}
		rel, _ := owner.dir.Rel(o.Key)
		if name, ok := strings.CutPrefix(rel, lancemanifest.VersionsDir+"/"); ok && !strings.Contains(name, "/") {
			if m, err := lancemanifest.ParseManifestName(name); err == nil {
				owner.manifests = append(owner.manifests, &manifest{attrs: o, name: m})
				continue
			}
		}
		owner.files = append(owner.files, o)
	}
}

// readParallelism bounds the manifests read at once.
const readParallelism = 8

// rankVersions numbers each chain's final versions from the newest.
func (s *scan) rankVersions() {
	for _, c := range s.chains {
		var versions []uint64
		for _, m := range c.manifests {
			if m.final() {
				versions = append(versions, m.name.Version)
			}
		}
		slices.Sort(versions)
		versions = slices.Compact(versions)
		c.rank = map[uint64]int{}
		for i, v := range versions {
			c.rank[v] = len(versions) - 1 - i
		}
	}
}

// readAll reads the manifests ms, readParallelism at a time, and calls
// fold (one call at a time) with each one and what it references; any
// manifest that cannot be read fails it.
func readAll(ctx context.Context, objs *objstore.Store, ms []*manifest, fold func(*manifest, *lancemanifest.References)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, readParallelism)
	)
	for _, m := range ms {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, err := readManifest(ctx, objs, m)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && firstErr == nil:
				firstErr = err
				cancel()
			case err == nil && firstErr == nil:
				fold(m, r)
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func readManifest(ctx context.Context, objs *objstore.Store, m *manifest) (*lancemanifest.References, error) {
	unreadable := func(err error) error {
		return &nserror.Error{Code: nserror.InvalidTableState, Err: err,
			Message: fmt.Sprintf("cleanup: cannot read manifest %s, so nothing is deleted (it may reference any file): %v", m.attrs.Key, err)}
	}
	if m.attrs.Size > lancemanifest.MaxSize {
		return nil, unreadable(fmt.Errorf("%d bytes, more than the %d a manifest may have", m.attrs.Size, lancemanifest.MaxSize))
	}
	ck := refsKey{key: m.attrs.Key, etag: m.attrs.ETag, size: m.attrs.Size, mod: m.attrs.ModTime}
	if r, ok := cachedRefs(ck); ok {
		return r, nil
	}
	b, err := objs.Get(ctx, m.attrs.Key)
	if err != nil {
		return nil, fmt.Errorf("cleanup: read manifest %s: %w", m.attrs.Key, err)
	}
	r, err := lancemanifest.ReadReferences(b)
	if err != nil {
		return nil, unreadable(err)
	}
	if !m.name.Detached && r.Version != m.name.Version {
		return nil, unreadable(fmt.Errorf("its name says version %d, its content %d", m.name.Version, r.Version))
	}
	rememberRefs(ck, r)
	return r, nil
}

// judge decides whether manifest m of chain c, written at timestamp, is
// kept, and why. A managed chain keeps its latest version, its last
// keepLast versions, those not older than cutoff (and those without a
// time), every tagged version and every version a branch forks from; it
// prunes its other final manifests. Staging and detached manifests are
// never pruned (they are not versions of the chain yet, or ever); an
// unmanaged chain keeps everything.
func (s *scan) judge(c *chain, m *manifest, timestamp time.Time, cutoff time.Time, keepLast int) {
	m.timestamp = timestamp
	if !m.final() {
		m.why = []string{"staging or detached"}
		return
	}
	var why []string
	if !c.managed {
		why = append(why, "no branch records this directory")
	}
	switch r := c.rank[m.name.Version]; {
	case r == 0:
		why = append(why, "latest")
	case r < keepLast:
		why = append(why, fmt.Sprintf("among the last %d", keepLast))
	}
	if !cutoff.IsZero() {
		switch {
		case timestamp.IsZero():
			why = append(why, "no timestamp")
		case !timestamp.Before(cutoff):
			why = append(why, "not older than the cutoff")
		}
	}
	for _, t := range s.refs.tagsOn(c) {
		if t.version == m.name.Version {
			why = append(why, fmt.Sprintf("tag %q", t.name))
		}
	}
	for _, b := range s.refs.forksOf(c) {
		if b.parentVersion == m.name.Version {
			why = append(why, fmt.Sprintf("branch %q forks from it", b.name))
		}
	}
	m.why, m.pruned = why, len(why) == 0
}

// describe is chain c as the plan reports it: its final versions, newest
// first, kept or pruned.
func describe(c *chain, cutoff time.Time, keepLast int) Chain {
	out := Chain{Branch: c.branch, Dir: c.dir, Managed: c.managed}
	finals := slices.DeleteFunc(slices.Clone(c.manifests), func(m *manifest) bool { return !m.final() })
	slices.SortStableFunc(finals, func(a, b *manifest) int {
		if a.name.Version != b.name.Version {
			return cmp.Compare(b.name.Version, a.name.Version)
		}
		return strings.Compare(a.attrs.Key, b.attrs.Key)
	})
	for _, m := range finals {
		v := Version{Version: m.name.Version, Key: m.attrs.Key, Size: m.attrs.Size, Timestamp: m.timestamp}
		if m.pruned {
			v.Why = prunedWhy(cutoff, keepLast)
			out.Pruned = append(out.Pruned, v)
		} else {
			v.Why = strings.Join(m.why, ", ")
			out.Kept = append(out.Kept, v)
		}
	}
	return out
}

func prunedWhy(cutoff time.Time, keepLast int) string {
	if cutoff.IsZero() {
		return fmt.Sprintf("not among the last %d, untagged, no branch forks from it", keepLast)
	}
	return fmt.Sprintf("older than %s, not among the last %d, untagged, no branch forks from it", cutoff.UTC().Format("2006-01-02T15:04:05.000Z07:00"), keepLast)
}

// refs are the table's tags and branches, as Lance records them in
// _refs/tags/<name>.json and _refs/branches/<name>.json.
type refs struct {
	tags     []tagRef
	branches map[string]branchRef
}

type tagRef struct {
	name, branch string
	version      uint64
}

type branchRef struct {
	name, parent  string
	parentVersion uint64
}

// isMain says whether a ref's branch names main (Lance writes null).
func isMain(b string) bool { return b == "" || b == "main" }

// tagsOn returns the tags on chain c's versions.
func (r *refs) tagsOn(c *chain) []tagRef {
	var out []tagRef
	for _, t := range r.tags {
		if t.branch == c.branch || isMain(t.branch) && c.branch == "" {
			out = append(out, t)
		}
	}
	return out
}

// forksOf returns the branches forked from a version of chain c.
func (r *refs) forksOf(c *chain) []branchRef {
	var out []branchRef
	for _, b := range r.branches {
		if b.parent == c.branch || isMain(b.parent) && c.branch == "" {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b branchRef) int { return strings.Compare(a.name, b.name) })
	return out
}

// readRefs reads every tag and branch file among objects; a file it cannot
// read fails the plan (it may protect any version).
func readRefs(ctx context.Context, objs *objstore.Store, table lancemanifest.Dir, objects []objstore.Attrs) (*refs, error) {
	r := &refs{branches: map[string]branchRef{}}
	tags, branches := table.Tags(), table.BranchRefs()
	for _, o := range objects {
		var into func([]byte) error
		switch {
		case strings.HasPrefix(o.Key, tags):
			name, ok := lancemanifest.TagOfRef(o.Key[len(tags):])
			if !ok {
				continue
			}
			into = func(b []byte) error {
				t, err := lancemanifest.ParseTagRef(b)
				if err == nil {
					r.tags = append(r.tags, tagRef{name: name, branch: t.Branch, version: t.Version})
				}
				return err
			}
		case strings.HasPrefix(o.Key, branches):
			name, ok := lancemanifest.BranchOfRef(o.Key[len(branches):])
			if !ok {
				continue
			}
			into = func(b []byte) error {
				p, err := lancemanifest.ParseBranchRef(b)
				if err == nil {
					r.branches[name] = branchRef{name: name, parent: p.Branch, parentVersion: p.Version}
				}
				return err
			}
		default:
			continue
		}
		b, err := objs.Get(ctx, o.Key)
		if err != nil {
			return nil, fmt.Errorf("cleanup: read %s: %w", o.Key, err)
		}
		if err := into(b); err != nil {
			return nil, &nserror.Error{Code: nserror.InvalidTableState, Err: err,
				Message: fmt.Sprintf("cleanup: cannot read ref file %s, so nothing is deleted (it may protect any version): %v", o.Key, err)}
		}
	}
	slices.SortFunc(r.tags, func(a, b tagRef) int { return strings.Compare(a.name, b.name) })
	return r, nil
}

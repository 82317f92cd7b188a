package manifesttable

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// index is the table's state in Go: every current row, namespaces and
// tables as Rows, table versions compactly per table. It is built only
// from durable segments and snapshots, and it is what every durable
// artifact derives from (segments' translation of the commit log,
// snapshots, renames, reconciliation); the SQL engine is a read replica
// of it and is never read back.
//
// Version slices are shared with frozen views (snapshots and compactions
// in progress, which read them without the lock) and copy-on-write
// towards them: a frozen view never sees an element change under it,
// because an array a view may hold is never written within its length —
// an insert before the end, a replacement or a removal makes a new array
// — and an append only writes past every old header's length. An array
// made since the last freeze is no view's: it is changed in place
// (fresh), so that the statistics of a table's newest version, which
// replace its row soon after every commit, cost O(1) and not a copy of
// the table's every version.
type index struct {
	objects map[Key]Row         // namespaces and tables, current
	byLoc   map[string]string   // table location -> table id
	kids    map[string]*kidList // namespace id -> its children
	vers    map[string][]verRow // verKey(table id, branch) -> its current versions, ascending
	// freezes counts the frozen views made (atomic: a freeze may run
	// under the read lock); fresh[k] = freezes says vers[k]'s array was
	// made after the last, so no view holds it.
	freezes uint64
	fresh   map[string]uint64
	nvers   int     // version rows in vers
	extra   Columns // extra columns of every row seen
	raw     map[string]arrow.DataType
	seq     uint64            // the catalog sequence the index stands at
	schemas map[string]string // version schemas, interned: most versions share one
}

func newIndex() index {
	return index{objects: map[Key]Row{}, byLoc: map[string]string{}, kids: map[string]*kidList{},
		vers: map[string][]verRow{}, fresh: map[string]uint64{}, extra: Columns{}, raw: map[string]arrow.DataType{}, schemas: map[string]string{}}
}

// verRow is one current table version row. The common row (the version's
// manifest, its size, time and transaction) is held in a few words; a
// row with anything else keeps its whole Row in full.
type verRow struct {
	v    uint64
	size uint64
	at   int64 // committed_at in µs since the epoch; 0 with noAt
	path string
	txn  string
	full *Row      // the row, when it has more than the fields above
	st   *verStats // its statistics, once read from its manifest
	noAt bool      // committed_at is NULL
}

// verStats is a version's statistics (see stats.go) and what they say
// of its upkeep (maintenance.go).
type verStats struct {
	rows, frags, bytes uint64
	small, deleted     uint64
	schema             string
	op                 string // interned (operationName)
	hasFrag            bool
}

func toVerRow(r Row) verRow {
	vr := verRow{v: r.TableVersion, size: r.ManifestSize, path: r.ManifestPath, txn: r.TxnID}
	if r.Schema != "" {
		vr.st = &verStats{rows: r.NumRows, frags: r.NumFragments, bytes: r.DataBytes, schema: r.Schema,
			small: r.SmallFragments, deleted: r.DeletedRows, hasFrag: r.HasFragmentStats, op: internOperation(r.Operation)}
	}
	if r.CommittedAt.IsZero() {
		vr.noAt = true
	} else {
		vr.at = r.CommittedAt.UnixMicro()
		if !time.UnixMicro(vr.at).UTC().Equal(r.CommittedAt) {
			vr.full = &r // finer than µs: keep it exactly
		}
	}
	if r.Location != "" || r.Metadata != "" || r.BaseObjects != nil || r.ReadVersion != 0 || r.ReadBranch != "" ||
		r.ReadTag != "" || r.HasSpecID || len(r.Extra) > 0 || !r.LastCleanupAt.IsZero() ||
		(r.Schema == "" && (r.HasFragmentStats || r.Operation != "")) {
		vr.full = &r
	}
	return vr
}

// verKey is the key in index.vers of a table branch's versions: the
// table's id for main, the id, a NUL and the branch for another branch,
// so that a table's branches sort right after it and before any other id.
func verKey(id, branch string) string {
	if branch == "" {
		return id
	}
	return id + "\x00" + branch
}

// splitVerKey is verKey's inverse.
func splitVerKey(k string) (id, branch string) {
	id, branch, _ = strings.Cut(k, "\x00")
	return id, branch
}

// row is the version row at vers key k.
func (vr verRow) row(k string) Row {
	id, branch := splitVerKey(k)
	if vr.full != nil {
		r := *vr.full
		r.ObjectID, r.Branch = id, branch
		return r
	}
	r := Row{ObjectID: id, Branch: branch, ObjectType: TypeTableVersion, TableVersion: vr.v, ManifestPath: vr.path,
		ManifestSize: vr.size, TxnID: vr.txn}
	if st := vr.st; st != nil {
		r.NumRows, r.NumFragments, r.DataBytes, r.Schema = st.rows, st.frags, st.bytes, st.schema
		r.SmallFragments, r.DeletedRows, r.HasFragmentStats, r.Operation = st.small, st.deleted, st.hasFrag, st.op
	}
	if !vr.noAt {
		r.CommittedAt = time.UnixMicro(vr.at).UTC()
	}
	return r
}

// findVersion returns the position of version v in vs, and whether it is
// there.
func findVersion(vs []verRow, v uint64) (int, bool) {
	return slices.BinarySearchFunc(vs, v, func(r verRow, v uint64) int {
		switch {
		case r.v < v:
			return -1
		case r.v > v:
			return 1
		}
		return 0
	})
}

// putVersion inserts or replaces a version row.
func (x *index) putVersion(r Row) {
	vr := toVerRow(r)
	if vr.st != nil && vr.full == nil {
		if have, ok := x.schemas[vr.st.schema]; ok {
			vr.st.schema = have
		} else {
			x.schemas[vr.st.schema] = vr.st.schema
		}
	}
	k := verKey(r.ObjectID, r.Branch)
	vs := x.vers[k]
	if n := len(vs); n == 0 || vs[n-1].v < vr.v {
		if n == 0 {
			k = strings.Clone(k)
		}
		x.vers[k] = append(vs, vr) // views never look past their own length
		x.nvers++
		return
	}
	i, ok := findVersion(vs, vr.v)
	if !ok {
		x.nvers++
	}
	switch {
	case ok && x.isFresh(k):
		vs[i] = vr
	case ok:
		x.setVersions(k, slices.Concat(vs[:i], []verRow{vr}, vs[i+1:]))
	case x.isFresh(k):
		x.vers[k] = slices.Insert(vs, i, vr)
	default:
		x.setVersions(k, slices.Concat(vs[:i], []verRow{vr}, vs[i:]))
	}
}

// isFresh reports whether vers key k's array was made after the last
// freeze: no frozen view holds it, and it may change in place.
func (x *index) isFresh(k string) bool {
	f, ok := x.fresh[k]
	return ok && f == atomic.LoadUint64(&x.freezes)
}

// setVersions makes vs, a new array, vers key k's (an existing key).
func (x *index) setVersions(k string, vs []verRow) {
	x.vers[k] = vs
	if _, ok := x.fresh[k]; !ok {
		k = strings.Clone(k)
	}
	x.fresh[k] = atomic.LoadUint64(&x.freezes)
}

// deleteVersion removes a version row at vers key id, if present.
func (x *index) deleteVersion(id string, v uint64) {
	vs := x.vers[id]
	i, ok := findVersion(vs, v)
	if !ok {
		return
	}
	x.nvers--
	switch {
	case len(vs) == 1:
		delete(x.vers, id)
		delete(x.fresh, id)
	case x.isFresh(id):
		x.vers[id] = slices.Delete(vs, i, i+1)
	default:
		x.setVersions(id, slices.Concat(vs[:i], vs[i+1:]))
	}
}

// hasVersion reports whether vers key id has a current row of version v.
func (x *index) hasVersion(id string, v uint64) bool {
	_, ok := findVersion(x.vers[id], v)
	return ok
}

// head is the highest current version at vers key id (0: none).
func (x *index) head(id string) uint64 {
	vs := x.vers[id]
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)-1].v
}

// versionRows returns the current version rows at vers key id (a table's
// main versions for its id), ascending.
func (x *index) versionRows(id string) []Row {
	vs := x.vers[id]
	out := make([]Row, len(vs))
	for i, vr := range vs {
		out[i] = vr.row(id)
	}
	return out
}

// allVersionRows returns a table's current version rows on every branch:
// main's, then each branch's in order. Finding the branches scans vers:
// it serves rare operations (a table dropped or renamed).
func (x *index) allVersionRows(id string) []Row {
	out := x.versionRows(id)
	for _, b := range x.branches(id) {
		out = append(out, x.versionRows(verKey(id, b))...)
	}
	return out
}

// branches returns the Lance branches of table id that have version rows,
// sorted. It scans vers: it serves rare operations.
func (x *index) branches(id string) []string {
	var out []string
	for k := range x.vers {
		if kid, b := splitVerKey(k); kid == id && b != "" {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// apply makes one change. The caller decided the change is next in
// sequence order.
func (x *index) apply(c change) {
	r := c.row
	k := r.Key()
	if k.Type == TypeTableVersion {
		if c.del {
			x.deleteVersion(verKey(k.ID, k.Branch), k.Version)
		} else {
			x.putVersion(r)
		}
		return
	}
	if old, ok := x.objects[k]; ok {
		if old.ObjectType == TypeTable && old.Location != "" {
			delete(x.byLoc, old.Location)
		}
		if kl := x.kids[parentID(k.ID)]; kl != nil {
			kl.ids = removeString(kl.ids, k.ID)
		}
		delete(x.objects, k)
	}
	defer x.touched(k.ID) // after the change: a new parent's list exists by then
	if c.del {
		return
	}
	x.objects[k] = r
	if r.ObjectType == TypeTable && r.Location != "" {
		x.byLoc[r.Location] = r.ObjectID
	}
	if k.ID != "" {
		parent := parentID(k.ID)
		kl := x.kids[parent]
		if kl == nil {
			kl = &kidList{}
			x.kids[parent] = kl
		}
		kl.ids = append(kl.ids, k.ID)
	}
}

// kidList is a namespace's children, and the generation of everything
// below it.
type kidList struct {
	ids []string // child ids, unsorted
	// gen is the stamp of the last change to a namespace or table at any
	// depth below: a reader that built something from the subtree at
	// one generation knows it is still what the index holds while the
	// generation is the same.
	gen uint64
}

// stamps numbers the index's changes to namespaces and tables, across
// every index of the process (a rebuilt index never repeats a stamp, so a
// generation read from an older index never matches a newer one).
var stamps atomic.Uint64

// touched records a change to the namespace or table id in the
// generation of each of its ancestors.
func (x *index) touched(id string) {
	stamp := stamps.Add(1)
	for p := id; p != ""; {
		p = parentID(p)
		if kl := x.kids[p]; kl != nil {
			kl.gen = stamp
		}
	}
}

// noteColumns records the extra columns of rows.
func (x *index) noteColumns(rows []Row) error {
	for i := range rows {
		for name, v := range rows[i].Extra {
			if r, ok := v.(Raw); ok {
				if _, typed := x.extra[name]; !typed {
					x.raw[name] = r.Type
				}
			}
		}
	}
	return x.extra.merge(stripRaw(rows))
}

// existed reports whether the key of c has a current row.
func (x *index) existed(k Key) bool {
	if k.Type == TypeTableVersion {
		return x.hasVersion(verKey(k.ID, k.Branch), k.Version)
	}
	_, ok := x.objects[k]
	return ok
}

// frozen is the index's rows at one sequence, taken under the index's
// read lock in O(namespaces + tables + versioned tables) and read after
// it is released (see index's note on copy-on-write).
type frozen struct {
	seq     uint64
	objects []Row
	ids     []string   // vers keys, sorted
	vers    [][]verRow // their versions
	extra   Columns
	raw     map[string]arrow.DataType

	sorted     bool
	oi, ti, vi int // next's position: object, versioned table, version
}

func (x *index) freeze() *frozen {
	atomic.AddUint64(&x.freezes, 1) // every array is shared with f from now on
	f := &frozen{seq: x.seq, objects: make([]Row, 0, len(x.objects)), ids: make([]string, 0, len(x.vers)),
		extra: Columns{}, raw: map[string]arrow.DataType{}}
	for _, r := range x.objects {
		f.objects = append(f.objects, r)
	}
	for id := range x.vers {
		f.ids = append(f.ids, id)
	}
	slices.Sort(f.ids)
	f.vers = make([][]verRow, len(f.ids))
	for i, id := range f.ids {
		f.vers[i] = x.vers[id]
	}
	for k, v := range x.extra {
		f.extra[k] = v
	}
	for k, v := range x.raw {
		f.raw[k] = v
	}
	return f
}

// next returns the next at most n frozen rows in key order (object type,
// id, version); none at the end.
func (f *frozen) next(n int) []Row {
	if !f.sorted {
		sortRows(f.objects)
		f.sorted = true
	}
	out := make([]Row, 0, n)
	for ; len(out) < n && f.oi < len(f.objects); f.oi++ {
		out = append(out, f.objects[f.oi])
	}
	for len(out) < n && f.ti < len(f.ids) {
		vs := f.vers[f.ti]
		for ; len(out) < n && f.vi < len(vs); f.vi++ {
			out = append(out, vs[f.vi].row(f.ids[f.ti]))
		}
		if f.vi == len(vs) {
			f.ti, f.vi = f.ti+1, 0
		}
	}
	return out
}

// parentID is the id of the namespace holding id ("" is the root).
func parentID(id string) string {
	if i := strings.LastIndex(id, IDSeparator); i >= 0 {
		return id[:i]
	}
	return ""
}

func removeString(s []string, v string) []string {
	for i := range s {
		if s[i] == v {
			s[i] = s[len(s)-1]
			return s[:len(s)-1]
		}
	}
	return s
}

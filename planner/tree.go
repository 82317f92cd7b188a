package planner

import (
	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/manifesttable"
)

// A partTree is one spec's partition tree of a table, as the catalog index
// held it at one generation of the spec's root (manifesttable.Index's
// Generation): every partition namespace's value, already decoded and
// projected through its field's transform, and every leaf's location as a
// URI. Plans walk it instead of the index, with no map look-up or
// decoding per node; it is rebuilt when anything below the root changes.
// Versions are not in it: a leaf's version is read from the index when it
// is planned.
type partTree struct {
	gen   uint64
	nodes []partNode
	leaf  *partLeaf // a spec without fields: the root's leaf
	size  int       // nodes in the tree
}

type partNode struct {
	val   Value
	dom   domain
	known bool // val could be read (a value this version cannot read stays unknown)
	kids  []partNode
	leaf  *partLeaf // at the last field's level: the leaf table, if any
}

type partLeaf struct {
	id, location string // location as a URI
	readVersion  uint64 // 0: the table's head when planned
}

// treeKey names a cached tree: the spec's root namespace, and the compiled
// spec (a table whose definition changed compiles new ones).
type treeKey struct {
	root string
	spec *specPlan
}

// maxTreeNodes bounds the nodes of the trees kept (a few hundred bytes
// each); past it the cache starts over.
const maxTreeNodes = 1 << 20

// tree returns sp's partition tree under root as ix holds it, from the
// cache when nothing below root changed since it was built.
func (p *Planner) tree(ix manifesttable.Index, sp *specPlan, root string) *partTree {
	key, gen := treeKey{root, sp}, ix.Generation(root)
	p.mu.Lock()
	t, ok := p.trees[key]
	p.mu.Unlock()
	if ok && t.gen == gen {
		return t
	}
	t = &partTree{gen: gen}
	if len(sp.fields) == 0 {
		t.leaf = p.leafAt(ix, root)
	} else {
		t.nodes = p.buildNodes(ix, sp, root, 0, &t.size)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.trees[key]; ok {
		p.treeNodes -= old.size
	}
	if p.trees == nil || p.treeNodes+t.size > maxTreeNodes {
		p.trees, p.treeNodes = map[treeKey]*partTree{}, 0
	}
	p.trees[key] = t
	p.treeNodes += t.size
	return t
}

// buildNodes reads the partition namespaces under parent, the values of
// field level.
func (p *Planner) buildNodes(ix manifesttable.Index, sp *specPlan, parent string, level int, size *int) []partNode {
	ids := ix.ChildIDs(parent)
	out := make([]partNode, 0, len(ids))
	*size += len(ids)
	for _, child := range ids {
		r, ok := ix.Object(manifesttable.TypeNamespace, child)
		if !ok {
			continue
		}
		var n partNode
		if v, known := valueOf(r.Extra[sp.cols[level]], sp.fields[level].kind); known {
			n.val, n.dom, n.known = v, sp.domainAt(level, v), true
		}
		if level+1 == len(sp.fields) {
			n.leaf = p.leafAt(ix, child)
		} else {
			n.kids = p.buildNodes(ix, sp, child, level+1, size)
		}
		out = append(out, n)
	}
	return out
}

// leafAt is the leaf table of the partition namespace id, if it has one.
func (p *Planner) leafAt(ix manifesttable.Index, id string) *partLeaf {
	r, ok := ix.Object(manifesttable.TypeTable, id+api.Delimiter+LeafName)
	if !ok {
		return nil
	}
	return &partLeaf{id: r.ObjectID, location: p.cat.LocationURI(r.Location), readVersion: r.ReadVersion}
}

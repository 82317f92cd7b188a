package planner

import (
	"strings"
)

// tri is what a predicate is over every row a partition can hold: true for
// all of them, false for all of them (FALSE or NULL: never TRUE), or maybe.
type tri int8

const (
	maybe tri = iota
	yes
	no
)

// nnf pushes NOT down to the atoms, negating them, so that every atom is
// judged on its own (under SQL's three-valued logic NOT of "never true" is
// not "always true" when values may be NULL). Each rewrite is an identity
// of three-valued logic (De Morgan; NOT (x < v) is x >= v, NULL for a
// NULL x on both sides; NOT UNKNOWN is UNKNOWN), so the result is TRUE,
// FALSE or UNKNOWN exactly where e is.
func nnf(e Expr, neg bool) Expr {
	switch x := e.(type) {
	case Not:
		return nnf(x.X, !neg)
	case And:
		if neg {
			return Or{nnf(x.Left, true), nnf(x.Right, true)}
		}
		return And{nnf(x.Left, false), nnf(x.Right, false)}
	case Or:
		if neg {
			return And{nnf(x.Left, true), nnf(x.Right, true)}
		}
		return Or{nnf(x.Left, false), nnf(x.Right, false)}
	case Literal:
		return Literal{Value: x.Value != neg}
	case Compare:
		if neg {
			x.Op = x.Op.Negate()
		}
		return x
	case In:
		x.Negated = x.Negated != neg
		return x
	case IsNull:
		x.Negated = x.Negated != neg
		return x
	case Like:
		x.Negated = x.Negated != neg
		return x
	}
	return e
}

// specPlan is a spec compiled for pruning: which fields say what about
// which source column.
type specPlan struct {
	spec   *Spec
	fields []resolved
	byCol  map[string][]int // source column (its schema name) -> single-source fields
	cols   []string         // each field's __manifest column
	multi  []int            // multi_bucket fields
}

func compileSpec(sp *Spec, fields []resolved) *specPlan {
	p := &specPlan{spec: sp, fields: fields, byCol: map[string][]int{}}
	for i, f := range fields {
		p.cols = append(p.cols, f.Column())
		switch {
		case f.Transform != nil && f.Transform.Type == TransformMultiBucket:
			p.multi = append(p.multi, i)
		case f.Transform != nil && len(f.sources) == 1:
			c := f.sources[0].Name
			p.byCol[c] = append(p.byCol[c], i)
		}
	}
	return p
}

// leafValues are the partition values known so far down a path: vals[i]
// is field i's value when known[i], and dom[i] what it says about its
// source column (computed once, when the value is set).
type leafValues struct {
	vals  []Value
	known []bool
	dom   []domain
}

func newLeafValues(n int) leafValues {
	return leafValues{vals: make([]Value, n), known: make([]bool, n), dom: make([]domain, n)}
}

// set makes field i's value known.
func (p *specPlan) set(lv *leafValues, i int, v Value) {
	lv.vals[i], lv.known[i], lv.dom[i] = v, true, p.domainAt(i, v)
}

// domainAt is what field i's value v says about the field's source
// column.
func (p *specPlan) domainAt(i int, v Value) domain {
	fd, usable := p.fields[i].preimage(v)
	if !usable {
		// A hash still tells NULL from not NULL.
		fd = domain{null: v.Null}
	}
	return fd
}

// domainOf intersects what the known fields on a column say about it;
// ok=false when they say nothing.
func (p *specPlan) domainOf(col string, lv *leafValues) (d domain, ok bool) {
	for _, i := range p.byCol[col] {
		if !lv.known[i] {
			continue
		}
		if !ok {
			d, ok = lv.dom[i], true
		} else {
			d = d.intersect(lv.dom[i])
		}
	}
	return d, ok
}

// bucketExcludes reports whether a known bucket field on col rules out a
// row whose col equals v.
func (p *specPlan) bucketExcludes(col string, v Value, lv *leafValues) bool {
	for _, i := range p.byCol[col] {
		f := &p.fields[i]
		if !lv.known[i] || lv.vals[i].Null || f.Transform.Type != TransformBucket {
			continue
		}
		if bucketOf(hashValue(v), f.Transform.NumBuckets) != lv.vals[i].I {
			return true
		}
	}
	return false
}

func (d domain) point() (Value, bool) {
	if d.lo != nil && d.hi != nil && d.loIncl && d.hiIncl && d.lo.Compare(*d.hi) == 0 {
		return *d.lo, true
	}
	return Value{}, false
}

func (d domain) allBelow(v Value, incl bool) bool { // every x < v (incl: x <= v)
	if d.hi == nil {
		return false
	}
	c := d.hi.Compare(v)
	return c < 0 || c == 0 && (incl || !d.hiIncl)
}

func (d domain) allAbove(v Value, incl bool) bool { // every x > v (incl: x >= v)
	if d.lo == nil {
		return false
	}
	c := d.lo.Compare(v)
	return c > 0 || c == 0 && (incl || !d.loIncl)
}

// compare judges `x op v` over the domain.
func (d domain) compare(op CmpOp, v Value) tri {
	pt, isPoint := d.point()
	switch op {
	case OpEq, OpNotEq:
		r := maybe
		if isPoint && pt.Compare(v) == 0 {
			r = yes
		} else if d.allBelow(v, false) || d.allAbove(v, false) {
			r = no
		}
		if op == OpNotEq {
			return r.not()
		}
		return r
	case OpLt:
		return decide(d.allBelow(v, false), d.allAbove(v, true))
	case OpLtEq:
		return decide(d.allBelow(v, true), d.allAbove(v, false))
	case OpGt:
		return decide(d.allAbove(v, false), d.allBelow(v, true))
	case OpGtEq:
		return decide(d.allAbove(v, true), d.allBelow(v, false))
	}
	return maybe
}

func decide(all, none bool) tri {
	switch {
	case all:
		return yes
	case none:
		return no
	}
	return maybe
}

// not negates a judgement over non-NULL values.
func (t tri) not() tri {
	switch t {
	case yes:
		return no
	case no:
		return yes
	}
	return maybe
}

// judge evaluates an NNF expression over a partition (lv) and returns the
// judgement and the residual filter: what is left to check on its rows.
func (p *specPlan) judge(e Expr, lv *leafValues) (tri, Expr) {
	switch x := e.(type) {
	case Literal:
		if x.Value {
			return yes, x
		}
		return no, x
	case Unknown:
		// In negation normal form no NOT is above it: never TRUE.
		return no, Literal{Value: false}
	case And:
		conj := flattenAnd(e, nil)
		res := yes
		var rest []Expr
		for _, c := range conj {
			t, r := p.judge(c, lv)
			switch t {
			case no:
				return no, Literal{Value: false}
			case maybe:
				res = maybe
				rest = append(rest, r)
			}
		}
		if res == maybe && p.multiExcludes(conj, lv) {
			return no, Literal{Value: false}
		}
		if res == yes {
			return yes, Literal{Value: true}
		}
		return maybe, joinAnd(rest)
	case Or:
		l, lr := p.judge(x.Left, lv)
		r, rr := p.judge(x.Right, lv)
		switch {
		case l == yes || r == yes:
			return yes, Literal{Value: true}
		case l == no && r == no:
			return no, Literal{Value: false}
		case l == no:
			return maybe, rr
		case r == no:
			return maybe, lr
		}
		return maybe, Or{lr, rr}
	}
	t := p.atom(e, lv)
	switch t {
	case yes:
		return yes, Literal{Value: true}
	case no:
		return no, Literal{Value: false}
	}
	return maybe, e
}

func flattenAnd(e Expr, out []Expr) []Expr {
	if a, ok := e.(And); ok {
		return flattenAnd(a.Right, flattenAnd(a.Left, out))
	}
	return append(out, e)
}

func joinAnd(es []Expr) Expr {
	if len(es) == 0 {
		return Literal{Value: true}
	}
	e := es[0]
	for _, r := range es[1:] {
		e = And{e, r}
	}
	return e
}

// atom judges one predicate.
//
//nolint:gocyclo // one case per operator and transform: the pruning table reads best as one switch
func (p *specPlan) atom(e Expr, lv *leafValues) tri {
	switch x := e.(type) {
	case Compare:
		d, ok := p.domainOf(x.Column, lv)
		t := maybe
		if ok {
			if d.empty || d.null {
				return no
			}
			t = d.compare(x.Op, x.Value)
		}
		if t != no && x.Op == OpEq && p.bucketExcludes(x.Column, x.Value, lv) {
			return no
		}
		return t
	case In:
		if len(x.Values) == 0 {
			return no
		}
		op := OpEq
		if x.Negated {
			op = OpNotEq
		}
		all, any := true, false
		for _, v := range x.Values {
			t := p.atom(Compare{Column: x.Column, Op: op, Value: v}, lv)
			if x.Negated {
				// NOT IN: true only if every <> is.
				if t == no {
					return no
				}
				all = all && t == yes
				continue
			}
			if t == yes {
				return yes
			}
			any = any || t != no
		}
		if x.Negated {
			if all {
				return yes
			}
			return maybe
		}
		if !any {
			return no
		}
		return maybe
	case IsNull:
		d, ok := p.domainOf(x.Column, lv)
		switch {
		case !ok:
			return maybe
		case d.empty:
			return no
		case d.null != x.Negated:
			return yes
		}
		return no
	case Like:
		d, ok := p.domainOf(x.Column, lv)
		if !ok {
			return maybe
		}
		if d.empty || d.null {
			return no
		}
		t := maybe
		if pt, isPoint := d.point(); isPoint {
			t = decide(likeMatch(pt.S, x.Pattern), true)
		} else if q, isPrefix := x.Prefix(); isPrefix {
			pd := prefixDomain(String(q))
			switch {
			case d.lo != nil && d.lo.Compare(*pd.lo) >= 0 && (pd.hi == nil || d.hi != nil && d.allBelow(*pd.hi, false)):
				t = yes
			case d.allBelow(*pd.lo, false) || pd.hi != nil && d.allAbove(*pd.hi, true):
				t = no
			}
		}
		if x.Negated {
			return t.not()
		}
		return t
	}
	return maybe
}

// multiExcludes checks the multi_bucket fields against the values a
// conjunction allows for all their sources: when every source is pinned to
// a few values and none of their combinations hashes to the partition's
// bucket, no row of the partition matches.
func (p *specPlan) multiExcludes(conj []Expr, lv *leafValues) bool {
	const maxCombos = 4096
	for _, i := range p.multi {
		if !lv.known[i] || lv.vals[i].Null {
			continue
		}
		f := &p.fields[i]
		sets := make([][]Value, len(f.sources))
		combos := 1
		for s, src := range f.sources {
			sets[s] = pinned(conj, src.Name)
			if sets[s] == nil {
				combos = 0
				break
			}
			combos *= len(sets[s])
			if combos > maxCombos {
				break
			}
		}
		if combos == 0 || combos > maxCombos {
			continue
		}
		if !anyCombination(sets, func(vs []Value) bool {
			var buf []byte
			for _, v := range vs {
				buf = hashBytes(v, buf)
			}
			return bucketOf(int32(murmur3(buf)), f.Transform.NumBuckets) == lv.vals[i].I
		}) {
			return true
		}
	}
	return false
}

// pinned is the values a conjunction allows for a column through = and
// IN, or nil when it does not pin the column.
func pinned(conj []Expr, col string) []Value {
	var out []Value
	set := false
	for _, c := range conj {
		var vals []Value
		switch x := c.(type) {
		case Compare:
			if x.Op != OpEq || !strings.EqualFold(x.Column, col) {
				continue
			}
			vals = []Value{x.Value}
		case In:
			if x.Negated || !strings.EqualFold(x.Column, col) {
				continue
			}
			vals = x.Values
		default:
			continue
		}
		if !set {
			out, set = append([]Value(nil), vals...), true
			continue
		}
		var keep []Value
		for _, v := range out {
			for _, w := range vals {
				if v.Equal(w) {
					keep = append(keep, v)
					break
				}
			}
		}
		out = keep
	}
	if set && out == nil {
		out = []Value{}
	}
	return out
}

func anyCombination(sets [][]Value, fn func([]Value) bool) bool {
	cur := make([]Value, len(sets))
	var rec func(int) bool
	rec = func(k int) bool {
		if k == len(sets) {
			return fn(cur)
		}
		for _, v := range sets[k] {
			cur[k] = v
			if rec(k + 1) {
				return true
			}
		}
		return false
	}
	return rec(0)
}

// likeMatch matches s against a LIKE pattern: % is any run, _ one
// character, no escape.
func likeMatch(s, pattern string) bool {
	sr, pr := []rune(s), []rune(pattern)
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(sr) {
		switch {
		case pi < len(pr) && (pr[pi] == '_' || pr[pi] == sr[si]) && pr[pi] != '%':
			si++
			pi++
		case pi < len(pr) && pr[pi] == '%':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pr) && pr[pi] == '%' {
		pi++
	}
	return pi == len(pr)
}

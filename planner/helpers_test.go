package planner

import (
	"encoding/json"
	"strings"
	"testing"
)

// testSchema is the schema of the pure tests: one column of each kind.
const testSchema = `{"fields":[
 {"name":"i","nullable":true,"type":{"type":"int64"},"metadata":{"lance:field_id":"1"}},
 {"name":"s","nullable":true,"type":{"type":"utf8"},"metadata":{"lance:field_id":"2"}},
 {"name":"d","nullable":true,"type":{"type":"date32"},"metadata":{"lance:field_id":"3"}},
 {"name":"ts","nullable":true,"type":{"type":"timestamp[us, tz=UTC]"},"metadata":{"lance:field_id":"4"}},
 {"name":"f","nullable":true,"type":{"type":"float64"},"metadata":{"lance:field_id":"5"}},
 {"name":"b","nullable":true,"type":{"type":"bool"},"metadata":{"lance:field_id":"6"}},
 {"name":"n","nullable":true,"type":{"type":"int32"},"metadata":{"lance:field_id":"7"}}
]}`

// testTable builds a table definition from spec field lists (JSON arrays
// of fields), v1 first, as the planner stores them.
func testTable(t testing.TB, specs ...string) *Table {
	t.Helper()
	_, schema, err := parseSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{SchemaProperty: testSchema}
	var earlier []*Spec
	for i, fields := range specs {
		sp := &Spec{ID: int32(i + 1)}
		if err := json.Unmarshal([]byte(fields), &sp.Fields); err != nil {
			t.Fatalf("spec %d: %v", i+1, err)
		}
		if _, err := evolve(sp, schema, earlier); err != nil {
			t.Fatalf("spec %d: %v", i+1, err)
		}
		earlier = append(earlier, sp)
		raw, _ := json.Marshal(sp)
		props[SpecProperty(sp.ID)] = string(raw)
	}
	md, _ := json.Marshal(props)
	tbl, err := parseTable([]string{"t"}, string(md))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// row is a row of the test schema by column name; absent is NULL.
type row map[string]Value

func (r row) get(c Column) Value {
	if v, ok := r[c.Name]; ok {
		return v
	}
	return Null(c.Kind)
}

// leafOf computes a row's partition values under a spec plan (every
// field known).
func leafOf(t testing.TB, sp *specPlan, r row) leafValues {
	t.Helper()
	lv := newLeafValues(len(sp.fields))
	for i := range sp.fields {
		f := &sp.fields[i]
		src := make([]Value, len(f.sources))
		for s, c := range f.sources {
			src[s] = r.get(c)
		}
		v, err := f.apply(src)
		if err != nil {
			t.Fatal(err)
		}
		sp.set(&lv, i, v)
	}
	return lv
}

// sqlEval evaluates a filter on a row with SQL's three-valued logic,
// independently of the planner's judging code: 1 true, 0 false, -1 NULL.
func sqlEval(e Expr, r row, schema *Schema) int {
	col := func(name string) Value {
		c, _ := schema.Lookup(name)
		return r.get(c)
	}
	switch x := e.(type) {
	case Literal:
		if x.Value {
			return 1
		}
		return 0
	case Unknown:
		return -1
	case Not:
		v := sqlEval(x.X, r, schema)
		if v < 0 {
			return v
		}
		return 1 - v
	case And:
		l, rr := sqlEval(x.Left, r, schema), sqlEval(x.Right, r, schema)
		switch {
		case l == 0 || rr == 0:
			return 0
		case l < 0 || rr < 0:
			return -1
		}
		return 1
	case Or:
		l, rr := sqlEval(x.Left, r, schema), sqlEval(x.Right, r, schema)
		switch {
		case l == 1 || rr == 1:
			return 1
		case l < 0 || rr < 0:
			return -1
		}
		return 0
	case Compare:
		v := col(x.Column)
		if v.Null {
			return -1
		}
		c := v.Compare(x.Value)
		ok := map[CmpOp]bool{OpEq: c == 0, OpNotEq: c != 0, OpLt: c < 0, OpLtEq: c <= 0, OpGt: c > 0, OpGtEq: c >= 0}[x.Op]
		return b2i(ok)
	case In:
		v := col(x.Column)
		if v.Null {
			return -1
		}
		found := false
		for _, w := range x.Values {
			found = found || v.Compare(w) == 0
		}
		return b2i(found != x.Negated)
	case IsNull:
		return b2i(col(x.Column).Null != x.Negated)
	case Like:
		v := col(x.Column)
		if v.Null {
			return -1
		}
		return b2i(refLike(v.S, x.Pattern) != x.Negated)
	}
	panic("unknown expression")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// refLike is a plain recursive LIKE matcher (the reference for likeMatch).
func refLike(s, p string) bool {
	if p == "" {
		return s == ""
	}
	switch {
	case strings.HasPrefix(p, "%"):
		for i := 0; i <= len(s); i++ {
			if refLike(s[i:], p[1:]) {
				return true
			}
		}
		return false
	case s == "":
		return false
	case p[0] == '_' || p[0] == s[0]:
		return refLike(s[1:], p[1:])
	}
	return false
}

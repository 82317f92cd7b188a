package planner

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/manifesttable"
)

// Plan is plan_scan's answer: every leaf that may hold rows matching the
// filter, as of one catalog sequence.
type Plan struct {
	Table  *Table
	Filter Expr   // as parsed
	Seq    uint64 // the catalog sequence every leaf was read at
	Leaves []PlannedLeaf
	cols   []planColumn
}

// PlannedLeaf is one leaf of a plan.
type PlannedLeaf struct {
	ID       string // $-joined
	Location string // URI
	// Version to read: the leaf's read_version, or its latest version
	// when it has none; 0 when the leaf has no version at all.
	Version  uint64
	SpecID   int32
	Values   []Value // by the plan's partition columns; Null where the spec has no such field
	Residual string  // what is left of the filter for the leaf's rows (SQL; TRUE when nothing is)
}

// planColumn is one partition_field_* column of the output.
type planColumn struct {
	name string
	kind Kind
	col  manifesttable.ColumnType
}

// SeqMetadataKey is the metadata key of the catalog sequence in a
// plan's Arrow schema.
const SeqMetadataKey = "flightns.catalog_seq"

// PlanScan plans a scan of a partitioned table: it parses the filter
// against the table's schema, then walks each spec's partition tree in the
// catalog index at one catalog sequence, judging the filter at every level
// through the fields' transforms (inclusive projection) and pruning
// subtrees where it can never be true. Leaves that may match are kept,
// with what is left of the filter for their rows.
func (p *Planner) PlanScan(ctx context.Context, id api.ID, filter string) (*Plan, error) {
	if err := id.Validate("partitioned table"); err != nil {
		return nil, err
	}
	if err := p.Authorize(ctx, auth.Read, id); err != nil {
		return nil, err
	}
	// Read your writes: every change logged before the plan (versions
	// linger briefly before their rows are written) is in the index first.
	if err := p.catchUp(ctx); err != nil {
		return nil, err
	}
	t, err := p.lookup(id)
	if err != nil {
		return nil, err
	}
	e, err := ParseFilter(filter, t.columns)
	if err != nil {
		return nil, err
	}
	pl := &Plan{Table: t, Filter: e, cols: t.partitionColumns()}
	norm := nnf(e, false)
	colIdx := map[string]int{}
	for i, c := range pl.cols {
		colIdx[c.name] = i
	}
	p.cat.View(func(ix manifesttable.Index) {
		pl.Seq = ix.Seq()
		for _, sp := range t.plans {
			w := walker{ix: ix, plan: sp, filter: norm, out: pl, slot: make([]int, len(sp.fields)),
				lv: newLeafValues(len(sp.fields))}
			for i, f := range sp.fields {
				w.slot[i] = colIdx[f.Column()]
			}
			root := t.ID.Child("v" + strconv.Itoa(int(sp.spec.ID))).String()
			if _, ok := ix.Object(manifesttable.TypeNamespace, root); !ok {
				continue
			}
			tree := p.tree(ix, sp, root)
			if tree.leaf != nil {
				// No fields: the leaf knows no more than its namespace.
				w.emit(tree.leaf, norm)
			}
			w.walk(tree.nodes, 0, norm)
		}
	})
	return pl, nil
}

// partitionColumns are the partition columns of every spec, in spec and
// field order, each once.
func (t *Table) partitionColumns() []planColumn {
	var out []planColumn
	seen := map[string]bool{}
	for _, sp := range t.plans {
		for _, f := range sp.fields {
			if !seen[f.Column()] {
				seen[f.Column()] = true
				out = append(out, planColumn{name: f.Column(), kind: f.kind, col: f.col})
			}
		}
	}
	return out
}

type walker struct {
	ix     manifesttable.Index
	plan   *specPlan
	filter Expr
	out    *Plan
	slot   []int // each field's place among the plan's partition columns
	lv     leafValues
	slab   []Value // where leaves' values are cut from
}

// walk visits the partition namespaces nodes, the values of field level
// (the fields before it known); residual is what is left of the filter
// there.
func (w *walker) walk(nodes []partNode, level int, residual Expr) {
	last := level+1 == len(w.plan.fields)
	for i := range nodes {
		n := &nodes[i]
		if n.known {
			w.lv.vals[level], w.lv.known[level], w.lv.dom[level] = n.val, true, n.dom
		}
		res := residual
		keep := true
		if lit, ok := residual.(Literal); !ok || !lit.Value { // (TRUE: settled above, every row below matches)
			var t tri
			t, res = w.plan.judge(w.filter, &w.lv)
			keep = t != no
		}
		switch {
		case !keep:
		case last:
			// The leaf knows no more than its namespace: its judgement is made.
			if n.leaf != nil {
				w.emit(n.leaf, res)
			}
		default:
			w.walk(n.kids, level+1, res)
		}
		w.lv.known[level] = false
	}
}

func (w *walker) emit(l *partLeaf, residual Expr) {
	n := len(w.out.cols)
	if len(w.slab) < n {
		w.slab = make([]Value, 1024*n)
	}
	leaf := PlannedLeaf{ID: l.id, Location: l.location, SpecID: w.plan.spec.ID,
		Values: w.slab[:n:n], Residual: residual.String()}
	w.slab = w.slab[n:]
	for i := range leaf.Values {
		leaf.Values[i] = Null(w.out.cols[i].kind)
	}
	for i, slot := range w.slot {
		if w.lv.known[i] { // (a value this version cannot read stays NULL, and the leaf in the plan)
			leaf.Values[slot] = w.lv.vals[i]
		}
	}
	leaf.Version = l.readVersion
	if leaf.Version == 0 {
		leaf.Version = w.ix.Head(l.id)
	}
	w.out.Leaves = append(w.out.Leaves, leaf)
}

// Schema is the plan's Arrow schema: table_id, location, read_version,
// partition_spec_id, the partition columns, residual_filter; the catalog
// sequence in its metadata.
func (pl *Plan) Schema() *arrow.Schema {
	fields := []arrow.Field{
		{Name: "table_id", Type: arrow.BinaryTypes.String},
		{Name: "location", Type: arrow.BinaryTypes.String},
		{Name: "read_version", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "partition_spec_id", Type: arrow.PrimitiveTypes.Int32},
	}
	for _, c := range pl.cols {
		t, _ := c.col.ArrowType()
		fields = append(fields, arrow.Field{Name: c.name, Type: t, Nullable: true})
	}
	fields = append(fields, arrow.Field{Name: "residual_filter", Type: arrow.BinaryTypes.String})
	md := arrow.NewMetadata([]string{SeqMetadataKey}, []string{strconv.FormatUint(pl.Seq, 10)})
	return arrow.NewSchema(fields, &md)
}

// MaxBatchRows bounds the rows of one record batch of a plan.
const MaxBatchRows = 64 << 10

// Records renders the plan as record batches (at least one, possibly
// empty); the caller releases them.
func (pl *Plan) Records(mem memory.Allocator) []arrow.RecordBatch {
	schema := pl.Schema()
	var out []arrow.RecordBatch
	for start := 0; start == 0 || start < len(pl.Leaves); start += MaxBatchRows {
		end := min(start+MaxBatchRows, len(pl.Leaves))
		b := array.NewRecordBuilder(mem, schema)
		for _, l := range pl.Leaves[start:end] {
			b.Field(0).(*array.StringBuilder).Append(l.ID)
			b.Field(1).(*array.StringBuilder).Append(l.Location)
			if l.Version == 0 {
				b.Field(2).AppendNull()
			} else {
				b.Field(2).(*array.Uint64Builder).Append(l.Version)
			}
			b.Field(3).(*array.Int32Builder).Append(l.SpecID)
			for i, c := range pl.cols {
				appendValue(b.Field(4+i), l.Values[i], c.col)
			}
			b.Field(4 + len(pl.cols)).(*array.StringBuilder).Append(l.Residual)
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

func appendValue(b array.Builder, v Value, col manifesttable.ColumnType) {
	if v.Null {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		bb.Append(v.I != 0)
	case *array.Int32Builder:
		bb.Append(int32(v.I))
	case *array.Int64Builder:
		bb.Append(v.I)
	case *array.Float64Builder:
		bb.Append(v.F)
	case *array.StringBuilder:
		bb.Append(v.S)
	case *array.BinaryBuilder:
		bb.Append([]byte(v.S))
	case *array.Date32Builder:
		bb.Append(arrow.Date32(v.I))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(v.I))
	default:
		b.AppendNull()
	}
}

// MarshalJSON renders the plan for JSON clients: the catalog sequence and
// one object per leaf, partition values by column.
func (pl *Plan) MarshalJSON() ([]byte, error) {
	type leaf struct {
		TableID     string         `json:"table_id"`
		Location    string         `json:"location"`
		ReadVersion *uint64        `json:"read_version"`
		SpecID      int32          `json:"partition_spec_id"`
		Values      map[string]any `json:"partition_values"`
		Residual    string         `json:"residual_filter"`
	}
	out := struct {
		Seq    uint64 `json:"catalog_seq"`
		Leaves []leaf `json:"leaves"`
	}{Seq: pl.Seq, Leaves: make([]leaf, 0, len(pl.Leaves))}
	for _, l := range pl.Leaves {
		j := leaf{TableID: l.ID, Location: l.Location, SpecID: l.SpecID, Values: map[string]any{}, Residual: l.Residual}
		if l.Version != 0 {
			v := l.Version
			j.ReadVersion = &v
		}
		for i, c := range pl.cols {
			if !l.Values[i].Null {
				j.Values[c.name] = jsonOf(l.Values[i])
			}
		}
		out.Leaves = append(out.Leaves, j)
	}
	return json.Marshal(out)
}

package manifesttable

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The __manifest columns (docs/manifest.md), in order.
const (
	ColObjectID     = "object_id"
	ColObjectType   = "object_type"
	ColLocation     = "location"
	ColMetadata     = "metadata"
	ColBaseObjects  = "base_objects"
	ColTableVersion = "table_version"
	ColManifestPath = "manifest_path"
	ColManifestSize = "manifest_size"
	ColCommittedAt  = "committed_at"
	ColTxnID        = "txn_id"
	ColReadVersion  = "read_version"
	ColReadBranch   = "read_branch"
	ColReadTag      = "read_tag"
	ColSpecID       = "partition_spec_id"
	ColBranch       = "branch"
	ColNumRows      = "num_rows"
	ColNumFragments = "num_fragments"
	ColDataBytes    = "data_bytes"
	ColSchema       = "schema"
	// Columns added after the first release: segments and snapshots
	// written before them read them as NULL.
	ColSmallFragments = "small_fragments"
	ColDeletedRows    = "deleted_rows"
	ColOperation      = "operation"
	ColLastCleanupAt  = "last_cleanup_at"

	// Segment-only columns: what a change does and its catalog sequence.
	colOp  = "_op"
	colSeq = "_seq"
)

var timestampUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

var baseFields = []arrow.Field{
	{Name: ColObjectID, Type: arrow.BinaryTypes.String},
	{Name: ColObjectType, Type: arrow.BinaryTypes.String},
	{Name: ColLocation, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColMetadata, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColBaseObjects, Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: ColTableVersion, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: ColManifestPath, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColManifestSize, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: ColCommittedAt, Type: timestampUTC, Nullable: true},
	{Name: ColTxnID, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColReadVersion, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: ColReadBranch, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColReadTag, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColSpecID, Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: ColBranch, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColNumRows, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: ColNumFragments, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: ColDataBytes, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: ColSchema, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColSmallFragments, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: ColDeletedRows, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: ColOperation, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColLastCleanupAt, Type: timestampUTC, Nullable: true},
}

var baseColumns = func() map[string]bool {
	m := map[string]bool{colOp: true, colSeq: true}
	for _, f := range baseFields {
		m[f.Name] = true
	}
	return m
}()

// Raw is an extra value of a column whose type flightns does not model,
// found in storage: it is kept as its Arrow type and string form and
// written back unchanged.
type Raw struct {
	Type  arrow.DataType
	Value string
}

// Schema is the Arrow schema of __manifest with the given extra columns
// (and, for segments, the _op and _seq columns).
func Schema(extra Columns, raw map[string]arrow.DataType, segment bool) *arrow.Schema {
	fields := append([]arrow.Field(nil), baseFields...)
	for _, name := range extra.Names() {
		t, _ := extra[name].ArrowType()
		fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: true})
	}
	for _, name := range sortedKeys(raw) {
		fields = append(fields, arrow.Field{Name: name, Type: raw[name], Nullable: true})
	}
	if segment {
		fields = append(fields,
			arrow.Field{Name: colOp, Type: arrow.BinaryTypes.String},
			arrow.Field{Name: colSeq, Type: arrow.PrimitiveTypes.Uint64})
	}
	return arrow.NewSchema(fields, nil)
}

// change is one row of a segment.
type change struct {
	seq uint64
	del bool
	row Row
	// existed: the key may have had a current row before the segment
	// (decided when the segment is accepted, in order; not stored).
	existed bool
}

// buildRecord turns rows (or changes, for a segment) into one record.
func buildRecord(schema *arrow.Schema, rows []Row, changes []change) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	n := len(rows)
	if changes != nil {
		n = len(changes)
	}
	for i := range n {
		var r *Row
		if changes != nil {
			r = &changes[i].row
		} else {
			r = &rows[i]
		}
		appendRow(b, schema, r)
		if changes != nil {
			nf := schema.NumFields()
			op := "put"
			if changes[i].del {
				op = "delete"
			}
			b.Field(nf - 2).(*array.StringBuilder).Append(op)
			b.Field(nf - 1).(*array.Uint64Builder).Append(changes[i].seq)
		}
	}
	return b.NewRecordBatch()
}

func appendStr(b array.Builder, s string) {
	if s == "" {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(s)
}

func appendU64(b array.Builder, v uint64) {
	if v == 0 {
		b.AppendNull()
		return
	}
	b.(*array.Uint64Builder).Append(v)
}

func appendTime(b array.Builder, t time.Time) {
	if t.IsZero() {
		b.AppendNull()
		return
	}
	b.(*array.TimestampBuilder).Append(arrow.Timestamp(t.UnixMicro()))
}

func appendRow(b *array.RecordBuilder, schema *arrow.Schema, r *Row) {
	b.Field(0).(*array.StringBuilder).Append(r.ObjectID)
	b.Field(1).(*array.StringBuilder).Append(r.ObjectType)
	appendStr(b.Field(2), r.Location)
	appendStr(b.Field(3), r.Metadata)
	if r.BaseObjects == nil {
		b.Field(4).AppendNull()
	} else {
		lb := b.Field(4).(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		for _, s := range r.BaseObjects {
			vb.Append(s)
		}
	}
	appendU64(b.Field(5), r.TableVersion)
	appendStr(b.Field(6), r.ManifestPath)
	appendU64(b.Field(7), r.ManifestSize)
	appendTime(b.Field(8), r.CommittedAt)
	appendStr(b.Field(9), r.TxnID)
	appendU64(b.Field(10), r.ReadVersion)
	appendStr(b.Field(11), r.ReadBranch)
	appendStr(b.Field(12), r.ReadTag)
	if r.HasSpecID {
		b.Field(13).(*array.Int32Builder).Append(r.SpecID)
	} else {
		b.Field(13).AppendNull()
	}
	appendStr(b.Field(14), r.Branch)
	if r.Schema == "" {
		// No statistics yet: NULL, not zero rows.
		b.Field(15).AppendNull()
		b.Field(16).AppendNull()
		b.Field(17).AppendNull()
	} else {
		b.Field(15).(*array.Uint64Builder).Append(r.NumRows)
		b.Field(16).(*array.Uint64Builder).Append(r.NumFragments)
		b.Field(17).(*array.Uint64Builder).Append(r.DataBytes)
	}
	appendStr(b.Field(18), r.Schema)
	if r.HasFragmentStats {
		b.Field(19).(*array.Uint64Builder).Append(r.SmallFragments)
		b.Field(20).(*array.Uint64Builder).Append(r.DeletedRows)
	} else {
		b.Field(19).AppendNull()
		b.Field(20).AppendNull()
	}
	appendStr(b.Field(21), r.Operation)
	appendTime(b.Field(22), r.LastCleanupAt)
	for i := len(baseFields); i < schema.NumFields(); i++ {
		name := schema.Field(i).Name
		if name == colOp || name == colSeq {
			continue
		}
		appendExtra(b.Field(i), r.Extra[name])
	}
}

func appendExtra(b array.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.AppendNull()
	case bool:
		b.(*array.BooleanBuilder).Append(v)
	case int32:
		b.(*array.Int32Builder).Append(v)
	case int64:
		b.(*array.Int64Builder).Append(v)
	case uint64:
		b.(*array.Uint64Builder).Append(v)
	case float64:
		b.(*array.Float64Builder).Append(v)
	case string:
		b.(*array.StringBuilder).Append(v)
	case []byte:
		b.(*array.BinaryBuilder).Append(v)
	case arrow.Date32:
		b.(*array.Date32Builder).Append(v)
	case time.Time:
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(v.UnixMicro()))
	case Raw:
		if err := b.AppendValueFromString(v.Value); err != nil {
			b.AppendNull()
		}
	default:
		b.AppendNull()
	}
}

// readRecord turns a record (of a snapshot or a segment) into rows or
// changes, collecting the extra columns it has.
func readRecord(rec arrow.RecordBatch, extra Columns, raw map[string]arrow.DataType) ([]change, error) {
	schema := rec.Schema()
	col := func(name string) arrow.Array {
		idx := schema.FieldIndices(name)
		if len(idx) == 0 {
			return nil
		}
		return rec.Column(idx[0])
	}
	str := func(name string) func(i int) string {
		a := col(name)
		if a == nil {
			return func(int) string { return "" }
		}
		sa, ok := a.(*array.String)
		if !ok {
			return func(int) string { return "" }
		}
		return func(i int) string {
			if sa.IsNull(i) {
				return ""
			}
			// Value aliases the record's buffer, which may be C memory
			// or a large shared buffer: keep a copy.
			return strings.Clone(sa.Value(i))
		}
	}
	u64 := func(name string) func(i int) uint64 {
		ua, ok := col(name).(*array.Uint64)
		if !ok {
			return func(int) uint64 { return 0 }
		}
		return func(i int) uint64 {
			if ua.IsNull(i) {
				return 0
			}
			return ua.Value(i)
		}
	}
	// present: the column exists (a file written before it did has
	// none) and holds a value at i.
	present := func(name string) func(i int) bool {
		a := col(name)
		if a == nil {
			return func(int) bool { return false }
		}
		return a.IsValid
	}
	id, typ := str(ColObjectID), str(ColObjectType)
	if col(ColObjectID) == nil || col(ColObjectType) == nil {
		return nil, fmt.Errorf("manifesttable: record without %s or %s", ColObjectID, ColObjectType)
	}
	loc, meta, path, txn, branch, tag := str(ColLocation), str(ColMetadata), str(ColManifestPath), str(ColTxnID), str(ColReadBranch), str(ColReadTag)
	onBranch, schemaOf, operation := str(ColBranch), str(ColSchema), str(ColOperation)
	smallFrags, hasSmall := u64(ColSmallFragments), present(ColSmallFragments)
	deleted := u64(ColDeletedRows)
	cleaned, _ := col(ColLastCleanupAt).(*array.Timestamp)
	nrows, nfrags, nbytes := u64(ColNumRows), u64(ColNumFragments), u64(ColDataBytes)
	ver, size, rv := u64(ColTableVersion), u64(ColManifestSize), u64(ColReadVersion)
	op, seq := str(colOp), u64(colSeq)
	bases, _ := col(ColBaseObjects).(*array.List)
	committed, _ := col(ColCommittedAt).(*array.Timestamp)
	spec, _ := col(ColSpecID).(*array.Int32)

	type extraCol struct {
		name string
		arr  arrow.Array
		typ  ColumnType
		raw  bool
	}
	var extras []extraCol
	for i, f := range schema.Fields() {
		if baseColumns[f.Name] {
			continue
		}
		if t, ok := columnTypeOf(f.Type); ok {
			if have, ok := extra[f.Name]; ok && have != t {
				return nil, fmt.Errorf("manifesttable: column %s is %s here and %s elsewhere", f.Name, t, have)
			}
			extra[f.Name] = t
			extras = append(extras, extraCol{name: f.Name, arr: rec.Column(i), typ: t})
		} else {
			raw[f.Name] = f.Type
			extras = append(extras, extraCol{name: f.Name, arr: rec.Column(i), raw: true})
		}
	}

	out := make([]change, rec.NumRows())
	for i := range out {
		r := Row{ObjectID: id(i), ObjectType: typ(i), Location: loc(i), Metadata: meta(i), TableVersion: ver(i),
			ManifestPath: path(i), ManifestSize: size(i), TxnID: txn(i), ReadVersion: rv(i), ReadBranch: branch(i), ReadTag: tag(i),
			Branch: onBranch(i), NumRows: nrows(i), NumFragments: nfrags(i), DataBytes: nbytes(i), Schema: schemaOf(i),
			SmallFragments: smallFrags(i), DeletedRows: deleted(i), HasFragmentStats: hasSmall(i), Operation: operation(i)}
		if bases != nil && bases.IsValid(i) {
			start, end := bases.ValueOffsets(i)
			vals := bases.ListValues().(*array.String)
			r.BaseObjects = make([]string, 0, end-start)
			for j := start; j < end; j++ {
				r.BaseObjects = append(r.BaseObjects, strings.Clone(vals.Value(int(j))))
			}
		}
		if committed != nil && committed.IsValid(i) {
			r.CommittedAt = time.UnixMicro(int64(committed.Value(i))).UTC()
		}
		if cleaned != nil && cleaned.IsValid(i) {
			r.LastCleanupAt = time.UnixMicro(int64(cleaned.Value(i))).UTC()
		}
		if spec != nil && spec.IsValid(i) {
			r.HasSpecID, r.SpecID = true, spec.Value(i)
		}
		for _, e := range extras {
			if e.arr.IsNull(i) {
				continue
			}
			if r.Extra == nil {
				r.Extra = map[string]any{}
			}
			if e.raw {
				r.Extra[e.name] = Raw{Type: e.arr.DataType(), Value: strings.Clone(e.arr.ValueStr(i))}
				continue
			}
			r.Extra[e.name] = extraValue(e.arr, i)
		}
		out[i] = change{seq: seq(i), del: op(i) == "delete", row: r}
	}
	return out, nil
}

func extraValue(a arrow.Array, i int) any {
	switch a := a.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return strings.Clone(a.Value(i))
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...)
	case *array.Date32:
		return a.Value(i)
	case *array.Timestamp:
		return time.UnixMicro(int64(a.Value(i))).UTC()
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

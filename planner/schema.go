package planner

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// JSONType is a JsonArrowDataType of the Lance Namespace spec: {"type":
// "int64"}. Timestamps may name a unit and zone the way Arrow prints them
// ("timestamp", "timestamp[us]", "timestamp[ns, tz=UTC]").
type JSONType struct {
	Type string `json:"type"`
}

// JSONField is one field of a JsonArrowSchema.
type JSONField struct {
	Name     string            `json:"name"`
	Nullable bool              `json:"nullable"`
	Type     JSONType          `json:"type"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// JSONSchema is a JsonArrowSchema: the schema of a partitioned table, its
// fields carrying their ids as "lance:field_id" metadata.
type JSONSchema struct {
	Fields   []JSONField       `json:"fields"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// FieldIDKey is the field metadata key holding a column's field id.
const FieldIDKey = "lance:field_id"

// typeInfo is what the planner knows of a type name: its kind, the
// __manifest column type of a value of it, and whether it is integral of
// at most 32 bits (identity keeps int32 columns narrow).
type typeInfo struct {
	kind Kind
	col  manifesttable.ColumnType
}

// intBounds is the range of an integer type name narrower than int64.
func intBounds(name string) (lo, hi int64, ok bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "int8":
		return math.MinInt8, math.MaxInt8, true
	case "int16":
		return math.MinInt16, math.MaxInt16, true
	case "int32":
		return math.MinInt32, math.MaxInt32, true
	case "uint8":
		return 0, math.MaxUint8, true
	case "uint16":
		return 0, math.MaxUint16, true
	case "uint32":
		return 0, math.MaxUint32, true
	}
	return 0, 0, false
}

// checkFits refuses an integer value outside its column type's range
// (what would wrap in a narrow __manifest column or fail in an engine).
func checkFits(v Value, typ, what string) error {
	if v.Null || v.Kind != KindInt {
		return nil
	}
	if lo, hi, ok := intBounds(typ); ok && (v.I < lo || v.I > hi) {
		return nserror.New(nserror.InvalidInput, "%s: %d does not fit %s (%d..%d)", what, v.I, typ, lo, hi)
	}
	return nil
}

// typeOf resolves a JsonArrowDataType name.
func typeOf(name string) (typeInfo, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if strings.HasPrefix(n, "timestamp") {
		return typeInfo{KindTimestamp, manifesttable.ColTimestamp}, true
	}
	switch n {
	case "bool", "boolean":
		return typeInfo{KindBool, manifesttable.ColBool}, true
	case "int8", "int16", "int32", "uint8", "uint16":
		return typeInfo{KindInt, manifesttable.ColInt32}, true
	case "int64", "uint32":
		return typeInfo{KindInt, manifesttable.ColInt64}, true
	case "float16", "float32", "float64", "float", "double", "halffloat":
		return typeInfo{KindFloat, manifesttable.ColFloat64}, true
	case "utf8", "large_utf8", "string", "large_string", "utf8view", "string_view":
		return typeInfo{KindString, manifesttable.ColUtf8}, true
	case "binary", "large_binary", "binary_view":
		return typeInfo{KindBinary, manifesttable.ColBinary}, true
	case "date32", "date64", "date", "date32[day]", "date64[ms]":
		return typeInfo{KindDate, manifesttable.ColDate32}, true
	}
	return typeInfo{}, false
}

// parseSchema reads a partitioned table's schema: every field needs a
// unique lance:field_id and a type the planner knows (other types may be
// present, but no partition field or filter may use them).
func parseSchema(raw string) (*JSONSchema, *Schema, error) {
	var js JSONSchema
	if err := json.Unmarshal([]byte(raw), &js); err != nil {
		return nil, nil, nserror.New(nserror.InvalidInput, "schema: not a JsonArrowSchema: %v", err)
	}
	if len(js.Fields) == 0 {
		return nil, nil, nserror.New(nserror.InvalidInput, "schema: no fields")
	}
	s := &Schema{}
	ids := map[int32]string{}
	names := map[string]bool{}
	for i, f := range js.Fields {
		if f.Name == "" {
			return nil, nil, nserror.New(nserror.InvalidInput, "schema: field %d has no name", i)
		}
		if names[f.Name] {
			return nil, nil, nserror.New(nserror.InvalidInput, "schema: two fields are named %q", f.Name)
		}
		names[f.Name] = true
		idText, ok := f.Metadata[FieldIDKey]
		if !ok {
			return nil, nil, nserror.New(nserror.InvalidInput, "schema: field %q has no %s metadata", f.Name, FieldIDKey)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 {
			return nil, nil, nserror.New(nserror.InvalidInput, "schema: field %q: %s %q is not a field id", f.Name, FieldIDKey, idText)
		}
		if other, dup := ids[int32(id)]; dup {
			return nil, nil, nserror.New(nserror.InvalidInput, "schema: fields %q and %q share field id %d", other, f.Name, id)
		}
		ids[int32(id)] = f.Name
		c := Column{Name: f.Name, FieldID: int32(id), Kind: KindNull, Type: f.Type.Type}
		if ti, ok := typeOf(f.Type.Type); ok {
			c.Kind = ti.kind
		}
		s.Columns = append(s.Columns, c)
	}
	return &js, s, nil
}

// columnType is the __manifest column type of a column's values.
func (c Column) columnType() (manifesttable.ColumnType, error) {
	ti, ok := typeOf(c.Type)
	if !ok {
		return "", nserror.New(nserror.InvalidInput, "column %q has type %q, which partitions cannot use", c.Name, c.Type)
	}
	return ti.col, nil
}

func (c Column) String() string {
	return fmt.Sprintf("%s (%s, field id %d)", c.Name, c.Type, c.FieldID)
}

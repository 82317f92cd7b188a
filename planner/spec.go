package planner

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// Transform is a partition field's well-known transform, as the Lance
// partitioning spec writes it: {"type": "bucket", "num_buckets": 16}.
// Types: identity, year, month, day, hour, bucket, multi_bucket, truncate.
type Transform struct {
	Type       string `json:"type"`
	NumBuckets int    `json:"num_buckets,omitempty"`
	Width      int    `json:"width,omitempty"`
}

// The transform types.
const (
	TransformIdentity    = "identity"
	TransformYear        = "year"
	TransformMonth       = "month"
	TransformDay         = "day"
	TransformHour        = "hour"
	TransformBucket      = "bucket"
	TransformMultiBucket = "multi_bucket"
	TransformTruncate    = "truncate"
)

// Field is one partition field of a spec. Exactly one of Transform and
// Expression is set. FieldID names the field across every spec of the
// table and its __manifest column, partition_field_<field_id>; an empty
// one is assigned when the spec is stored (an earlier field's id when the
// signature — sources, transform or expression, result type — matches).
type Field struct {
	FieldID    string     `json:"field_id"`
	SourceIDs  []int32    `json:"source_ids"`
	Transform  *Transform `json:"transform,omitempty"`
	Expression string     `json:"expression,omitempty"`
	ResultType *JSONType  `json:"result_type,omitempty"`
}

// UnmarshalJSON accepts field_id as a JSON string or integer.
func (f *Field) UnmarshalJSON(b []byte) error {
	type plain Field
	var aux struct {
		plain
		FieldID json.RawMessage `json:"field_id"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*f = Field(aux.plain)
	f.FieldID = ""
	if len(aux.FieldID) > 0 && string(aux.FieldID) != "null" {
		var s string
		if err := json.Unmarshal(aux.FieldID, &s); err != nil {
			var n json.Number
			if err := json.Unmarshal(aux.FieldID, &n); err != nil {
				return fmt.Errorf("field_id is neither a string nor an integer")
			}
			s = n.String()
		}
		f.FieldID = s
	}
	return nil
}

// Column is the field's __manifest column.
func (f *Field) Column() string { return "partition_field_" + f.FieldID }

// signature identifies what a field computes, for field-id reuse.
func (f *Field) signature() string {
	b, _ := json.Marshal(struct {
		S []int32
		T *Transform
		E string
		R *JSONType
	}{f.SourceIDs, f.Transform, f.Expression, f.ResultType})
	return string(b)
}

// Spec is one partition spec version: stored as the partitioned table's
// namespace property partition_spec_v<ID>, its leaves under the child
// namespace v<ID>.
type Spec struct {
	ID     int32   `json:"id"`
	Fields []Field `json:"fields"`
}

// SpecProperty names the property of spec version id.
func SpecProperty(id int32) string { return "partition_spec_v" + strconv.Itoa(int(id)) }

// specFromProperty reads a stored spec; a bare array of fields (the older
// spec text) is accepted too.
func specFromProperty(id int32, raw string) (*Spec, error) {
	var sp Spec
	if strings.HasPrefix(strings.TrimSpace(raw), "[") {
		if err := json.Unmarshal([]byte(raw), &sp.Fields); err != nil {
			return nil, err
		}
		sp.ID = id
	} else if err := json.Unmarshal([]byte(raw), &sp); err != nil {
		return nil, err
	}
	if sp.ID != id {
		return nil, fmt.Errorf("%s holds spec id %d", SpecProperty(id), sp.ID)
	}
	return &sp, nil
}

var fieldIDPattern = regexp.MustCompile(`^[a-z0-9_]{1,47}$`)

// MaxFields bounds the fields of a spec (and so the depth of its tree).
const MaxFields = 16

// resolved is a field checked against the schema: its source columns and
// the type of its values.
type resolved struct {
	Field
	sources []Column
	kind    Kind                     // of partition values
	col     manifesttable.ColumnType // of the __manifest column
}

// checkField validates a field against the schema and fills in its result
// type.
func checkField(f *Field, schema *Schema) (resolved, error) {
	r := resolved{Field: *f}
	bad := func(format string, args ...any) (resolved, error) {
		name := f.FieldID
		if name == "" {
			name = "(new)"
		}
		return resolved{}, nserror.New(nserror.InvalidInput, "partition field %s: %s", name, fmt.Sprintf(format, args...))
	}
	if f.FieldID != "" && !fieldIDPattern.MatchString(f.FieldID) {
		return bad("field_id must be 1 to 47 of a-z, 0-9 and _")
	}
	if len(f.SourceIDs) == 0 {
		return bad("source_ids is empty")
	}
	for _, id := range f.SourceIDs {
		c, ok := schema.ByFieldID(id)
		if !ok {
			return bad("source id %d is no field of the schema", id)
		}
		r.sources = append(r.sources, c)
	}
	if (f.Transform == nil) == (f.Expression == "") {
		return bad("set exactly one of transform and expression")
	}
	if f.Expression != "" {
		if f.ResultType == nil {
			return bad("an expression needs a result_type")
		}
		ti, ok := typeOf(f.ResultType.Type)
		if !ok {
			return bad("result_type %q is not a type partitions can hold", f.ResultType.Type)
		}
		r.kind, r.col = ti.kind, ti.col
		return r, nil
	}
	t := f.Transform
	if err := r.transformResult(t, func(format string, args ...any) error {
		_, err := bad(format, args...)
		return err
	}); err != nil {
		return resolved{}, err
	}
	derived := JSONType{Type: string(r.col)}
	if f.ResultType != nil {
		ti, ok := typeOf(f.ResultType.Type)
		if !ok || ti.col != r.col {
			return bad("result_type %q does not match what %s yields (%s)", f.ResultType.Type, t.Type, r.col)
		}
	}
	r.ResultType = &derived
	return r, nil
}

// transformResult checks transform t against the field's source columns
// and sets the kind and column type of what it yields; fail makes the
// field's error.
func (r *resolved) transformResult(t *Transform, fail func(format string, args ...any) error) error {
	src := r.sources[0]
	if t.Type != TransformMultiBucket && len(r.sources) != 1 {
		return fail("%s takes one source column, not %d", t.Type, len(r.sources))
	}
	if t.Type != TransformBucket && t.Type != TransformMultiBucket && t.NumBuckets != 0 ||
		t.Type != TransformTruncate && t.Width != 0 {
		return fail("%s takes no num_buckets or width", t.Type)
	}
	need := func(ok bool, what string) error {
		if !ok {
			return fail("%s needs %s, and %s is %s", t.Type, what, src.Name, src.Type)
		}
		return nil
	}
	var err error
	switch t.Type {
	case TransformIdentity:
		if err = need(src.Kind != KindNull, "a column of a known type"); err == nil {
			r.kind = src.Kind
			r.col, err = src.columnType()
		}
	case TransformYear, TransformMonth:
		err = need(src.Kind == KindDate || src.Kind == KindTimestamp, "a date or timestamp column")
		r.kind, r.col = KindInt, manifesttable.ColInt32
	case TransformDay:
		err = need(src.Kind == KindDate || src.Kind == KindTimestamp, "a date or timestamp column")
		r.kind, r.col = KindDate, manifesttable.ColDate32
	case TransformHour:
		err = need(src.Kind == KindTimestamp, "a timestamp column")
		r.kind, r.col = KindInt, manifesttable.ColInt32
	case TransformBucket, TransformMultiBucket:
		if t.NumBuckets <= 0 || t.NumBuckets > 1<<20 {
			return fail("num_buckets must be 1 to %d", 1<<20)
		}
		for _, c := range r.sources {
			if !slices.Contains([]Kind{KindInt, KindDate, KindTimestamp, KindString, KindBinary}, c.Kind) {
				return fail("%s cannot hash %s", t.Type, c)
			}
		}
		r.kind, r.col = KindInt, manifesttable.ColInt32
	case TransformTruncate:
		if t.Width <= 0 {
			return fail("width must be positive")
		}
		if err = need(src.Kind == KindInt || src.Kind == KindString || src.Kind == KindBinary, "an integer, string or binary column"); err == nil {
			r.kind = src.Kind
			r.col, err = src.columnType()
		}
	default:
		return fail("unknown transform %q (identity, year, month, day, hour, bucket, multi_bucket, truncate)", t.Type)
	}
	return err
}

// evolve checks a new spec against the schema and the table's earlier
// specs and assigns its field ids: a field with an earlier field's id must
// have that field's signature; a field without an id takes the id of an
// earlier field with its signature, or the next free integer.
func evolve(next *Spec, schema *Schema, earlier []*Spec) ([]resolved, error) {
	if len(next.Fields) == 0 || len(next.Fields) > MaxFields {
		return nil, nserror.New(nserror.InvalidInput, "a partition spec has 1 to %d fields, not %d", MaxFields, len(next.Fields))
	}
	bySig, byID := map[string]string{}, map[string]string{}
	maxID := 0
	for _, sp := range earlier {
		for _, f := range sp.Fields {
			bySig[f.signature()] = f.FieldID
			byID[f.FieldID] = f.signature()
			if n, err := strconv.Atoi(f.FieldID); err == nil && n > maxID {
				maxID = n
			}
		}
	}
	for _, f := range next.Fields {
		if n, err := strconv.Atoi(f.FieldID); err == nil && n > maxID {
			maxID = n
		}
	}
	out := make([]resolved, len(next.Fields))
	seen := map[string]bool{}
	for i := range next.Fields {
		r, err := checkField(&next.Fields[i], schema)
		if err != nil {
			return nil, err
		}
		sig := r.signature()
		switch {
		case r.FieldID == "":
			if id, ok := bySig[sig]; ok {
				r.FieldID = id
			} else {
				maxID++
				r.FieldID = strconv.Itoa(maxID)
			}
		case byID[r.FieldID] != "" && byID[r.FieldID] != sig:
			return nil, nserror.New(nserror.InvalidInput, "partition field %s is reused with another source, transform or result type", r.FieldID)
		}
		if seen[r.FieldID] {
			return nil, nserror.New(nserror.InvalidInput, "partition field %s appears twice in the spec", r.FieldID)
		}
		seen[r.FieldID] = true
		next.Fields[i] = r.Field
		out[i] = r
	}
	return out, nil
}

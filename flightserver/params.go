package flightserver

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightns/flightns/nserror"
)

// validParams checks a batch of parameters a client sent before any
// value of it is read: its arrays may be malformed on purpose (a union's
// type code that names no child, offsets past a child's end), and
// reading such a value would panic. A malformed one is InvalidInput.
func validParams(rec arrow.RecordBatch) error {
	for c, col := range rec.Columns() {
		if err := array.ValidateFull(col); err != nil {
			return nserror.New(nserror.InvalidInput, "parameter %d (%s) is a malformed Arrow array: %v", c+1, rec.Schema().Field(c).Name, err)
		}
	}
	return nil
}

// rowValues returns row i of a parameter batch (validParams) as Go values the SQL engine
// binds: integers as int64 or uint64, floats as float64, strings, bytes,
// booleans, times; NULL as nil. Dense unions (what some clients send for
// untyped parameters) bind their chosen child's value.
func rowValues(rec arrow.RecordBatch, i int) ([]any, error) {
	out := make([]any, rec.NumCols())
	for c, col := range rec.Columns() {
		v, err := value(col, i)
		if err != nil {
			return nil, nserror.New(nserror.InvalidInput, "parameter %d (%s): %v", c+1, rec.Schema().Field(c).Name, err)
		}
		out[c] = v
	}
	return out, nil
}

func value(col arrow.Array, i int) (any, error) {
	if col.IsNull(i) {
		return nil, nil
	}
	switch a := col.(type) {
	case *array.Boolean:
		return a.Value(i), nil
	case *array.Int8:
		return int64(a.Value(i)), nil
	case *array.Int16:
		return int64(a.Value(i)), nil
	case *array.Int32:
		return int64(a.Value(i)), nil
	case *array.Int64:
		return a.Value(i), nil
	case *array.Uint8:
		return uint64(a.Value(i)), nil
	case *array.Uint16:
		return uint64(a.Value(i)), nil
	case *array.Uint32:
		return uint64(a.Value(i)), nil
	case *array.Uint64:
		return a.Value(i), nil
	case *array.Float32:
		return float64(a.Value(i)), nil
	case *array.Float64:
		return a.Value(i), nil
	case *array.String:
		return a.Value(i), nil
	case *array.LargeString:
		return a.Value(i), nil
	case *array.StringView:
		return a.Value(i), nil
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...), nil
	case *array.LargeBinary:
		return append([]byte(nil), a.Value(i)...), nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit), nil
	case *array.Date32:
		return a.Value(i).ToTime(), nil
	case *array.Date64:
		return a.Value(i).ToTime(), nil
	case *array.DenseUnion:
		return value(a.Field(a.ChildID(i)), int(a.ValueOffset(i)))
	case *array.Null:
		return nil, nil
	}
	return nil, nserror.New(nserror.InvalidInput, "Arrow type %s cannot be bound; use an integer, float, string, binary, boolean, date or timestamp", col.DataType())
}

//go:build duckdb_arrow

package manifesttable

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightns/flightns/nserror"
)

// registerTableFunction registers f with DuckDB as a row table function.
func (e *engine) registerTableFunction(ctx context.Context, f TableFunc) error {
	varchar, err := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	if err != nil {
		return err
	}
	args := make([]duckdb.TypeInfo, f.Args)
	for i := range args {
		args[i] = varchar
	}
	udf := duckdb.RowTableFunction{
		Config: duckdb.TableFunctionConfig{Arguments: args},
		BindArgumentsContext: func(ctx context.Context, _ map[string]any, in ...any) (duckdb.RowTableSource, error) {
			strs := make([]string, len(in))
			for i, a := range in {
				if a == nil {
					continue // NULL, or a parameter not bound yet (PREPARE): ""
				}
				s, ok := a.(string)
				if !ok {
					return nil, nserror.New(nserror.InvalidInput, "%s: argument %d is not a string", f.Name, i+1)
				}
				strs[i] = s
			}
			schema, recs, err := f.Bind(ctx, strs)
			if err != nil {
				return nil, err
			}
			return newRecordSource(schema, recs)
		},
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	return duckdb.RegisterTableUDF(e.writer, f.Name, udf)
}

// recordSource serves Arrow record batches as DuckDB rows.
type recordSource struct {
	cols  []duckdb.ColumnInfo
	recs  []arrow.RecordBatch
	rows  int
	ri, i int // current record, row in it
}

func newRecordSource(schema *arrow.Schema, recs []arrow.RecordBatch) (*recordSource, error) {
	s := &recordSource{recs: recs}
	for _, f := range schema.Fields() {
		t, err := duckTypeOf(f.Type)
		if err != nil {
			return nil, err
		}
		ti, err := duckdb.NewTypeInfo(t)
		if err != nil {
			return nil, err
		}
		s.cols = append(s.cols, duckdb.ColumnInfo{Name: f.Name, T: ti})
	}
	for _, r := range recs {
		s.rows += int(r.NumRows())
	}
	return s, nil
}

func duckTypeOf(t arrow.DataType) (duckdb.Type, error) {
	switch t.ID() {
	case arrow.STRING:
		return duckdb.TYPE_VARCHAR, nil
	case arrow.BINARY:
		return duckdb.TYPE_BLOB, nil
	case arrow.BOOL:
		return duckdb.TYPE_BOOLEAN, nil
	case arrow.INT32:
		return duckdb.TYPE_INTEGER, nil
	case arrow.INT64:
		return duckdb.TYPE_BIGINT, nil
	case arrow.UINT64:
		return duckdb.TYPE_UBIGINT, nil
	case arrow.FLOAT64:
		return duckdb.TYPE_DOUBLE, nil
	case arrow.DATE32:
		return duckdb.TYPE_DATE, nil
	case arrow.TIMESTAMP:
		return duckdb.TYPE_TIMESTAMP_TZ, nil
	}
	return 0, fmt.Errorf("manifesttable: a table function cannot return %s", t)
}

func (s *recordSource) ColumnInfos() []duckdb.ColumnInfo { return s.cols }

func (s *recordSource) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: uint(s.rows), Exact: true}
}

func (s *recordSource) Init() {}

func (s *recordSource) FillRow(row duckdb.Row) (bool, error) {
	for s.ri < len(s.recs) && s.i >= int(s.recs[s.ri].NumRows()) {
		s.recs[s.ri].Release()
		s.ri, s.i = s.ri+1, 0
	}
	if s.ri >= len(s.recs) {
		return false, nil
	}
	rec := s.recs[s.ri]
	for c := range s.cols {
		if !row.IsProjected(c) {
			continue
		}
		if err := row.SetRowValue(c, duckValue(rec.Column(c), s.i)); err != nil {
			return false, err
		}
	}
	s.i++
	return true, nil
}

// duckValue is an Arrow value as the Go value DuckDB's appender takes: the
// extra columns' Go values, but a date as a time.
func duckValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	if d, ok := a.(*array.Date32); ok {
		return d.Value(i).ToTime()
	}
	return extraValue(a, i)
}

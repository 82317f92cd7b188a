package flightserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
)

// sqlTypeName is the SQL name (DuckDB's spelling) of the type a column of
// Arrow type t has in the engine.
func sqlTypeName(t arrow.DataType) string {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return "VARCHAR"
	case arrow.BOOL:
		return "BOOLEAN"
	case arrow.INT8:
		return "TINYINT"
	case arrow.INT16:
		return "SMALLINT"
	case arrow.INT32:
		return "INTEGER"
	case arrow.INT64:
		return "BIGINT"
	case arrow.UINT8:
		return "UTINYINT"
	case arrow.UINT16:
		return "USMALLINT"
	case arrow.UINT32:
		return "UINTEGER"
	case arrow.UINT64:
		return "UBIGINT"
	case arrow.FLOAT32:
		return "FLOAT"
	case arrow.FLOAT64:
		return "DOUBLE"
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
		return "BLOB"
	case arrow.DATE32, arrow.DATE64:
		return "DATE"
	case arrow.TIMESTAMP:
		if t.(*arrow.TimestampType).TimeZone != "" {
			return "TIMESTAMP WITH TIME ZONE"
		}
		return "TIMESTAMP"
	case arrow.DECIMAL128, arrow.DECIMAL256:
		d := t.(arrow.DecimalType)
		return fmt.Sprintf("DECIMAL(%d,%d)", d.GetPrecision(), d.GetScale())
	case arrow.LIST, arrow.LARGE_LIST:
		return sqlTypeName(t.(arrow.ListLikeType).Elem()) + "[]"
	}
	return strings.ToUpper(t.String())
}

// xdbcType is one row of GetXdbcTypeInfo.
type xdbcType struct {
	name     string
	code     pb.XdbcDataType
	size     int32 // column size (precision for numbers), 0 for none
	prefix   string
	unsigned bool
	subcode  int32 // datetime subcode, 0 for none
}

// xdbcTypes are the types __manifest and its views use, and the ones a
// query over them commonly produces.
var xdbcTypes = []xdbcType{
	{name: "BOOLEAN", code: pb.XdbcDataType_XDBC_BIT, size: 1},
	{name: "INTEGER", code: pb.XdbcDataType_XDBC_INTEGER, size: 10},
	{name: "BIGINT", code: pb.XdbcDataType_XDBC_BIGINT, size: 19},
	{name: "UBIGINT", code: pb.XdbcDataType_XDBC_BIGINT, size: 20, unsigned: true},
	{name: "DOUBLE", code: pb.XdbcDataType_XDBC_DOUBLE, size: 15},
	{name: "VARCHAR", code: pb.XdbcDataType_XDBC_VARCHAR, size: 1 << 30, prefix: "'"},
	{name: "BLOB", code: pb.XdbcDataType_XDBC_VARBINARY, size: 1 << 30, prefix: "'"},
	{name: "DATE", code: pb.XdbcDataType_XDBC_DATE, size: 10, prefix: "DATE '",
		subcode: int32(pb.XdbcDatetimeSubcode_XDBC_SUBCODE_DATE)},
	{name: "TIMESTAMP", code: pb.XdbcDataType_XDBC_TIMESTAMP, size: 26, prefix: "TIMESTAMP '",
		subcode: int32(pb.XdbcDatetimeSubcode_XDBC_SUBCODE_TIMESTAMP)},
	{name: "TIMESTAMP WITH TIME ZONE", code: pb.XdbcDataType_XDBC_TIMESTAMP, size: 32, prefix: "TIMESTAMPTZ '",
		subcode: int32(pb.XdbcDatetimeSubcode_XDBC_SUBCODE_TIMESTAMP)},
}

// GetFlightInfoXdbcTypeInfo plans GetXdbcTypeInfo.
func (q *sqlServer) GetFlightInfoXdbcTypeInfo(_ context.Context, _ flightsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.infoFor(desc, schema_ref.XdbcTypeInfo), nil
}

// DoGetXdbcTypeInfo returns the types, or the ones of one data type.
func (q *sqlServer) DoGetXdbcTypeInfo(_ context.Context, cmd flightsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return q.oneBatch(schema_ref.XdbcTypeInfo, func(b *array.RecordBuilder) {
		for _, t := range xdbcTypes {
			if dt := cmd.GetDataType(); dt != nil && *dt != int32(t.code) {
				continue
			}
			appendXdbcType(b, t)
		}
	})
}

func appendXdbcType(b *array.RecordBuilder, t xdbcType) {
	i32 := func(i int, v int32) {
		if v == 0 {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.Int32Builder).Append(v)
		}
	}
	str := func(i int, v string) {
		if v == "" {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.StringBuilder).Append(v)
		}
	}
	boolean := func(i int, v bool) { b.Field(i).(*array.BooleanBuilder).Append(v) }
	suffix := ""
	if t.prefix != "" {
		suffix = "'"
	}
	str(0, t.name)
	b.Field(1).(*array.Int32Builder).Append(int32(t.code))
	i32(2, t.size)
	str(3, t.prefix)
	str(4, suffix)
	b.Field(5).AppendNull() // create_params
	b.Field(6).(*array.Int32Builder).Append(int32(pb.Nullable_NULLABILITY_NULLABLE))
	boolean(7, t.code == pb.XdbcDataType_XDBC_VARCHAR)
	b.Field(8).(*array.Int32Builder).Append(int32(pb.Searchable_SEARCHABLE_FULL))
	boolean(9, t.unsigned)
	boolean(10, false) // fixed_prec_scale
	boolean(11, false) // auto_increment
	str(12, t.name)
	i32(13, 0)
	i32(14, 0)
	sqlType := int32(t.code)
	if t.subcode != 0 {
		sqlType = int32(pb.XdbcDataType_XDBC_DATETIME)
	}
	b.Field(15).(*array.Int32Builder).Append(sqlType)
	i32(16, t.subcode)
	radix := int32(0)
	switch t.code {
	case pb.XdbcDataType_XDBC_INTEGER, pb.XdbcDataType_XDBC_BIGINT, pb.XdbcDataType_XDBC_DOUBLE:
		radix = 10
	}
	i32(17, radix)
	i32(18, 0)
}

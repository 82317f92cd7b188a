//go:build duckdb_arrow

package sqlengine

/*
#include <stdlib.h>
#include <stdint.h>
void flightnsTableBind(void *info);
void flightnsTableInit(void *info);
void flightnsTableScan(void *info, void *output);
void flightnsFreeHandle(void *data);
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/flightns/flightns/nserror"
)

// A table function is registered through DuckDB's C API: DuckDB calls
// bind (with the arguments, once per statement: the Go function runs and
// its Arrow batches become the bind data), init (a cursor per scan) and
// scan (one chunk of rows at a time, single-threaded). Go values cross to
// DuckDB as cgo handles in C memory that DuckDB frees through
// flightnsFreeHandle.

// tableFunc is a registered function.
type tableFunc struct {
	e *DB
	f TableFunc
}

// free is a no-op: DuckDB owns the registered function's handle.
func (f *tableFunc) free() {}

// scanData is a bind's answer; scanCursor is one scan's position in it.
type scanData struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

type scanCursor struct{ rec, row int }

// newHandle puts v in C memory as a cgo handle, for DuckDB to hold.
func newHandle(v any) unsafe.Pointer {
	p := C.malloc(C.size_t(unsafe.Sizeof(uintptr(0))))
	*(*uintptr)(p) = uintptr(cgo.NewHandle(v))
	return p
}

func handleValue(p unsafe.Pointer) any { return cgo.Handle(*(*uintptr)(p)).Value() }

//export flightnsFreeHandle
func flightnsFreeHandle(p unsafe.Pointer) {
	h := cgo.Handle(*(*uintptr)(p))
	if d, ok := h.Value().(*scanData); ok {
		for _, r := range d.recs {
			r.Release()
		}
	}
	h.Delete()
	C.free(p)
}

// RegisterTableFunction registers f: SELECT … FROM name('arg', …).
func (e *DB) RegisterTableFunction(f TableFunc) error {
	e.fmu.Lock()
	defer e.fmu.Unlock()
	for _, have := range e.funcs {
		if have.f.Name == f.Name {
			return fmt.Errorf("sqlengine: table function %s already exists", f.Name)
		}
	}
	tf := mapping.CreateTableFunction()
	defer mapping.DestroyTableFunction(&tf)
	mapping.TableFunctionSetName(tf, f.Name)
	varchar := mapping.CreateLogicalType(mapping.TypeVarchar)
	for range f.Args {
		mapping.TableFunctionAddParameter(tf, varchar)
	}
	mapping.DestroyLogicalType(&varchar)
	t := &tableFunc{e: e, f: f}
	mapping.TableFunctionSetExtraInfo(tf, newHandle(t), C.flightnsFreeHandle)
	mapping.TableFunctionSetBind(tf, C.flightnsTableBind)
	mapping.TableFunctionSetInit(tf, C.flightnsTableInit)
	mapping.TableFunctionSetFunction(tf, C.flightnsTableScan)
	e.wmu.Lock()
	st := mapping.RegisterTableFunction(e.writer.c, tf)
	e.wmu.Unlock()
	if st == mapping.StateError {
		return fmt.Errorf("sqlengine: DuckDB refused the table function %s", f.Name)
	}
	e.funcs = append(e.funcs, t)
	return nil
}

//export flightnsTableBind
func flightnsTableBind(info unsafe.Pointer) {
	bi := mapping.BindInfo{Ptr: info}
	t := handleValue(mapping.BindGetExtraInfo(bi)).(*tableFunc)
	n := int(mapping.BindGetParameterCount(bi))
	args := make([]string, n)
	for i := range args {
		v := mapping.BindGetParameter(bi, mapping.IdxT(i))
		if !mapping.IsNullValue(v) {
			args[i] = mapping.GetVarchar(v)
		} // NULL, or a parameter not bound yet (PREPARE): ""
		mapping.DestroyValue(&v)
	}
	var cc mapping.ClientContext
	mapping.TableFunctionGetClientContext(bi, &cc)
	id := uint64(mapping.ClientContextGetConnectionId(cc))
	mapping.DestroyClientContext(&cc)
	schema, recs, err := t.f.Bind(t.e.requestContext(id), args)
	if err == nil {
		err = checkScanTypes(schema)
	}
	if err != nil {
		for _, r := range recs {
			r.Release()
		}
		mapping.BindSetError(bi, fmt.Sprintf("%s: %v", t.f.Name, err))
		return
	}
	rows := 0
	for _, r := range recs {
		rows += int(r.NumRows())
	}
	for _, f := range schema.Fields() {
		typ, _ := duckTypeOf(f.Type)
		lt := mapping.CreateLogicalType(typ)
		mapping.BindAddResultColumn(bi, f.Name, lt)
		mapping.DestroyLogicalType(&lt)
	}
	mapping.BindSetBindData(bi, newHandle(&scanData{schema: schema, recs: recs}), C.flightnsFreeHandle)
	mapping.BindSetCardinality(bi, mapping.IdxT(rows), true)
}

//export flightnsTableInit
func flightnsTableInit(info unsafe.Pointer) {
	ii := mapping.InitInfo{Ptr: info}
	mapping.InitSetMaxThreads(ii, 1)
	mapping.InitSetInitData(ii, newHandle(&scanCursor{}), C.flightnsFreeHandle)
}

// vectorSize is DuckDB's rows per chunk.
const vectorSize = 2048

//export flightnsTableScan
func flightnsTableScan(info, output unsafe.Pointer) {
	fi := mapping.FunctionInfo{Ptr: info}
	d := handleValue(mapping.FunctionGetBindData(fi)).(*scanData)
	cur := handleValue(mapping.FunctionGetInitData(fi)).(*scanCursor)
	chunk := mapping.DataChunk{Ptr: output}
	n := 0
	for n < vectorSize && cur.rec < len(d.recs) {
		rec := d.recs[cur.rec]
		take := min(int(rec.NumRows())-cur.row, vectorSize-n)
		for c := range int(rec.NumCols()) {
			fillVector(mapping.DataChunkGetVector(chunk, mapping.IdxT(c)), rec.Column(c), cur.row, take, n)
		}
		n += take
		if cur.row += take; cur.row == int(rec.NumRows()) {
			cur.rec, cur.row = cur.rec+1, 0
		}
	}
	mapping.DataChunkSetSize(chunk, mapping.IdxT(n))
}

// fillVector copies rows [from, from+n) of a into vec from row at.
func fillVector(vec mapping.Vector, a arrow.Array, from, n, at int) {
	data := mapping.VectorGetData(vec)
	for i := range n {
		src, dst := from+i, at+i
		if a.IsNull(src) {
			mapping.VectorEnsureValidityWritable(vec)
			mapping.ValiditySetRowInvalid(mapping.VectorGetValidity(vec), mapping.IdxT(dst))
			continue
		}
		switch a := a.(type) {
		case *array.String:
			mapping.VectorAssignStringElement(vec, mapping.IdxT(dst), a.Value(src))
		case *array.Binary:
			mapping.VectorAssignStringElementLen(vec, mapping.IdxT(dst), a.Value(src))
		case *array.Boolean:
			unsafe.Slice((*bool)(data), vectorSize)[dst] = a.Value(src)
		case *array.Int32:
			unsafe.Slice((*int32)(data), vectorSize)[dst] = a.Value(src)
		case *array.Int64:
			unsafe.Slice((*int64)(data), vectorSize)[dst] = a.Value(src)
		case *array.Uint64:
			unsafe.Slice((*uint64)(data), vectorSize)[dst] = a.Value(src)
		case *array.Float64:
			unsafe.Slice((*float64)(data), vectorSize)[dst] = a.Value(src)
		case *array.Date32:
			unsafe.Slice((*int32)(data), vectorSize)[dst] = int32(a.Value(src))
		case *array.Timestamp:
			unit := a.DataType().(*arrow.TimestampType).Unit
			unsafe.Slice((*int64)(data), vectorSize)[dst] = a.Value(src).ToTime(unit).UnixMicro()
		}
	}
}

// checkScanTypes refuses a schema with a type fillVector cannot write.
func checkScanTypes(schema *arrow.Schema) error {
	for _, f := range schema.Fields() {
		if _, err := duckTypeOf(f.Type); err != nil {
			return err
		}
	}
	return nil
}

func duckTypeOf(t arrow.DataType) (mapping.Type, error) {
	switch t.ID() {
	case arrow.STRING:
		return mapping.TypeVarchar, nil
	case arrow.BINARY:
		return mapping.TypeBlob, nil
	case arrow.BOOL:
		return mapping.TypeBoolean, nil
	case arrow.INT32:
		return mapping.TypeInteger, nil
	case arrow.INT64:
		return mapping.TypeBigInt, nil
	case arrow.UINT64:
		return mapping.TypeUBigInt, nil
	case arrow.FLOAT64:
		return mapping.TypeDouble, nil
	case arrow.DATE32:
		return mapping.TypeDate, nil
	case arrow.TIMESTAMP:
		return mapping.TypeTimestampTZ, nil
	}
	return 0, nserror.New(nserror.Internal, "sqlengine: a table function cannot return %s", t)
}

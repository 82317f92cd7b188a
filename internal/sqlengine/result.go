package sqlengine

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Result is a query's answer: Arrow record batches, and the catalog
// sequence the query saw. Release it when done.
type Result struct {
	array.RecordReader
	Seq     uint64
	release func()
}

// Release frees the result and its connection.
func (r *Result) Release() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

// NewResult is a result read from rr (a query answered elsewhere: a SQL
// worker's stream) at catalog sequence seq; release frees what it holds.
func NewResult(rr array.RecordReader, seq uint64, release func()) *Result {
	return &Result{RecordReader: rr, Seq: seq, release: release}
}

// RecordBytes is the size of a batch's buffers.
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}

package manifesttable

import "github.com/apache/arrow-go/v18/arrow/array"

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

package console

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/planner"
)

// page reads rows [offset, offset+limit) of query's result through the
// SQL gate, and whether more follow; the query stops once they are read.
func (c *console) page(ctx context.Context, offset, limit int64, query string, args ...any) (*arrow.Schema, [][]any, bool, error) {
	if c.cfg.SQL == nil {
		return nil, nil, false, nserror.New(nserror.ServiceUnavailable, "SQL is off (no Flight SQL surface)")
	}
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	schema, ch, err := c.cfg.SQL.Query(qctx, query, args...)
	if err != nil {
		return nil, nil, false, err
	}
	defer func() { // stop the query, then let its stream end
		cancel()
		for chunk := range ch {
			if chunk.Data != nil {
				chunk.Data.Release()
			}
		}
	}()
	rows := [][]any{}
	var seen int64
	for chunk := range ch {
		if chunk.Err != nil {
			return nil, nil, false, chunk.Err
		}
		rec := chunk.Data
		for i := 0; i < int(rec.NumRows()); i++ {
			switch {
			case seen < offset:
			case int64(len(rows)) < limit:
				row := make([]any, rec.NumCols())
				for j, col := range rec.Columns() {
					row[j] = value(col, i)
				}
				rows = append(rows, row)
			default:
				rec.Release()
				return schema, rows, true, nil
			}
			seen++
		}
		rec.Release()
	}
	return schema, rows, false, nil
}

// rows is every row of a small query (at most 10,000).
func (c *console) rows(ctx context.Context, query string, args ...any) ([][]any, *arrow.Schema, error) {
	schema, rows, more, err := c.page(ctx, 0, 10000, query, args...)
	if err == nil && more {
		err = nserror.New(nserror.Internal, "console: more than 10000 rows from %q", query)
	}
	return rows, schema, err
}

// value is a cell as JSON sees it: numbers, strings, booleans, null;
// times and nested values as the Arrow library writes them. Nothing of it
// refers to the batch's memory (a string of an Arrow array does), so it
// outlives the batch.
func value(col arrow.Array, i int) any {
	if col.IsNull(i) {
		return nil
	}
	switch a := col.(type) {
	case *array.String:
		return strings.Clone(a.Value(i))
	case *array.LargeString:
		return strings.Clone(a.Value(i))
	case *array.StringView:
		return strings.Clone(a.Value(i))
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8, *array.Int16, *array.Int32, *array.Uint8, *array.Uint16, *array.Uint32:
		return col.GetOneForMarshal(i)
	case *array.Float32:
		return finite(float64(a.Value(i)))
	case *array.Float64:
		return finite(a.Value(i))
	case *array.Uint64:
		if v := a.Value(i); v > 1<<53 {
			return a.ValueStr(i) // beyond what JavaScript numbers hold exactly
		}
		return a.Value(i)
	case *array.Int64:
		if v := a.Value(i); v > 1<<53 || v < -(1<<53) {
			return a.ValueStr(i)
		}
		return a.Value(i)
	}
	// Anything else as its JSON now, while the batch lives.
	b, err := json.Marshal(col.GetOneForMarshal(i))
	if err != nil {
		return col.ValueStr(i)
	}
	return json.RawMessage(b)
}

// finite is f, or its name when JSON has no number for it.
func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return arrowFloatName(f)
	}
	return f
}

func arrowFloatName(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "Infinity"
	}
	return "-Infinity"
}

type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func columns(s *arrow.Schema) []column {
	out := []column{}
	for _, f := range s.Fields() {
		out = append(out, column{Name: f.Name, Type: f.Type.String()})
	}
	return out
}

// sql runs one statement and answers a page of its result.
func (c *console) sql(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SQL    string `json:"sql"`
		Offset int64  `json:"offset"`
		Limit  int64  `json:"limit"`
	}
	if err := decode(r.Body, &req); err != nil {
		writeError(w, c.log, err)
		return
	}
	if req.Limit == 0 {
		req.Limit = 100
	}
	if req.Offset < 0 || req.Limit < 1 || req.Limit > 1000 {
		writeError(w, c.log, nserror.New(nserror.InvalidInput, "offset must be at least 0 and limit from 1 to 1000"))
		return
	}
	start := time.Now()
	schema, rows, more, err := c.page(r.Context(), req.Offset, req.Limit, req.SQL)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"columns": columns(schema), "rows": rows, "offset": req.Offset, "limit": req.Limit, "more": more,
		"elapsed_ms": float64(time.Since(start).Microseconds()) / 1000, "rows_read": req.Offset + int64(len(rows)),
	})
}

// download streams a statement's whole result as CSV or Arrow IPC.
func (c *console) download(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SQL    string `json:"sql"`
		Format string `json:"format"`
	}
	if err := decode(r.Body, &req); err != nil {
		writeError(w, c.log, err)
		return
	}
	if req.Format != "csv" && req.Format != "arrow" {
		writeError(w, c.log, nserror.New(nserror.InvalidInput, `format %q: want "csv" or "arrow"`, req.Format))
		return
	}
	if c.cfg.SQL == nil {
		writeError(w, c.log, nserror.New(nserror.ServiceUnavailable, "SQL is off (no Flight SQL surface)"))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	schema, ch, err := c.cfg.SQL.Query(ctx, req.SQL)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	defer func() {
		cancel()
		for chunk := range ch {
			if chunk.Data != nil {
				chunk.Data.Release()
			}
		}
	}()
	// The first chunk decides between an error and a file.
	first, ok := <-ch
	if ok && first.Err != nil {
		writeError(w, c.log, first.Err)
		return
	}
	var write func(arrow.RecordBatch) error
	var done func() error
	h := w.Header()
	if req.Format == "csv" {
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="result.csv"`)
		cw := NewCSVWriter(w, schema) // formulas neutralized (CSVCell)
		write, done = cw.Write, cw.Flush
	} else {
		h.Set("Content-Type", "application/vnd.apache.arrow.stream")
		h.Set("Content-Disposition", `attachment; filename="result.arrows"`)
		iw := ipc.NewWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
		write, done = iw.Write, iw.Close
	}
	w.WriteHeader(http.StatusOK)
	for chunk := first; ok; chunk, ok = <-ch {
		if chunk.Err != nil {
			c.log.Warn("console: a download stopped", "err", chunk.Err)
			return // cut short: no closing of the stream, so it does not look whole
		}
		err := write(chunk.Data)
		chunk.Data.Release()
		if err != nil {
			return
		}
	}
	_ = done()
}

// plan runs plan_scan of a partitioned table: the partitions kept, with
// their residual filter, and those pruned (every partition not kept).
func (c *console) plan(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     api.ID `json:"id"`
		Filter string `json:"filter"`
	}
	if err := decode(r.Body, &req); err != nil {
		writeError(w, c.log, err)
		return
	}
	if c.cfg.Planner == nil {
		writeError(w, c.log, nserror.New(nserror.ServiceUnavailable, "no planner"))
		return
	}
	ctx := r.Context()
	kept, err := c.cfg.Planner.PlanScan(ctx, req.ID, req.Filter)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	all, err := c.cfg.Planner.PlanScan(ctx, req.ID, "")
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	type leaf struct {
		ID       string `json:"id"`
		Values   []any  `json:"values"`
		Residual string `json:"residual,omitempty"`
		Version  uint64 `json:"version,omitempty"`
	}
	values := func(vs []planner.Value) []any {
		out := []any{}
		for _, v := range vs {
			if v.Null {
				out = append(out, nil)
			} else {
				out = append(out, v.SQL())
			}
		}
		return out
	}
	fields := kept.Schema().Fields()
	out := struct {
		Seq     uint64   `json:"seq"`
		Columns []string `json:"partition_columns"`
		Kept    []leaf   `json:"kept"`
		Pruned  []leaf   `json:"pruned"`
	}{Seq: kept.Seq, Columns: []string{}, Kept: []leaf{}, Pruned: []leaf{}}
	for _, f := range fields[4 : len(fields)-1] {
		out.Columns = append(out.Columns, f.Name)
	}
	isKept := map[string]bool{}
	for _, l := range kept.Leaves {
		isKept[l.ID] = true
		out.Kept = append(out.Kept, leaf{ID: l.ID, Values: values(l.Values), Residual: l.Residual, Version: l.Version})
	}
	for _, l := range all.Leaves {
		if !isKept[l.ID] {
			out.Pruned = append(out.Pruned, leaf{ID: l.ID, Values: values(l.Values)})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

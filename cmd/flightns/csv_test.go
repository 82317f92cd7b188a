package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// `flightns query --format csv` writes a cell a spreadsheet would run as
// a formula with a leading single quote (console.CSVCell, as the
// console's download does), numbers as they are; --format json keeps
// the exact values.
func TestQueryCSVNeutralizesFormulas(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "@name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{`=HYPERLINK("https://evil.example","x")`, "-2+3", "plain"}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{-5, 1, 2}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	write := func(format string) string {
		t.Helper()
		var out bytes.Buffer
		w := newResultWriter(format, &out)
		if err := w.write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	rows, err := csv.NewReader(strings.NewReader(write("csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"'@name", "n"}, {`'=HYPERLINK("https://evil.example","x")`, "-5"}, {"'-2+3", "1"}, {"plain", "2"}}
	if len(rows) != len(want) {
		t.Fatalf("csv rows %q, want %q", rows, want)
	}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("csv row %d: %q, want %q", i, rows[i], want[i])
		}
	}
	var objs []map[string]any
	if err := json.Unmarshal([]byte(write("json")), &objs); err != nil || len(objs) != 3 || objs[0]["@name"] != `=HYPERLINK("https://evil.example","x")` {
		t.Fatalf("json: %v %v", objs, err)
	}
}

package planner

import (
	"encoding/json"
	"testing"

	"github.com/flightns/flightns/nserror"
)

// FuzzPlanFilter: any filter either fails to parse with InvalidInput or is
// judged over partitions of a three-field spec without a panic, and every
// residual it leaves is itself a filter that parses.
func FuzzPlanFilter(f *testing.F) {
	for _, s := range []string{"ts >= TIMESTAMP '2024-01-01' AND s LIKE 'ab%'", "i IN (1, 2, 3) OR NOT (d < DATE '2020-01-01')",
		"s NOT LIKE '%x_' AND i BETWEEN -5 AND 5", "ts IS NULL OR i <> 4", "NOT (NOT (s = 'a' OR s = 'b'))"} {
		f.Add(s)
	}
	tbl := testTable(f, `[{"source_ids":[4],"transform":{"type":"hour"}},{"source_ids":[2],"transform":{"type":"truncate","width":2}},`+
		`{"source_ids":[1,2],"transform":{"type":"multi_bucket","num_buckets":7}}]`)
	sp := tbl.plans[0]
	rows := []row{{}, {"ts": ts("2024-01-01 10:00:00"), "s": String("abc"), "i": Int(4)}, {"ts": ts("1969-12-31 23:59:59"), "s": String("")}}
	f.Fuzz(func(t *testing.T, filter string) {
		e, err := ParseFilter(filter, tbl.columns)
		if err != nil {
			if nserror.CodeOf(err) != nserror.InvalidInput {
				t.Fatalf("%q: %v", filter, err)
			}
			return
		}
		norm := nnf(e, false)
		for _, r := range rows {
			lv := leafOf(t, sp, r)
			j, residual := sp.judge(norm, &lv)
			if j == no {
				continue
			}
			if _, err := ParseFilter(residual.String(), tbl.columns); err != nil {
				t.Fatalf("%q left residual %q, which does not parse: %v", filter, residual, err)
			}
		}
	})
}

// FuzzSpec: any spec JSON is either refused with InvalidInput or stored
// with every field checked and an id assigned.
func FuzzSpec(f *testing.F) {
	for _, s := range []string{`{"fields":[{"source_ids":[1],"transform":{"type":"bucket","num_buckets":16}}]}`,
		`{"fields":[{"field_id":"x_1","source_ids":[2],"transform":{"type":"truncate","width":3}},{"source_ids":[4],"transform":{"type":"day"}}]}`,
		`{"fields":[{"field_id":7,"source_ids":[1,2],"expression":"col0 + col1","result_type":{"type":"int64"}}]}`,
		`{"fields":[{"source_ids":[3],"transform":{"type":"hour"}}]}`, `{"fields":[]}`, `[]`} {
		f.Add(s)
	}
	_, schema, err := parseSchema(testSchema)
	if err != nil {
		f.Fatal(err)
	}
	earlier := testTable(f, `[{"source_ids":[1],"transform":{"type":"identity"}}]`).Specs
	f.Fuzz(func(t *testing.T, raw string) {
		var sp Spec
		if err := json.Unmarshal([]byte(raw), &sp); err != nil {
			return
		}
		fields, err := evolve(&sp, schema, earlier)
		if err != nil {
			if nserror.CodeOf(err) != nserror.InvalidInput {
				t.Fatalf("%s: %v", raw, err)
			}
			return
		}
		for i, f := range fields {
			if f.FieldID == "" || !fieldIDPattern.MatchString(f.FieldID) || f.ResultType == nil {
				t.Fatalf("%s: field %d stored as %+v", raw, i, f.Field)
			}
			if _, err := typeOfColumn(f); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
		}
	})
}

func typeOfColumn(f resolved) (string, error) {
	if _, ok := f.col.ArrowType(); !ok {
		return "", nserror.New(nserror.Internal, "column type %q", f.col)
	}
	return string(f.col), nil
}

// FuzzSchema: any schema text is refused with InvalidInput or parsed.
func FuzzSchema(f *testing.F) {
	f.Add(testSchema)
	f.Add(`{"fields":[{"name":"a","type":{"type":"int8"},"metadata":{"lance:field_id":"-1"}}]}`)
	f.Add(`{"fields":[{"name":"a","type":{"type":"decimal128"},"metadata":{"lance:field_id":"3"}}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		if _, _, err := parseSchema(raw); err != nil && nserror.CodeOf(err) != nserror.InvalidInput {
			t.Fatalf("%q: %v", raw, err)
		}
	})
}

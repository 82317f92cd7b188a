package planner

import (
	"fmt"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func day(s string) Value {
	d, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return Date(d.Unix() / 86400)
}

func ts(s string) Value {
	us, err := parseTimestamp(s)
	if err != nil {
		panic(err)
	}
	return Timestamp(us)
}

// kept reports whether a partition holding row r survives the filter.
func kept(t *testing.T, tbl *Table, filter string, r row) (bool, string) {
	t.Helper()
	e, err := ParseFilter(filter, tbl.columns)
	if err != nil {
		t.Fatalf("%s: %v", filter, err)
	}
	sp := tbl.plans[len(tbl.plans)-1]
	lv := leafOf(t, sp, r)
	j, residual := sp.judge(nnf(e, false), &lv)
	return j != no, residual.String()
}

func TestADayRangeOverAMonthPartitionedTableKeepsOnlyThoseMonths(t *testing.T) {
	tbl := testTable(t, `[{"source_ids":[4],"transform":{"type":"month"}}]`)
	filter := "ts >= TIMESTAMP '2024-03-10 00:00:00' AND ts < TIMESTAMP '2024-04-02'"
	for _, c := range []struct {
		month string
		want  bool
	}{{"2024-02-15 12:00:00", false}, {"2024-03-01 00:00:00", true}, {"2024-04-01 00:00:00", true}, {"2024-05-01 00:00:00", false}, {"2023-03-20 00:00:00", false}} {
		if got, _ := kept(t, tbl, filter, row{"ts": ts(c.month)}); got != c.want {
			t.Errorf("month of %s kept=%v, want %v", c.month, got, c.want)
		}
	}
}

func TestYearAndMonthFieldsNestIntoOneSpan(t *testing.T) {
	tbl := testTable(t, `[{"source_ids":[3],"transform":{"type":"year"}},{"source_ids":[3],"transform":{"type":"month"}}]`)
	filter := "d BETWEEN DATE '2024-06-10' AND DATE '2024-06-20'"
	if k, _ := kept(t, tbl, filter, row{"d": day("2024-07-01")}); k {
		t.Error("July 2024 kept for a June range")
	}
	if k, _ := kept(t, tbl, filter, row{"d": day("2024-06-01")}); !k {
		t.Error("June 2024 pruned for a June range")
	}
	// A range covering the whole month leaves nothing to check.
	if k, res := kept(t, tbl, "d >= '2024-06-01' AND d < '2024-07-01'", row{"d": day("2024-06-05")}); !k || res != "TRUE" {
		t.Errorf("whole month: kept=%v residual=%s, want kept with residual TRUE", k, res)
	}
}

func TestBucketsPruneEqualityAndIn(t *testing.T) {
	tbl := testTable(t, `[{"source_ids":[1],"transform":{"type":"bucket","num_buckets":8}}]`)
	b34 := bucketOf(hashValue(Int(34)), 8)
	var other int64
	for v := int64(0); ; v++ {
		if bucketOf(hashValue(Int(v)), 8) != b34 {
			other = v
			break
		}
	}
	if k, _ := kept(t, tbl, "i = 34", row{"i": Int(34)}); !k {
		t.Error("the bucket of 34 pruned for i = 34")
	}
	if k, _ := kept(t, tbl, "i = 34", row{"i": Int(other)}); k {
		t.Error("another bucket kept for i = 34")
	}
	if k, _ := kept(t, tbl, fmt.Sprintf("i IN (34, %d)", other), row{"i": Int(other)}); !k {
		t.Error("a bucket named by IN pruned")
	}
	// Ranges say nothing about buckets.
	if k, _ := kept(t, tbl, "i > 1000", row{"i": Int(other)}); !k {
		t.Error("a bucket pruned by a range")
	}
}

func TestTruncatePrunesPrefixesAndRanges(t *testing.T) {
	tbl := testTable(t, `[{"source_ids":[2],"transform":{"type":"truncate","width":3}}]`)
	for _, c := range []struct {
		filter, value string
		want          bool
	}{
		{"s LIKE 'abcd%'", "abcxx", true},
		{"s LIKE 'abcd%'", "abdxx", false},
		{"s LIKE 'ab%'", "abzzz", true},
		{"s LIKE 'ab%'", "acaaa", false},
		{"s = 'ab'", "ab", true}, // shorter than the width: exact
		{"s = 'ab'", "abc", false},
		{"s >= 'b'", "azzzz", false},
		{"s >= 'b'", "bxx", true},
	} {
		if got, _ := kept(t, tbl, c.filter, row{"s": String(c.value)}); got != c.want {
			t.Errorf("%s with s=%q: kept=%v, want %v", c.filter, c.value, got, c.want)
		}
	}
	ti := testTable(t, `[{"source_ids":[1],"transform":{"type":"truncate","width":10}}]`)
	if k, _ := kept(t, ti, "i BETWEEN 25 AND 28", row{"i": Int(31)}); k {
		t.Error("[30,39] kept for 25..28")
	}
	if k, _ := kept(t, ti, "i < -12", row{"i": Int(-15)}); !k {
		t.Error("[-19,-10] pruned for i < -12 (truncation rounds toward zero)")
	}
}

// NULL is UNKNOWN under NOT too (issue 17's minimal cases): x NOT
// BETWEEN lo AND NULL is TRUE where x < lo, and NOT (l < NULL OR l < -1)
// is never TRUE.
func TestNullLiteralsFollowThreeValuedLogic(t *testing.T) {
	tbl := testTable(t, `[{"source_ids":[3],"transform":{"type":"month"}}]`)
	if k, res := kept(t, tbl, "d NOT BETWEEN DATE '1970-05-29' AND NULL", row{"d": day("1912-06-21")}); !k || res != "TRUE" {
		t.Errorf("kept=%v residual=%q, want kept with residual TRUE (all of June 1912 is before the bound)", k, res)
	}
	if k, res := kept(t, tbl, "d NOT BETWEEN DATE '1970-05-29' AND NULL", row{"d": day("1970-05-03")}); !k || res != "d < DATE '1970-05-29'" {
		t.Errorf("May 1970: kept=%v residual=%q, want kept with residual d < DATE '1970-05-29'", k, res)
	}
	if k, _ := kept(t, tbl, "d NOT BETWEEN DATE '1970-05-29' AND NULL", row{"d": day("1999-06-21")}); k {
		t.Error("a month after the lower bound kept for NOT BETWEEN lo AND NULL (never TRUE there)")
	}
	id := testTable(t, `[{"source_ids":[2],"transform":{"type":"identity"}}]`)
	for _, c := range []struct {
		filter, residual string
		kept             bool
	}{
		{"NOT (i < NULL OR i < -1)", "FALSE", false},
		{"NOT (i IN (1, NULL))", "FALSE", false},
		{"NOT (i NOT IN (1, NULL))", "i IN (1)", true},
		{"NOT (s = NULL) OR i = 2", "i = 2", true},
		{"NOT (s LIKE NULL) AND i = 2", "FALSE", false},
		{"NOT NULL IS NULL OR i > 0", "i > 0", true},
	} {
		k, res := kept(t, id, c.filter, row{"s": String("x")})
		if k != c.kept || (k && res != c.residual) {
			t.Errorf("%s: kept=%v residual=%q, want kept=%v residual %q", c.filter, k, res, c.kept, c.residual)
		}
	}
}

func TestIdentityLeavesAnExactResidual(t *testing.T) {
	tbl := testTable(t, `[{"source_ids":[2],"transform":{"type":"identity"}}]`)
	k, res := kept(t, tbl, "s = 'x' AND i > 3", row{"s": String("x")})
	if !k || res != "i > 3" {
		t.Errorf("kept=%v residual=%q, want kept with residual i > 3", k, res)
	}
	if k, _ := kept(t, tbl, "NOT (s = 'x')", row{"s": String("x")}); k {
		t.Error("NOT (s = 'x') kept s=x")
	}
	if k, _ := kept(t, tbl, "NOT (s = 'x')", row{}); k {
		t.Error("NOT (s = 'x') kept the NULL partition (NULL <> 'x' is not true)")
	}
	if k, _ := kept(t, tbl, "s IS NULL", row{}); !k {
		t.Error("s IS NULL pruned the NULL partition")
	}
}

// The property the planner stands on: a partition holding a row that
// matches the filter is never pruned, at any depth of its path, and its
// residual filter agrees with the filter on the partition's rows.
func TestPlanNeverDropsAMatchingPartition(t *testing.T) {
	menu := []string{
		`{"source_ids":[1],"transform":{"type":"identity"}}`,
		`{"source_ids":[2],"transform":{"type":"identity"}}`,
		`{"source_ids":[3],"transform":{"type":"identity"}}`,
		`{"source_ids":[3],"transform":{"type":"year"}}`,
		`{"source_ids":[3],"transform":{"type":"month"}}`,
		`{"source_ids":[4],"transform":{"type":"day"}}`,
		`{"source_ids":[4],"transform":{"type":"hour"}}`,
		`{"source_ids":[4],"transform":{"type":"month"}}`,
		`{"source_ids":[1],"transform":{"type":"bucket","num_buckets":4}}`,
		`{"source_ids":[2],"transform":{"type":"bucket","num_buckets":3}}`,
		`{"source_ids":[1,2],"transform":{"type":"multi_bucket","num_buckets":5}}`,
		`{"source_ids":[1],"transform":{"type":"truncate","width":3}}`,
		`{"source_ids":[2],"transform":{"type":"truncate","width":2}}`,
		`{"source_ids":[5],"transform":{"type":"identity"}}`,
		`{"source_ids":[6],"transform":{"type":"identity"}}`,
		`{"source_ids":[7],"transform":{"type":"truncate","width":4}}`,
	}
	ints := []int64{-7, -4, -3, -1, 0, 1, 2, 3, 5, 6, 9}
	strs := []string{"", "a", "ab", "abc", "abd", "b", "ba", "bzz"}
	days := []string{"2023-12-31", "2024-01-01", "2024-02-29", "2024-03-01", "1969-12-31"}
	times := []string{"2024-01-01 00:00:00", "2024-01-01 23:59:59.999999", "2024-01-02 00:30:00", "2023-12-31 23:00:00", "1969-12-31 23:59:59"}
	rapid.Check(t, func(rt *rapid.T) {
		nf := rapid.IntRange(1, 3).Draw(rt, "fields")
		var fields []string
		used := map[int]bool{}
		for len(fields) < nf {
			k := rapid.IntRange(0, len(menu)-1).Draw(rt, "field")
			if !used[k] {
				used[k] = true
				fields = append(fields, menu[k])
			}
		}
		spec := "["
		for i, f := range fields {
			if i > 0 {
				spec += ","
			}
			spec += f
		}
		tbl := testTable(t, spec+"]")
		sp := tbl.plans[0]
		literal := func(col string) string {
			if rapid.IntRange(0, 9).Draw(rt, "null?") == 0 {
				return "NULL"
			}
			switch col {
			case "i", "n":
				return fmt.Sprint(rapid.SampledFrom(ints).Draw(rt, "int"))
			case "s":
				return "'" + rapid.SampledFrom(strs).Draw(rt, "str") + "'"
			case "d":
				return "DATE '" + rapid.SampledFrom(days).Draw(rt, "date") + "'"
			case "ts":
				return "TIMESTAMP '" + rapid.SampledFrom(times).Draw(rt, "time") + "'"
			case "f":
				return rapid.SampledFrom([]string{"-1.5", "0", "2.25", "3"}).Draw(rt, "float")
			}
			return rapid.SampledFrom([]string{"TRUE", "FALSE"}).Draw(rt, "bool")
		}
		var gen func(depth int) string
		gen = func(depth int) string {
			if depth > 0 && rapid.IntRange(0, 2).Draw(rt, "compound") > 0 {
				switch rapid.IntRange(0, 2).Draw(rt, "op") {
				case 0:
					return "(" + gen(depth-1) + " AND " + gen(depth-1) + ")"
				case 1:
					return "(" + gen(depth-1) + " OR " + gen(depth-1) + ")"
				default:
					return "NOT (" + gen(depth-1) + ")"
				}
			}
			col := rapid.SampledFrom([]string{"i", "s", "d", "ts", "f", "b", "n"}).Draw(rt, "col")
			switch rapid.IntRange(0, 5).Draw(rt, "atom") {
			case 0:
				return col + " IS " + rapid.SampledFrom([]string{"", "NOT "}).Draw(rt, "not") + "NULL"
			case 1:
				return col + " " + rapid.SampledFrom([]string{"", "NOT "}).Draw(rt, "not") + "IN (" + literal(col) + ", " + literal(col) + ")"
			case 2:
				if col == "s" {
					pat := rapid.SampledFrom([]string{"'a%'", "'ab%'", "'b%'", "'%b'", "'a_c'", "'%'", "'abc'", "NULL"}).Draw(rt, "pattern")
					return "s " + rapid.SampledFrom([]string{"", "NOT "}).Draw(rt, "not") + "LIKE " + pat
				}
				return col + " BETWEEN " + literal(col) + " AND " + literal(col)
			default:
				return col + " " + rapid.SampledFrom([]string{"=", "<>", "<", "<=", ">", ">="}).Draw(rt, "cmp") + " " + literal(col)
			}
		}
		filter := gen(3)
		e, err := ParseFilter(filter, tbl.columns)
		if err != nil {
			rt.Fatalf("%s: %v", filter, err)
		}
		norm := nnf(e, false)
		for k := 0; k < 6; k++ {
			r := row{}
			if rapid.Bool().Draw(rt, "i?") {
				r["i"] = Int(rapid.SampledFrom(ints).Draw(rt, "i"))
			}
			if rapid.Bool().Draw(rt, "n?") {
				r["n"] = Int(rapid.SampledFrom(ints).Draw(rt, "n"))
			}
			if rapid.Bool().Draw(rt, "s?") {
				r["s"] = String(rapid.SampledFrom(strs).Draw(rt, "s"))
			}
			if rapid.IntRange(0, 3).Draw(rt, "d?") > 0 {
				r["d"] = day(rapid.SampledFrom(days).Draw(rt, "d"))
			}
			if rapid.IntRange(0, 3).Draw(rt, "ts?") > 0 {
				r["ts"] = ts(rapid.SampledFrom(times).Draw(rt, "ts"))
			}
			if rapid.Bool().Draw(rt, "f?") {
				r["f"] = Float(rapid.SampledFrom([]float64{-1.5, 0, 2.25, 3}).Draw(rt, "f"))
			}
			if rapid.Bool().Draw(rt, "b?") {
				r["b"] = Bool(rapid.Bool().Draw(rt, "b"))
			}
			lv := leafOf(t, sp, r)
			want := sqlEval(e, r, tbl.columns)
			j, residual := sp.judge(norm, &lv)
			if want == 1 && j == no {
				rt.Fatalf("filter %s pruned the partition %v of row %v, which matches", filter, lv.vals, r)
			}
			if j == yes && want != 1 {
				rt.Fatalf("filter %s judged always true on partition %v, but row %v does not match", filter, lv.vals, r)
			}
			if j != no {
				if got := sqlEval(residual, r, tbl.columns); (got == 1) != (want == 1) {
					rt.Fatalf("residual %s of %s gives %d on row %v, the filter %d", residual, filter, got, r, want)
				}
			}
			// Every prefix of the path survives too.
			for level := 0; level < len(sp.fields); level++ {
				part := newLeafValues(len(sp.fields))
				for i := 0; i < level; i++ {
					sp.set(&part, i, lv.vals[i])
				}
				if pj, _ := sp.judge(norm, &part); want == 1 && pj == no {
					rt.Fatalf("filter %s pruned the path of row %v at level %d", filter, r, level)
				}
			}
		}
	})
}

func TestLikeMatchAgreesWithTheReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("ab%_")), 0, 6, -1).Draw(rt, "s")
		p := rapid.StringOfN(rapid.SampledFrom([]rune("ab%_")), 0, 6, -1).Draw(rt, "p")
		if likeMatch(s, p) != refLike(s, p) {
			rt.Fatalf("likeMatch(%q, %q) = %v", s, p, likeMatch(s, p))
		}
	})
}

// Partitions at the ends of the int64 and date ranges keep their whole
// preimage: no bound wraps around.
func TestPreimagesAtTheEdgesOfTheRangeDoNotWrap(t *testing.T) {
	for _, c := range []struct {
		spec, filter string
		r            row
	}{
		{`[{"source_ids":[1],"transform":{"type":"truncate","width":10}}]`, "i = 9223372036854775807", row{"i": Int(math.MaxInt64)}},
		{`[{"source_ids":[1],"transform":{"type":"truncate","width":10}}]`, "i = -9223372036854775808", row{"i": Int(math.MinInt64)}},
		{`[{"source_ids":[1],"transform":{"type":"truncate","width":3}}]`, "i > 9223372036854775800", row{"i": Int(math.MaxInt64 - 1)}},
		{`[{"source_ids":[4],"transform":{"type":"hour"}}]`, "ts >= TIMESTAMP '2024-01-01'", row{"ts": Timestamp(math.MaxInt64)}},
		{`[{"source_ids":[4],"transform":{"type":"day"}}]`, "ts >= TIMESTAMP '2024-01-01'", row{"ts": Timestamp(math.MaxInt64)}},
		{`[{"source_ids":[4],"transform":{"type":"year"}}]`, "ts >= TIMESTAMP '2024-01-01'", row{"ts": Timestamp(math.MaxInt64)}},
		{`[{"source_ids":[4],"transform":{"type":"month"}}]`, "ts < TIMESTAMP '1900-01-01'", row{"ts": Timestamp(math.MinInt64)}},
		{`[{"source_ids":[3],"transform":{"type":"day"}}]`, "d > DATE '2024-01-01'", row{"d": Date(math.MaxInt32)}},
		{`[{"source_ids":[3],"transform":{"type":"year"}}]`, "d < DATE '1900-01-01'", row{"d": Date(math.MinInt32)}},
		{`[{"source_ids":[3],"transform":{"type":"month"}}]`, "d > DATE '2024-01-01'", row{"d": Date(math.MaxInt32)}},
	} {
		tbl := testTable(t, c.spec)
		if k, _ := kept(t, tbl, c.filter, c.r); !k {
			t.Errorf("%s: %s pruned the partition of %v", c.spec, c.filter, c.r)
		}
	}
}

package planner_test

// The differential oracle of issue 17: random partitioned tables (schemas
// of int32, int64, string, date and timestamp columns; specs of 1 to 3
// fields over every transform, stacked on one column, evolved), leaves
// resolved from random source rows with edge values, and random filters
// over the whole grammar of plan_scan, NULL literals included. DuckDB,
// holding every source row and the leaf it resolved to, judges what each
// filter means, and every plan must be:
//
//   - sound: a leaf holding a row the filter is TRUE for is planned;
//   - exact in its residual: on a planned leaf's rows, the residual filter
//     selects exactly the rows the filter selects;
//   - exact for identity fields: when the filter pins (=, IN, IS NULL)
//     only columns a spec partitions by identity, that spec's leaves are
//     planned exactly when they hold a matching row, with residual TRUE;
//   - the same on every surface: the Go API, REST (Arrow and JSON), the
//     Flight PlanScan action, GetFlightInfo with a plan_scan command, and
//     SELECT … FROM plan_scan(…) over Flight SQL.
//
// Resolving is checked on the way: every row's leaf carries the partition
// values the docs define (computed here independently, Murmur3 included),
// ResolveOrCreate of those values finds the same leaf, and the REST and
// Flight resolves read the row's JSON exactly as a client sends it.
//
// `go test` runs defaultOracleChecks random catalogs (about 24 filters
// each); FLIGHTNS_ORACLE_CHECKS=N or -rapid.checks=N runs more. A failure
// is shrunk and its case saved under testdata/rapid/TestPlanScanOracle/,
// which every later run replays first.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/planner"
)

// defaultOracleChecks is the number of random catalogs a plain `go test`
// tries.
const defaultOracleChecks = 12

// filtersPerCase is how many filters run against each random catalog.
const filtersPerCase = 24

func TestPlanScanOracle(t *testing.T) {
	setOracleChecks(t)
	e := newOracleEnv(t)
	rapid.Check(t, func(rt *rapid.T) {
		e.run(rt, drawCase(rt))
	})
}

// setOracleChecks sets rapid's number of checks for this test: from
// FLIGHTNS_ORACLE_CHECKS, else -rapid.checks or RAPID_CHECKS when given,
// else defaultOracleChecks.
func setOracleChecks(t *testing.T) {
	n := defaultOracleChecks
	if s := os.Getenv("FLIGHTNS_ORACLE_CHECKS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			t.Fatalf("FLIGHTNS_ORACLE_CHECKS=%q is not a positive number", s)
		}
	} else {
		given := false
		flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.checks" })
		if _, env := os.LookupEnv("RAPID_CHECKS"); given || env {
			return
		}
	}
	f := flag.Lookup("rapid.checks")
	if f == nil {
		t.Fatal("rapid registers no -rapid.checks flag")
	}
	old := f.Value.String()
	if err := f.Value.Set(strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// ---- the case ----

// ocol is a column of the random schema.
type ocol struct {
	Name    string
	FieldID int
	Kind    okind
	Type    string // the JsonArrowSchema spelling
}

// ocell is one value of a source row: the value, its JSON text as a client
// sends it ("" leaves the key out: NULL) and the SQL DuckDB stores.
type ocell struct {
	V    oval
	JSON string
	Duck string
}

// orow is a source row and how it reaches its leaf.
type orow struct {
	Cells []ocell
	Spec  int    // the spec (1-based) current when it is resolved
	Path  string // "go" (json.Number values, as a UseNumber server passes them), "rest" or "flight"
	Upper bool   // keys in upper case (row lookups ignore case)
	// Values, when not 0, also resolves the row's partition values (the
	// oracle's) with ResolveOrCreate, in that JSON style (odd: dates and
	// timestamps as numbers).
	Values int
}

// ofilter is a filter as the planner reads it and as DuckDB reads it.
type ofilter struct {
	Planner, Duck string
	// Pinned, when set, are the columns the filter pins with =, IN or
	// IS NULL and nothing else: the leaves of a spec with identity fields
	// on all of them are planned exactly when they hold a matching row.
	Pinned []int
}

// ocase is a random catalog and the filters asked of it.
type ocase struct {
	Cols    []ocol
	Specs   [][]ofield // spec id i+1
	Rows    []orow
	Filters []ofilter
}

func (c *ocase) schemaJSON() string {
	var fs []string
	for _, col := range c.Cols {
		fs = append(fs, fmt.Sprintf(`{"name":%s,"nullable":true,"type":{"type":%s},"metadata":{"lance:field_id":"%d"}}`,
			jsonString(col.Name), jsonString(col.Type), col.FieldID))
	}
	return `{"fields":[` + strings.Join(fs, ",") + `]}`
}

func (c *ocase) specJSON(s int) string {
	var fs []string
	for _, f := range c.Specs[s] {
		var b strings.Builder
		b.WriteString("{")
		if f.IDJSON != "" {
			b.WriteString(`"field_id":` + f.IDJSON + ",")
		}
		var src []string
		for _, i := range f.Src {
			src = append(src, strconv.Itoa(c.Cols[i].FieldID))
		}
		b.WriteString(`"source_ids":[` + strings.Join(src, ",") + `],"transform":{"type":"` + f.Transform + `"`)
		switch f.Transform {
		case "bucket", "multi_bucket":
			fmt.Fprintf(&b, `,"num_buckets":%d`, f.N)
		case "truncate":
			fmt.Fprintf(&b, `,"width":%d`, f.N)
		}
		b.WriteString("}}")
		fs = append(fs, b.String())
	}
	return `{"fields":[` + strings.Join(fs, ",") + `]}`
}

func (c *ocase) rowJSON(r orow) string {
	var kv []string
	for i, cell := range r.Cells {
		if cell.JSON == "" {
			continue
		}
		k := c.Cols[i].Name
		if r.Upper {
			k = strings.ToUpper(k)
		}
		kv = append(kv, jsonString(k)+":"+cell.JSON)
	}
	return "{" + strings.Join(kv, ",") + "}"
}

// valuesJSON is a row's partition values under spec s, by field id, as a
// client of ResolveOrCreate sends them.
func (c *ocase) valuesJSON(s int, r orow) string {
	var kv []string
	for _, f := range c.Specs[s] {
		v := f.apply(c.Cols, r.Cells)
		var j string
		switch k := f.kind(c.Cols); {
		case v.Null:
			if r.Values%4 < 2 {
				continue
			}
			j = "null"
		case k == kString:
			j = jsonString(v.S)
		case k == kDate && r.Values%2 == 0 && v.I >= minDay && v.I <= maxDay:
			j = jsonString(dateText(v.I))
		case k == kTimestamp && r.Values%2 == 0 && v.I >= minUs && v.I <= maxUs:
			j = jsonString(tsTime(v.I).Format("2006-01-02T15:04:05.999999Z07:00"))
		default:
			j = strconv.FormatInt(v.I, 10)
		}
		kv = append(kv, jsonString(f.ID)+":"+j)
	}
	return "{" + strings.Join(kv, ",") + "}"
}

// describe prints the case for a failure message.
func (c *ocase) describe(rowLeaf []string) string {
	var b strings.Builder
	b.WriteString("schema:")
	for _, col := range c.Cols {
		fmt.Fprintf(&b, " %s %s (field %d);", sqlIdent(col.Name), col.Type, col.FieldID)
	}
	for s := range c.Specs {
		fmt.Fprintf(&b, "\nspec %d: %s", s+1, c.specJSON(s))
	}
	for i, r := range c.Rows {
		leaf := "(unresolved)"
		if rowLeaf != nil && rowLeaf[i] != "" {
			leaf = rowLeaf[i]
		}
		fmt.Fprintf(&b, "\nrow %d: %s (spec %d, via %s) -> %s", i, c.rowJSON(r), r.Spec, r.Path, leaf)
	}
	return b.String()
}

// identityCols are the columns spec s partitions by identity.
func (c *ocase) identityCols(s int) map[int]bool {
	out := map[int]bool{}
	for _, f := range c.Specs[s] {
		if f.Transform == "identity" {
			out[f.Src[0]] = true
		}
	}
	return out
}

// ---- running a case ----

// oleaf is a leaf as the oracle knows it.
type oleaf struct {
	Spec   int               // 1-based
	Values map[string]string // partition column -> canonical value (the oracle's)
	Rows   []int
}

// caseRun is a case's catalog once built.
type caseRun struct {
	c       *ocase
	table   string // the partitioned table
	rows    string // the DuckDB table of its rows
	rowLeaf []string
	leaves  map[string]*oleaf
}

// run builds a case's catalog (create, evolve, resolve every row under
// the spec current at the time), loads its rows into DuckDB with their
// leaves, and judges every filter's plan.
func (e *oracleEnv) run(tb failer, c *ocase) {
	tb.Helper()
	ctx := context.Background()
	n := e.tables.Add(1)
	r := &caseRun{c: c, table: fmt.Sprintf("oracle_%d", n), rows: fmt.Sprintf("oracle_rows_%d", n),
		rowLeaf: make([]string, len(c.Rows)), leaves: map[string]*oleaf{}}
	// A failure logs its details and fails with its class alone: rapid
	// shrinks a case only while it fails with the very same message.
	fail := func(class, format string, args ...any) {
		tb.Helper()
		tb.Logf("%s\n%s", fmt.Sprintf(format, args...), c.describe(r.rowLeaf))
		tb.Fatalf("%s (details logged above)", class)
	}
	id := api.ID{r.table}
	byValues := map[string]string{} // spec and partition values -> leaf
	for s := range c.Specs {
		var spec planner.Spec
		if err := decodeJSON([]byte(c.specJSON(s)), &spec); err != nil {
			fail("the spec does not decode", "spec %d: %v", s+1, err)
		}
		var tbl *planner.Table
		var err error
		if s == 0 {
			tbl, err = e.p.CreateTable(ctx, planner.CreateTableRequest{ID: id, Schema: []byte(c.schemaJSON()), Spec: spec})
		} else {
			tbl, err = e.p.EvolveSpec(ctx, id, spec)
		}
		if err != nil {
			fail("creating or evolving the spec failed", "creating spec %d: %v", s+1, err)
		}
		cur := tbl.Current()
		var got, want []string
		for i, f := range c.Specs[s] {
			want = append(want, f.ID)
			if i < len(cur.Fields) {
				got = append(got, cur.Fields[i].FieldID)
			}
		}
		if int(cur.ID) != s+1 || !reflect.DeepEqual(got, want) {
			fail("the spec was stored with other ids", "spec %d was stored as spec %d with field ids %v, want %v", s+1, cur.ID, got, want)
		}
		for i, row := range c.Rows {
			if row.Spec != s+1 {
				continue
			}
			leaf := e.resolveRow(ctx, fail, r, s, i)
			key := fmt.Sprint(s, c.valuesJSON(s, orow{Cells: row.Cells, Values: 2}))
			if other, ok := byValues[key]; ok && other != leaf {
				fail("one partition resolved to two leaves", "rows with the same partition values resolved to two leaves, %s and %s", other, leaf)
			}
			byValues[key] = leaf
		}
	}
	e.load(fail, r)
	defer func() { _, _ = e.duck.Exec("DROP TABLE " + r.rows) }()
	for _, f := range c.Filters {
		e.check(ctx, fail, r, f)
	}
}

// leafAnswer is a resolve's answer, from any surface.
type leafAnswer struct {
	ID     []string       `json:"id"`
	SpecID json.Number    `json:"spec_id"`
	Values map[string]any `json:"partition_values"`
}

// resolve asks for a leaf by row or by values ("row" or "values") over a
// path.
func (e *oracleEnv) resolve(ctx context.Context, table, path, what, body string) (leafAnswer, error) {
	var raw []byte
	switch path {
	case "go":
		var m map[string]any
		if err := decodeJSON([]byte(body), &m); err != nil {
			return leafAnswer{}, err
		}
		var l *planner.Leaf
		var err error
		if what == "row" {
			l, err = e.p.ResolveRow(ctx, api.ID{table}, m)
		} else {
			l, err = e.p.ResolveOrCreate(ctx, api.ID{table}, m)
		}
		if err != nil {
			return leafAnswer{}, err
		}
		if raw, err = json.Marshal(l); err != nil {
			return leafAnswer{}, err
		}
	case "rest":
		var err error
		if raw, err = e.restPost(ctx, table, "partitioned/resolve", `{"`+what+`":`+body+`}`); err != nil {
			return leafAnswer{}, err
		}
	default:
		var err error
		if raw, err = e.flightAction(ctx, "ResolvePartition", `{"id":[`+jsonString(table)+`],"`+what+`":`+body+`}`); err != nil {
			return leafAnswer{}, err
		}
	}
	var a leafAnswer
	return a, decodeJSON(raw, &a)
}

// resolveRow resolves row i under spec s (0-based) and checks its leaf
// against the oracle's partition values.
func (e *oracleEnv) resolveRow(ctx context.Context, fail func(string, string, ...any), r *caseRun, s, i int) string {
	c, row := r.c, r.c.Rows[i]
	body := c.rowJSON(row)
	a, err := e.resolve(ctx, r.table, row.Path, "row", body)
	if err != nil {
		fail("resolving a row failed", "resolving row %d %s via %s: %v", i, body, row.Path, err)
	}
	leaf := strings.Join(a.ID, api.Delimiter)
	want := map[string]string{}
	for _, f := range c.Specs[s] {
		k := f.kind(c.Cols)
		wv := canon(k, f.apply(c.Cols, row.Cells))
		gv, err := canonJSON(k, a.Values[f.ID])
		if err != nil {
			fail("a resolved leaf's partition values are unreadable", "row %d %s via %s: partition value of field %s: %v", i, body, row.Path, f.ID, err)
		}
		if gv != wv {
			fail("a resolved leaf has wrong partition values", "row %d %s via %s resolved to %s with field %s (%s of %s) = %s, want %s", i, body, row.Path, leaf, f.ID,
				f.Transform, c.Cols[f.Src[0]].Name, gv, wv)
		}
		want["partition_field_"+f.ID] = wv
	}
	prefix := r.table + api.Delimiter + "v" + strconv.Itoa(s+1) + api.Delimiter
	if a.SpecID.String() != strconv.Itoa(s+1) || !strings.HasPrefix(leaf, prefix) || len(a.ID) != len(c.Specs[s])+3 || a.ID[len(a.ID)-1] != planner.LeafName {
		fail("a resolved leaf is not where its spec puts it", "row %d via %s resolved to %v (spec %s): want a leaf of spec %d, %d levels below %s", i, row.Path, a.ID, a.SpecID, s+1, len(c.Specs[s]), prefix)
	}
	if row.Values != 0 {
		vb := c.valuesJSON(s, row)
		b, err := e.resolve(ctx, r.table, row.Path, "values", vb)
		if err != nil {
			fail("ResolveOrCreate of a row's partition values failed", "ResolveOrCreate of row %d's partition values %s via %s: %v", i, vb, row.Path, err)
		}
		if got := strings.Join(b.ID, api.Delimiter); got != leaf {
			fail("ResolveOrCreate and ResolveRow found different leaves", "row %d resolved to %s, but its partition values %s (via %s) to %s", i, leaf, vb, row.Path, got)
		}
	}
	l, ok := r.leaves[leaf]
	if !ok {
		l = &oleaf{Spec: s + 1, Values: want}
		r.leaves[leaf] = l
	} else if !reflect.DeepEqual(l.Values, want) {
		fail("two partitions share a leaf", "row %d resolved to %s, a leaf of partition values %v, with its own values %v", i, leaf, l.Values, want)
	}
	l.Rows = append(l.Rows, i)
	r.rowLeaf[i] = leaf
	return leaf
}

// load puts the case's rows, with their leaves, into a DuckDB table.
func (e *oracleEnv) load(fail func(string, string, ...any), r *caseRun) {
	cols := []string{"oracle_rid INTEGER", "oracle_leaf VARCHAR"}
	for _, col := range r.c.Cols {
		cols = append(cols, sqlIdent(col.Name)+" "+duckTypes[col.Kind])
	}
	if _, err := e.duck.Exec("CREATE TABLE " + r.rows + " (" + strings.Join(cols, ", ") + ")"); err != nil {
		fail("DuckDB refused the rows", "DuckDB: %v", err)
	}
	var rows []string
	for i, row := range r.c.Rows {
		vals := []string{strconv.Itoa(i), sqlString(r.rowLeaf[i])}
		for _, cell := range row.Cells {
			vals = append(vals, cell.Duck)
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	if _, err := e.duck.Exec("INSERT INTO " + r.rows + " VALUES " + strings.Join(rows, ", ")); err != nil {
		fail("DuckDB refused the rows", "DuckDB: %v", err)
	}
}

// check plans one filter on every surface and judges the plans.
func (e *oracleEnv) check(ctx context.Context, fail func(string, string, ...any), r *caseRun, f ofilter) {
	c := r.c
	what := fmt.Sprintf("filter %q (DuckDB: %q)", f.Planner, f.Duck)
	matched, err := e.duckRows(r.rows, f.Duck)
	if err != nil {
		fail("DuckDB refused a filter", "%s: DuckDB: %v", what, err)
	}
	isMatch := map[int]bool{}
	for _, i := range matched {
		isMatch[i] = true
	}
	pl, err := e.p.PlanScan(ctx, api.ID{r.table}, f.Planner)
	if err != nil {
		fail("PlanScan refused a filter of its grammar", "%s: PlanScan: %v", what, err)
	}
	ref := viewOfPlan(pl)

	// Every planned leaf is one of the table's, with its partition values.
	for id, l := range ref.leaves {
		ol, ok := r.leaves[id]
		if !ok {
			fail("a plan holds a leaf of another table", "%s planned %s, which is no leaf of the table", what, id)
		}
		for col, v := range l.Values {
			want, has := ol.Values[col]
			if !has {
				want = "null"
			}
			if v != want {
				fail("a plan carries wrong partition values", "%s planned %s with %s = %s, but the leaf's value is %s", what, id, col, v, want)
			}
		}
		if l.Spec != strconv.Itoa(ol.Spec) {
			fail("a plan carries a wrong spec id", "%s planned %s as a leaf of spec %s, want %d", what, id, l.Spec, ol.Spec)
		}
	}

	// Soundness.
	for _, i := range matched {
		if _, ok := ref.leaves[r.rowLeaf[i]]; !ok {
			fail("unsound: a leaf holding a row the filter is TRUE for is not planned", "unsound: %s is TRUE for row %d %s, but its leaf %s is not planned (planned: %v)", what, i, c.rowJSON(c.Rows[i]), r.rowLeaf[i], ref.ids())
		}
	}

	// Residuals: on the leaves planned, each selects what the filter does.
	byResidual := map[string][]string{}
	for id, l := range ref.leaves {
		byResidual[l.Residual] = append(byResidual[l.Residual], id)
	}
	for res, ids := range byResidual {
		sort.Strings(ids)
		var inLeaves, want []int
		for _, id := range ids {
			inLeaves = append(inLeaves, r.leaves[id].Rows...)
		}
		sort.Ints(inLeaves)
		for _, i := range inLeaves {
			if isMatch[i] {
				want = append(want, i)
			}
		}
		var list []string
		for _, id := range ids {
			list = append(list, sqlString(id))
		}
		got, err := e.duckRows(r.rows, "oracle_leaf IN ("+strings.Join(list, ", ")+") AND ("+res+")")
		if err != nil {
			fail("a residual filter is not SQL DuckDB runs", "%s left the residual %q on %v, which DuckDB cannot run: %v", what, res, ids, err)
		}
		if !reflect.DeepEqual(got, want) {
			fail("wrong residual: on a planned leaf it selects other rows than the filter", "wrong residual: %s left %q on leaves %v; on their rows %v the residual selects %v, the filter %v", what, res, ids, inLeaves, got, want)
		}
	}

	// Exactness where the filter pins only identity columns.
	if f.Pinned != nil {
		for id, l := range r.leaves {
			ident := c.identityCols(l.Spec - 1)
			covered := true
			for _, col := range f.Pinned {
				covered = covered && ident[col]
			}
			if !covered {
				continue
			}
			has := false
			for _, i := range l.Rows {
				has = has || isMatch[i]
			}
			pv, planned := ref.leaves[id]
			switch {
			case has && !planned:
				fail("unsound: a leaf holding a row the filter is TRUE for is not planned", "unsound: %s pins identity columns; leaf %s holds a matching row but is not planned", what, id)
			case !has && planned:
				fail("inexact: a filter pinning identity columns plans a leaf without a matching row", "inexact: %s pins identity columns; leaf %s (values %v) holds no matching row but is planned with residual %q", what, id, l.Values, pv.Residual)
			case planned && pv.Residual != "TRUE":
				fail("inexact: a filter pinning identity columns leaves a residual", "inexact: %s pins identity columns; leaf %s is planned with residual %q, want TRUE", what, id, pv.Residual)
			}
		}
	}

	// Every surface answers the same plan.
	kinds := map[string]okind{}
	for _, fd := range pl.Schema().Fields() {
		if !strings.HasPrefix(fd.Name, "partition_field_") {
			continue
		}
		switch fd.Type.ID() {
		case arrow.DATE32:
			kinds[fd.Name] = kDate
		case arrow.TIMESTAMP:
			kinds[fd.Name] = kTimestamp
		case arrow.STRING:
			kinds[fd.Name] = kString
		default:
			kinds[fd.Name] = kInt64
		}
	}
	for _, s := range surfaces {
		got, err := s.plan(ctx, e, r.table, f.Planner, kinds)
		if err != nil {
			fail(s.name+" failed", "%s: %s: %v", what, s.name, err)
		}
		if got.seq != "" && got.seq != ref.seq {
			fail(s.name+" planned at another catalog sequence", "%s: %s planned at catalog sequence %s, the Go API at %s", what, s.name, got.seq, ref.seq)
		}
		if !reflect.DeepEqual(got.leaves, ref.leaves) {
			fail(s.name+" answered another plan than the Go API", "%s: %s answered %s\nthe Go API %s", what, s.name, showView(got), showView(ref))
		}
	}
}

func showView(v planView) string {
	var b strings.Builder
	for _, id := range v.ids() {
		l := v.leaves[id]
		var vals []string
		for k, val := range l.Values {
			vals = append(vals, k+"="+val)
		}
		sort.Strings(vals)
		fmt.Fprintf(&b, "\n  %s spec %s version %s residual %q %v %s", id, l.Spec, l.Version, l.Residual, vals, l.Location)
	}
	if b.Len() == 0 {
		return "no leaves"
	}
	return b.String()
}

// ---- drawing a case ----

var (
	namePool    = []string{"a", "b", "n", "ts", "d", "s", "user_id", "c_9", "Day", "x y", "ü"}
	int32Edges  = []int64{math.MinInt32, math.MinInt32 + 1, -1000, -7, -1, 0, 1, 2, 7, 10, 99, 1000, math.MaxInt32 - 1, math.MaxInt32}
	int64Edges  = []int64{math.MinInt64, math.MinInt64 + 1, -(1<<53 + 1), -(1 << 53), -1e12, -7, -1, 0, 1, 3, 42, 1 << 31, 1 << 53, 1<<53 + 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64}
	stringEdges = []string{"", "a", "ab", "abc", "abd", "b", "B", "é", "ée", "日本語", "日本", "🙂", "it's", "a%b", "a_b", "%", "_", " ", "zz", `\`}
	dateEdges   = []string{"0001-01-01", "1600-03-01", "1900-02-28", "1912-06-21", "1969-12-31", "1970-01-01", "1970-05-29", "1999-12-31",
		"2000-01-01", "2000-02-29", "2023-12-31", "2024-01-01", "2024-02-29", "2024-03-01", "9999-12-31"}
	tsEdges = []string{"0001-01-01 00:00:00", "1912-06-21 12:34:56", "1969-12-31 23:59:59.999999", "1970-01-01 00:00:00", "1970-01-01 00:00:00.000001",
		"1999-12-31 23:59:59.999999", "2000-01-01 00:00:00", "2023-12-31 23:00:00", "2023-12-31 23:59:59.999999", "2024-01-01 00:00:00",
		"2024-02-29 23:30:00", "2024-03-10 02:30:00", "9999-12-31 23:59:59.999999"}
	// tsBeyond are timestamps a literal cannot write (past year 9999):
	// rows give them as microseconds.
	tsBeyond    = []int64{253402300800000000}
	zoneOffsets = []int{120, -330, 840, -720, 60, -60, 345, 0}
	likeRunes   = []rune("abé日%_")

	minDay, maxDay = dayOf("0001-01-01").I, dayOf("9999-12-31").I
	minUs, maxUs   = instant("0001-01-01 00:00:00"), instant("9999-12-31 23:59:59.999999")
)

// transformsOf are the transforms that apply to a column of kind k.
func transformsOf(k okind) []string {
	switch k {
	case kDate:
		return []string{"identity", "year", "month", "day", "bucket", "multi_bucket"}
	case kTimestamp:
		return []string{"identity", "year", "month", "day", "hour", "bucket", "multi_bucket"}
	}
	return []string{"identity", "bucket", "truncate", "multi_bucket"}
}

func drawCase(rt *rapid.T) *ocase {
	c := &ocase{}
	names := rapid.Permutation(namePool).Draw(rt, "names")
	ids := rapid.Permutation([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 40}).Draw(rt, "field ids")
	for i := range rapid.IntRange(1, 4).Draw(rt, "columns") {
		k := okind(rapid.IntRange(0, 4).Draw(rt, "kind"))
		c.Cols = append(c.Cols, ocol{Name: names[i], FieldID: ids[i], Kind: k, Type: rapid.SampledFrom(typeNames[k]).Draw(rt, "type")})
	}
	nspecs := []int{1, 1, 1, 2, 2, 3}[rapid.IntRange(0, 5).Draw(rt, "specs")]
	next := 1
	var earlier []ofield
	for s := 1; s <= nspecs; s++ {
		fields := drawSpec(rt, c.Cols, earlier, &next)
		c.Specs = append(c.Specs, fields)
		for _, f := range fields {
			if !hasSig(earlier, f.sig()) {
				earlier = append(earlier, f)
			}
		}
		for range rapid.IntRange(1, 6).Draw(rt, "rows") {
			row := orow{Spec: s, Path: rapid.SampledFrom([]string{"go", "rest", "flight"}).Draw(rt, "path"),
				Upper: rapid.IntRange(0, 5).Draw(rt, "upper keys") == 0, Values: rapid.IntRange(0, 4).Draw(rt, "values")}
			for _, col := range c.Cols {
				row.Cells = append(row.Cells, drawCell(rt, col.Kind))
			}
			c.Rows = append(c.Rows, row)
		}
	}
	g := &fgen{rt: rt, c: c}
	for range filtersPerCase {
		c.Filters = append(c.Filters, g.filter())
	}
	return c
}

func hasSig(fs []ofield, sig string) bool {
	for _, f := range fs {
		if f.sig() == sig {
			return true
		}
	}
	return false
}

// drawSpec draws 1 to 3 fields: new ones (field ids encode the partition
// value's type, so a partition_field_ column keeps one type across the
// shared catalog), stacks of time transforms on one column, and fields of
// earlier specs reused (their id written or left to evolution to find).
func drawSpec(rt *rapid.T, cols []ocol, earlier []ofield, next *int) []ofield {
	var out []ofield
	add := func(f ofield) {
		if hasSig(out, f.sig()) {
			return
		}
		for _, e := range earlier {
			if e.sig() == f.sig() { // the same field again: it keeps its id
				f = e
				if rapid.Bool().Draw(rt, "leave the id out") {
					f.IDJSON = ""
				}
				out = append(out, f)
				return
			}
		}
		k := f.kind(cols)
		if rapid.Bool().Draw(rt, "string id") {
			f.ID = fmt.Sprintf("%s_%d", [...]string{"i32", "i64", "str", "dt", "ts"}[k], *next)
			f.IDJSON = jsonString(f.ID)
		} else {
			f.ID = strconv.Itoa(100*(int(k)+1) + *next)
			f.IDJSON = f.ID
		}
		*next++
		out = append(out, f)
	}
	nf := rapid.IntRange(1, 3).Draw(rt, "fields")
	var timeCols []int
	for i, col := range cols {
		if col.Kind == kDate || col.Kind == kTimestamp {
			timeCols = append(timeCols, i)
		}
	}
	if len(timeCols) > 0 && rapid.IntRange(0, 3).Draw(rt, "stack") == 0 {
		ci := rapid.SampledFrom(timeCols).Draw(rt, "stacked column")
		stack := []string{"year", "month", "day"}
		if cols[ci].Kind == kTimestamp {
			stack = append(stack, "hour")
		}
		for _, tr := range stack {
			if len(out) < nf && rapid.IntRange(0, 3).Draw(rt, "stack level") > 0 {
				add(ofield{Transform: tr, Src: []int{ci}})
			}
		}
	}
	for tries := 0; len(out) < nf && tries < 10; tries++ {
		if len(earlier) > 0 && rapid.IntRange(0, 2).Draw(rt, "reuse") == 0 {
			add(rapid.SampledFrom(earlier).Draw(rt, "reused field"))
			continue
		}
		ci := rapid.IntRange(0, len(cols)-1).Draw(rt, "source")
		if len(out) > 0 && rapid.IntRange(0, 2).Draw(rt, "same column") == 0 {
			ci = out[len(out)-1].Src[0]
		}
		f := ofield{Transform: rapid.SampledFrom(transformsOf(cols[ci].Kind)).Draw(rt, "transform"), Src: []int{ci}}
		switch f.Transform {
		case "bucket":
			f.N = rapid.SampledFrom([]int{1, 2, 3, 4, 7, 16}).Draw(rt, "num_buckets")
		case "multi_bucket":
			f.N = rapid.SampledFrom([]int{1, 2, 3, 5, 16}).Draw(rt, "num_buckets")
			for _, o := range rapid.Permutation(indexes(len(cols))).Draw(rt, "other sources")[:rapid.IntRange(0, len(cols)-1).Draw(rt, "more sources")] {
				if o != ci {
					f.Src = append(f.Src, o)
				}
			}
			if len(f.Src) == 1 {
				f.Transform = "bucket"
			}
		case "truncate":
			if cols[ci].Kind == kString {
				f.N = rapid.IntRange(1, 3).Draw(rt, "width")
			} else {
				f.N = rapid.SampledFrom([]int{1, 2, 3, 10, 100, 1000, 1 << 30}).Draw(rt, "width")
			}
		}
		add(f)
	}
	return out
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// drawValue draws a value of kind k: an edge value mostly, else any.
func drawValue(rt *rapid.T, k okind) oval {
	if rapid.IntRange(0, 7).Draw(rt, "null") == 0 {
		return onull()
	}
	edge := rapid.IntRange(0, 4).Draw(rt, "edge") < 3
	switch k {
	case kInt32:
		if edge {
			return oint(rapid.SampledFrom(int32Edges).Draw(rt, "int32"))
		}
		return oint(int64(rapid.Int32().Draw(rt, "int32")))
	case kInt64:
		if edge {
			return oint(rapid.SampledFrom(int64Edges).Draw(rt, "int64"))
		}
		return oint(rapid.Int64().Draw(rt, "int64"))
	case kString:
		if edge {
			return ostr(rapid.SampledFrom(stringEdges).Draw(rt, "string"))
		}
		return ostr(rapid.StringOfN(rapid.SampledFrom([]rune("abé日%_ ")), 0, 4, -1).Draw(rt, "string"))
	case kDate:
		if edge {
			return dayOf(rapid.SampledFrom(dateEdges).Draw(rt, "date"))
		}
		return oint(rapid.Int64Range(minDay, maxDay).Draw(rt, "date"))
	}
	if edge {
		if rapid.IntRange(0, 15).Draw(rt, "beyond year 9999") == 0 {
			return oint(rapid.SampledFrom(tsBeyond).Draw(rt, "timestamp"))
		}
		return oint(instant(rapid.SampledFrom(tsEdges).Draw(rt, "timestamp")))
	}
	return oint(rapid.Int64Range(minUs, maxUs).Draw(rt, "timestamp"))
}

// drawCell draws a source value and the JSON a client writes it in.
func drawCell(rt *rapid.T, k okind) ocell {
	v := drawValue(rt, k)
	if v.Null {
		if rapid.Bool().Draw(rt, "explicit null") {
			return ocell{V: v, JSON: "null", Duck: "NULL"}
		}
		return ocell{V: v, Duck: "NULL"}
	}
	switch k {
	case kInt32, kInt64:
		s := strconv.FormatInt(v.I, 10)
		return ocell{V: v, JSON: s, Duck: "CAST('" + s + "' AS BIGINT)"}
	case kString:
		return ocell{V: v, JSON: jsonString(v.S), Duck: sqlString(v.S)}
	case kDate:
		if rapid.IntRange(0, 3).Draw(rt, "date as days") == 0 {
			s := strconv.FormatInt(v.I, 10)
			return ocell{V: v, JSON: s, Duck: "CAST(DATE '1970-01-01' + " + s + " AS DATE)"}
		}
		return ocell{V: v, JSON: jsonString(dateText(v.I)), Duck: "DATE '" + dateText(v.I) + "'"}
	}
	if rapid.IntRange(0, 4).Draw(rt, "timestamp as microseconds") == 0 || v.I < minUs || v.I > maxUs {
		s := strconv.FormatInt(v.I, 10)
		return ocell{V: v, JSON: s, Duck: "make_timestamp(CAST('" + s + "' AS BIGINT))::TIMESTAMPTZ"}
	}
	text := tsText(rt, v.I)
	return ocell{V: v, JSON: jsonString(text), Duck: "CAST(" + sqlString(text) + " AS TIMESTAMPTZ)"}
}

// tsText writes an instant as a timestamp literal both the planner and
// DuckDB read: space or T, with Z, with an offset (the instant shown in
// that zone), to the minute, or a bare date at midnight.
func tsText(rt *rapid.T, us int64) string {
	t := tsTime(us)
	inRange := func(t time.Time) bool { return t.Year() >= 1000 && t.Year() <= 8999 }
	switch rapid.IntRange(0, 5).Draw(rt, "timestamp style") {
	case 1:
		return t.Format("2006-01-02T15:04:05.999999Z")
	case 2, 3:
		z := t.In(time.FixedZone("", 60*rapid.SampledFrom(zoneOffsets).Draw(rt, "zone offset")))
		if inRange(t) && inRange(z) {
			if rapid.Bool().Draw(rt, "T") {
				return z.Format("2006-01-02T15:04:05.999999-07:00")
			}
			if z.Second() == 0 && z.Nanosecond() == 0 {
				return z.Format("2006-01-02 15:04-07:00")
			}
			return z.Format("2006-01-02 15:04:05.999999-07:00")
		}
	case 4:
		if t.Second() == 0 && t.Nanosecond() == 0 {
			if t.Hour() == 0 && t.Minute() == 0 {
				return t.Format("2006-01-02")
			}
			return t.Format("2006-01-02 15:04")
		}
	}
	return t.Format("2006-01-02 15:04:05.999999")
}

// ---- drawing filters ----

// fgen draws filters over a case's columns, with literals near its rows'
// values.
type fgen struct {
	rt *rapid.T
	c  *ocase
}

// ftext is a piece of filter in the planner's and DuckDB's text, and how
// tightly it binds (1 OR, 2 AND, 3 NOT, 4 a predicate).
type ftext struct {
	p, d string
	prec int
}

func (x ftext) wrap(prec int, extra bool) ftext {
	if x.prec < prec || extra {
		return ftext{"(" + x.p + ")", "(" + x.d + ")", 4}
	}
	return x
}

func (g *fgen) filter() ofilter {
	switch rapid.IntRange(0, 39).Draw(g.rt, "filter shape") {
	case 0:
		return ofilter{}
	case 1, 2, 3, 4, 5, 6, 7, 8, 9:
		if f, ok := g.pinned(); ok {
			return f
		}
	}
	x := g.expr(rapid.IntRange(0, 3).Draw(g.rt, "depth"))
	return ofilter{Planner: x.p, Duck: x.d}
}

func (g *fgen) extra() bool { return rapid.IntRange(0, 7).Draw(g.rt, "extra parentheses") == 0 }

func (g *fgen) expr(depth int) ftext {
	if depth > 0 && rapid.IntRange(0, 2).Draw(g.rt, "compound") > 0 {
		switch rapid.IntRange(0, 2).Draw(g.rt, "connective") {
		case 0:
			l, r := g.expr(depth-1).wrap(2, g.extra()), g.expr(depth-1).wrap(2, g.extra())
			return ftext{l.p + " AND " + r.p, l.d + " AND " + r.d, 2}
		case 1:
			l, r := g.expr(depth-1).wrap(1, g.extra()), g.expr(depth-1).wrap(1, g.extra())
			return ftext{l.p + " OR " + r.p, l.d + " OR " + r.d, 1}
		}
		x := g.expr(depth-1).wrap(3, g.extra())
		return ftext{"NOT " + x.p, "NOT " + x.d, 3}
	}
	return g.atom()
}

func same(s string) ftext { return ftext{s, s, 4} }

func (g *fgen) not(kw string) string {
	if rapid.Bool().Draw(g.rt, "NOT "+kw) {
		return "NOT " + kw
	}
	return kw
}

func (g *fgen) atom() ftext {
	rt := g.rt
	ci := rapid.IntRange(0, len(g.c.Cols)-1).Draw(rt, "column")
	col := g.colRef(ci)
	switch rapid.IntRange(0, 11).Draw(rt, "predicate") {
	case 0:
		return same(rapid.SampledFrom([]string{"TRUE", "FALSE"}).Draw(rt, "boolean"))
	case 1:
		if rapid.Bool().Draw(rt, "IS NOT") {
			return same(col + " IS NOT NULL")
		}
		return same(col + " IS NULL")
	case 2, 3:
		kw := g.not("IN")
		var ps, ds []string
		for range rapid.IntRange(1, 4).Draw(rt, "IN list") {
			p, d := g.lit(ci)
			ps, ds = append(ps, p), append(ds, d)
		}
		return ftext{col + " " + kw + " (" + strings.Join(ps, ", ") + ")", col + " " + kw + " (" + strings.Join(ds, ", ") + ")", 4}
	case 4, 5:
		kw := g.not("BETWEEN")
		lp, ld := g.lit(ci)
		hp, hd := g.lit(ci)
		return ftext{col + " " + kw + " " + lp + " AND " + hp, col + " " + kw + " " + ld + " AND " + hd, 4}
	case 6, 7:
		if g.c.Cols[ci].Kind == kString {
			return same(col + " " + g.not("LIKE") + " " + sqlString(g.pattern(ci)))
		}
	}
	op := rapid.SampledFrom([]string{"=", "<>", "!=", "<", "<=", ">", ">="}).Draw(rt, "comparison")
	p, d := g.lit(ci)
	if rapid.IntRange(0, 3).Draw(rt, "literal first") == 0 {
		return ftext{p + " " + op + " " + col, d + " " + op + " " + col, 4}
	}
	return ftext{col + " " + op + " " + p, col + " " + op + " " + d, 4}
}

// pinned is a conjunction of =, IN and IS NULL over every column a spec
// partitions by identity, with values of the rows mostly.
func (g *fgen) pinned() (ofilter, bool) {
	rt := g.rt
	var specs []int
	for s := range g.c.Specs {
		if len(g.c.identityCols(s)) > 0 {
			specs = append(specs, s)
		}
	}
	if len(specs) == 0 {
		return ofilter{}, false
	}
	ident := g.c.identityCols(rapid.SampledFrom(specs).Draw(rt, "pinned spec"))
	var cols []int
	for ci := range ident {
		cols = append(cols, ci)
	}
	sort.Ints(cols)
	cols = rapid.Permutation(cols).Draw(rt, "pinned order")
	var x ftext
	for i, ci := range cols {
		col := g.colRef(ci)
		var a ftext
		switch rapid.IntRange(0, 9).Draw(rt, "pin") {
		case 0, 1, 2, 3, 4:
			p, d := g.litOf(ci, g.pinValue(ci))
			if rapid.Bool().Draw(rt, "literal first") {
				a = ftext{p + " = " + col, d + " = " + col, 4}
			} else {
				a = ftext{col + " = " + p, col + " = " + d, 4}
			}
		case 5, 6, 7, 8:
			var ps, ds []string
			for range rapid.IntRange(1, 3).Draw(rt, "IN list") {
				v := g.pinValue(ci)
				if rapid.IntRange(0, 4).Draw(rt, "NULL in the list") == 0 {
					v = onull()
				}
				p, d := g.litOf(ci, v)
				ps, ds = append(ps, p), append(ds, d)
			}
			a = ftext{col + " IN (" + strings.Join(ps, ", ") + ")", col + " IN (" + strings.Join(ds, ", ") + ")", 4}
		default:
			a = same(col + " IS NULL")
		}
		if i == 0 {
			x = a.wrap(4, g.extra())
			continue
		}
		l, r := x.wrap(2, g.extra()), a.wrap(2, g.extra())
		x = ftext{l.p + " AND " + r.p, l.d + " AND " + r.d, 2}
	}
	return ofilter{Planner: x.p, Duck: x.d, Pinned: cols}, true
}

func (g *fgen) pinValue(ci int) oval {
	if seen := g.seen(ci); len(seen) > 0 && rapid.IntRange(0, 9).Draw(g.rt, "pin a row's value") < 7 {
		return rapid.SampledFrom(seen).Draw(g.rt, "row value")
	}
	return g.value(ci)
}

// colRef writes a column as a filter names it: as is, in upper case
// (names are case-insensitive) or quoted.
func (g *fgen) colRef(ci int) string {
	name := g.c.Cols[ci].Name
	if strings.ContainsAny(name, " \"") {
		return sqlIdent(name)
	}
	switch rapid.IntRange(0, 3).Draw(g.rt, "column spelling") {
	case 0:
		if up := strings.ToUpper(name); strings.ToLower(up) == name && isASCII(name) {
			return up
		}
	case 1:
		return sqlIdent(name)
	}
	return name
}

func isASCII(s string) bool {
	for _, r := range s {
		if r > 127 {
			return false
		}
	}
	return true
}

// seen are the non-NULL values of column ci in the case's rows.
func (g *fgen) seen(ci int) []oval {
	var out []oval
	for _, r := range g.c.Rows {
		if v := r.Cells[ci].V; !v.Null {
			out = append(out, v)
		}
	}
	return out
}

// value draws a literal's value for column ci: a row's value, a neighbour
// of one, or an edge value.
func (g *fgen) value(ci int) oval {
	rt, k := g.rt, g.c.Cols[ci].Kind
	seen := g.seen(ci)
	pick := rapid.IntRange(0, 9).Draw(rt, "literal source")
	if len(seen) > 0 && pick < 6 {
		v := rapid.SampledFrom(seen).Draw(rt, "row value")
		if pick < 4 {
			return v
		}
		switch k {
		case kString:
			if rapid.Bool().Draw(rt, "longer") {
				return ostr(v.S + "a")
			}
			rs := []rune(v.S)
			return ostr(string(rs[:rapid.IntRange(0, len(rs)).Draw(rt, "prefix")]))
		case kTimestamp:
			d := rapid.SampledFrom([]int64{-usPerHour, -1, 1, usPerHour, usPerDay}).Draw(rt, "step")
			if w := v.I + d; w >= minUs && w <= maxUs {
				return oint(w)
			}
			return v
		}
		d := int64(rapid.SampledFrom([]int{-1, 1}).Draw(rt, "step"))
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if k == kDate {
			lo, hi = minDay, maxDay
		}
		if d < 0 && v.I > lo || d > 0 && v.I < hi {
			return oint(v.I + d)
		}
		return v
	}
	return drawValue(rt, k)
}

// lit draws a literal for column ci, NULL at times.
func (g *fgen) lit(ci int) (string, string) {
	if rapid.IntRange(0, 9).Draw(g.rt, "NULL literal") == 0 {
		return "NULL", "NULL"
	}
	return g.litOf(ci, g.value(ci))
}

// litOf writes a value as a literal for column ci, in one of the forms
// the planner accepts: numbers (integral ones with .0 too), 'strings',
// DATE '…' or '…' for dates, and for timestamps TIMESTAMP '…' (DuckDB:
// TIMESTAMPTZ '…', see newOracleEnv), '…' or DATE '…'.
func (g *fgen) litOf(ci int, v oval) (string, string) {
	rt := g.rt
	if v.Null {
		return "NULL", "NULL"
	}
	switch g.c.Cols[ci].Kind {
	case kInt32, kInt64:
		s := strconv.FormatInt(v.I, 10)
		if v.I >= -1000 && v.I <= 1000 && rapid.IntRange(0, 4).Draw(rt, "as a decimal") == 0 {
			s += ".0"
		}
		return s, s
	case kString:
		return sqlString(v.S), sqlString(v.S)
	case kDate:
		q := sqlString(dateText(v.I))
		if rapid.Bool().Draw(rt, "DATE literal") {
			q = "DATE " + q
		}
		return q, q
	}
	v.I = max(minUs, min(v.I, maxUs)) // a literal writes years 0001 to 9999
	text := tsText(rt, v.I)
	switch rapid.IntRange(0, 3).Draw(rt, "timestamp literal") {
	case 0:
		return sqlString(text), sqlString(text)
	case 1:
		if v.I%usPerDay == 0 {
			q := "DATE " + sqlString(dateText(floorDiv(v.I, usPerDay)))
			return q, q
		}
	}
	return "TIMESTAMP " + sqlString(text), "TIMESTAMPTZ " + sqlString(text)
}

// pattern draws a LIKE pattern near the rows' strings.
func (g *fgen) pattern(ci int) string {
	rt := g.rt
	seen := g.seen(ci)
	if len(seen) > 0 {
		rs := []rune(rapid.SampledFrom(seen).Draw(rt, "row string").S)
		cut := rapid.IntRange(0, len(rs)).Draw(rt, "cut")
		switch rapid.IntRange(0, 4).Draw(rt, "pattern shape") {
		case 0:
			return string(rs)
		case 1:
			return string(rs[:cut]) + "%"
		case 2:
			return "%" + string(rs[cut:])
		case 3:
			if cut < len(rs) {
				rs[cut] = '_'
			}
			return string(rs)
		}
	}
	return rapid.StringOfN(rapid.SampledFrom(likeRunes), 0, 4, -1).Draw(rt, "pattern")
}

// ---- the cases of issue 17, as regressions ----

func cellInt(i int64) ocell {
	s := strconv.FormatInt(i, 10)
	return ocell{V: oint(i), JSON: s, Duck: "CAST('" + s + "' AS BIGINT)"}
}

func cellDate(s string) ocell {
	return ocell{V: dayOf(s), JSON: jsonString(s), Duck: "DATE '" + s + "'"}
}
func cellStr(s string) ocell { return ocell{V: ostr(s), JSON: jsonString(s), Duck: sqlString(s)} }
func cellNull() ocell        { return ocell{V: onull(), JSON: "null", Duck: "NULL"} }

func plain(filters ...string) []ofilter {
	var out []ofilter
	for _, f := range filters {
		out = append(out, ofilter{Planner: f, Duck: f})
	}
	return out
}

// x NOT BETWEEN lo AND NULL is x < lo OR x > NULL: TRUE when x < lo.
func TestOracleNotBetweenWithANullBoundKeepsTheRowsBelow(t *testing.T) {
	e := newOracleEnv(t)
	e.run(t, &ocase{
		Cols:    []ocol{{Name: "d", FieldID: 1, Kind: kDate, Type: "date32"}},
		Specs:   [][]ofield{{{ID: "i32_1", IDJSON: `"i32_1"`, Transform: "month", Src: []int{0}}}},
		Rows:    []orow{{Cells: []ocell{cellDate("1912-06-21")}, Spec: 1, Path: "go"}},
		Filters: plain("d NOT BETWEEN DATE '1970-05-29' AND NULL", "NOT (d BETWEEN NULL AND DATE '1900-01-01')"),
	})
}

// NOT (l < NULL OR l < -1) is NOT (NULL OR …): never TRUE, so the
// residual of a planned leaf selects no row.
func TestOracleNotOfAComparisonWithNullSelectsNoRow(t *testing.T) {
	e := newOracleEnv(t)
	var rows []orow
	for _, l := range []ocell{cellInt(-5), cellInt(-1), cellInt(0), cellInt(3), cellNull()} {
		rows = append(rows, orow{Cells: []ocell{cellStr("x"), l}, Spec: 1, Path: "go"})
	}
	e.run(t, &ocase{
		Cols:  []ocol{{Name: "k", FieldID: 1, Kind: kString, Type: "utf8"}, {Name: "l", FieldID: 2, Kind: kInt64, Type: "int64"}},
		Specs: [][]ofield{{{ID: "str_1", IDJSON: `"str_1"`, Transform: "identity", Src: []int{0}}}},
		Rows:  rows,
		Filters: plain("NOT (l < NULL OR l < -1)", "NOT (l IN (0, NULL))", "NOT (l NOT IN (3, NULL))", "NOT (l = NULL) OR l = 3",
			"NOT (NULL <> l AND l > 0)"),
	})
}

// Every int64 resolves exactly, on every surface, as a JSON number.
func TestOracleInt64LimitsResolveExactly(t *testing.T) {
	e := newOracleEnv(t)
	var rows []orow
	for _, path := range []string{"go", "rest", "flight"} {
		for _, v := range []int64{math.MaxInt64, -math.MaxInt64, math.MinInt64, 1<<53 + 1} {
			rows = append(rows, orow{Cells: []ocell{cellInt(v), cellInt(v)}, Spec: 1, Path: path, Values: 1})
		}
	}
	e.run(t, &ocase{
		Cols: []ocol{{Name: "i", FieldID: 1, Kind: kInt64, Type: "int64"}, {Name: "j", FieldID: 2, Kind: kInt64, Type: "int64"}},
		Specs: [][]ofield{{{ID: "i64_1", IDJSON: `"i64_1"`, Transform: "identity", Src: []int{0}},
			{ID: "i32_2", IDJSON: `"i32_2"`, Transform: "bucket", N: 16, Src: []int{1}}}},
		Rows: rows,
		Filters: append(plain("i > 9007199254740993", "j < -9007199254740993", "i = -9223372036854775807", "j BETWEEN 9223372036854775806 AND 9223372036854775807"),
			ofilter{Planner: "i = 9223372036854775807", Duck: "i = 9223372036854775807", Pinned: []int{0}},
			ofilter{Planner: "i IN (-9223372036854775808, 9007199254740993)", Duck: "i IN (-9223372036854775808, 9007199254740993)", Pinned: []int{0}}),
	})
}

// truncate's preimage of a partition value next to an int64 limit ends at
// that limit: the leaf of MaxInt64 (or MinInt64) is planned for it.
func TestOracleTruncateNextToTheInt64LimitsKeepsItsLeaves(t *testing.T) {
	e := newOracleEnv(t)
	var rows []orow
	for _, v := range []int64{math.MaxInt64, math.MaxInt64 - 5, math.MinInt64, math.MinInt64 + 3, 0} {
		rows = append(rows, orow{Cells: []ocell{cellInt(v)}, Spec: 1, Path: "go"})
	}
	e.run(t, &ocase{
		Cols:    []ocol{{Name: "a", FieldID: 1, Kind: kInt64, Type: "int64"}},
		Specs:   [][]ofield{{{ID: "i64_1", IDJSON: `"i64_1"`, Transform: "truncate", N: 10, Src: []int{0}}}},
		Rows:    rows,
		Filters: plain("a = 9223372036854775807", "a = -9223372036854775808", "a > 0", "a < 0", "a >= 9223372036854775800"),
	})
}

// A timestamp is any int64 of microseconds: one past year 9999 (given
// as a number) resolves and plans like any other.
func TestOracleTimestampsPastYear9999Resolve(t *testing.T) {
	e := newOracleEnv(t)
	far := "253402300800000000" // 10000-01-01T00:00:00Z
	cell := ocell{V: oint(253402300800000000), JSON: far, Duck: "make_timestamp(CAST('" + far + "' AS BIGINT))::TIMESTAMPTZ"}
	e.run(t, &ocase{
		Cols: []ocol{{Name: "ts", FieldID: 1, Kind: kTimestamp, Type: "timestamp[us, tz=UTC]"}},
		Specs: [][]ofield{{{ID: "ts_1", IDJSON: `"ts_1"`, Transform: "identity", Src: []int{0}},
			{ID: "dt_2", IDJSON: `"dt_2"`, Transform: "day", Src: []int{0}}}},
		Rows:    []orow{{Cells: []ocell{cell}, Spec: 1, Path: "go", Values: 1}},
		Filters: plain("ts > TIMESTAMP '9999-12-31 23:59:59.999999'", "ts IS NOT NULL"),
	})
}

// The reference transforms hash as Iceberg's spec says (its test vectors).
func TestOracleReferenceMatchesIcebergHashVectors(t *testing.T) {
	for _, c := range []struct {
		k    okind
		v    oval
		want int32
	}{
		{kInt64, oint(34), 2017239379},
		{kString, ostr("iceberg"), 1210000089},
		{kDate, dayOf("2017-11-16"), -653330422},
		{kTimestamp, oint(instant("2017-11-16 22:31:08")), -2047944441},
	} {
		if got := int32(murmur3(icebergBytes(c.k, c.v, nil))); got != c.want {
			t.Errorf("hash of %s = %d, want %d", canon(c.k, c.v), got, c.want)
		}
	}
}

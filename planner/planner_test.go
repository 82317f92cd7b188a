package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// penv is a planner over a real Redis and a file:// root.
type penv struct {
	t   *testing.T
	env *nstest.Env
	svc *namespace.Service
	p   *Planner
}

func newPenv(t *testing.T, mod ...func(*namespace.Config)) *penv {
	e := nstest.New(t)
	svc := e.Open(t, mod...)
	return &penv{t: t, env: e, svc: svc, p: New(svc)}
}

var ctx = context.Background()

// must is for the test's own goroutine: an error fails the test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func (e *penv) create(id string, spec string) *Table {
	e.t.Helper()
	var sp Spec
	if err := jsonUnmarshal(`{"fields":`+spec+`}`, &sp); err != nil {
		e.t.Fatal(err)
	}
	return must(e.p.CreateTable(ctx, CreateTableRequest{ID: api.ID{id}, Schema: []byte(testSchema), Spec: sp}))
}

// stage uploads a staging manifest for version v of a leaf and returns
// its path.
func (e *penv) stage(leaf api.ID, v int64, content string) string {
	e.t.Helper()
	r, ok := e.svc.Table().Object(manifesttable.TypeTable, leaf.String())
	if !ok {
		e.t.Fatalf("leaf %s has no row", leaf)
	}
	key := lancemanifest.StagingPath(lancemanifest.Dir(r.Location).Manifest(lancemanifest.V2, uint64(v)))
	if err := e.env.Objects.Put(ctx, key, []byte(content)); err != nil {
		e.t.Fatal(err)
	}
	return key
}

func (e *penv) plan(table, filter string) map[string]PlannedLeaf {
	e.t.Helper()
	pl := must(e.p.PlanScan(ctx, api.ID{table}, filter))
	out := map[string]PlannedLeaf{}
	for _, l := range pl.Leaves {
		out[l.ID] = l
	}
	return out
}

func TestPlanScanOverRealPartitions(t *testing.T) {
	e := newPenv(t)
	e.create("events", `[{"source_ids":[4],"transform":{"type":"day"}},{"source_ids":[2],"transform":{"type":"identity"}}]`)
	id := api.ID{"events"}
	leaves := map[string]string{}
	for _, r := range []map[string]any{
		{"ts": "2024-03-01T10:00:00Z", "s": "us"},
		{"ts": "2024-03-01T23:00:00Z", "s": "eu"},
		{"ts": "2024-03-02T01:00:00Z", "s": "us"},
		{"ts": "2024-03-05T00:00:00Z", "s": nil},
	} {
		l := must(e.p.ResolveRow(ctx, id, r))
		leaves[fmt.Sprint(r["ts"], "/", r["s"])] = l.ID.String()
		if !l.Created || !strings.HasPrefix(l.ID.String(), "events$v1$") || l.ID.Name() != LeafName {
			t.Fatalf("leaf %+v", l)
		}
	}
	// The same row again resolves to the same leaf, without creating it.
	again := must(e.p.ResolveRow(ctx, id, map[string]any{"ts": "2024-03-01 11:30:00", "s": "us"}))
	if again.Created || again.ID.String() != leaves["2024-03-01T10:00:00Z/us"] {
		t.Fatalf("resolving again gave %+v, want the existing leaf %s", again, leaves["2024-03-01T10:00:00Z/us"])
	}
	// Give one leaf two versions.
	usDay1 := api.ID(strings.Split(leaves["2024-03-01T10:00:00Z/us"], "$"))
	for v := int64(1); v <= 2; v++ {
		must(e.svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: usDay1, Version: v, ManifestPath: e.stage(usDay1, v, fmt.Sprint("v", v))}))
	}
	cases := []struct {
		filter string
		want   []string
	}{
		{"", []string{"2024-03-01T10:00:00Z/us", "2024-03-01T23:00:00Z/eu", "2024-03-02T01:00:00Z/us", "2024-03-05T00:00:00Z/<nil>"}},
		{"s = 'us'", []string{"2024-03-01T10:00:00Z/us", "2024-03-02T01:00:00Z/us"}},
		{"ts < TIMESTAMP '2024-03-02 00:00:00' AND s <> 'eu'", []string{"2024-03-01T10:00:00Z/us"}},
		{"s IS NULL OR ts >= '2024-03-02'", []string{"2024-03-02T01:00:00Z/us", "2024-03-05T00:00:00Z/<nil>"}},
		{"i = 5", []string{"2024-03-01T10:00:00Z/us", "2024-03-01T23:00:00Z/eu", "2024-03-02T01:00:00Z/us", "2024-03-05T00:00:00Z/<nil>"}},
		{"FALSE", nil},
	}
	for _, c := range cases {
		got := e.plan("events", c.filter)
		var want []string
		for _, k := range c.want {
			want = append(want, leaves[k])
		}
		var have []string
		for k := range got {
			have = append(have, k)
		}
		sort.Strings(want)
		sort.Strings(have)
		if fmt.Sprint(have) != fmt.Sprint(want) {
			t.Errorf("%q planned %v, want %v", c.filter, have, want)
		}
	}
	l := e.plan("events", "s = 'us' AND i > 3")[usDay1.String()]
	if l.Version != 2 || l.Residual != "i > 3" || l.SpecID != 1 || !strings.HasPrefix(l.Location, "file://") {
		t.Errorf("leaf %+v: want version 2 (the head), residual i > 3, spec 1, a file:// location", l)
	}
	// The Arrow answer.
	pl := must(e.p.PlanScan(ctx, id, "s = 'us'"))
	recs := pl.Records(memory.DefaultAllocator)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if len(recs) != 1 || recs[0].NumRows() != 2 {
		t.Fatalf("records %v", recs)
	}
	rec := recs[0]
	names := []string{}
	for _, f := range rec.Schema().Fields() {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "table_id,location,read_version,partition_spec_id,partition_field_1,partition_field_2,residual_filter" {
		t.Fatalf("columns %s", got)
	}
	if s, ok := rec.Schema().Metadata().GetValue(SeqMetadataKey); !ok || s == "0" {
		t.Errorf("catalog sequence metadata %q", s)
	}
	if v := rec.Column(5).(*array.String).Value(0); v != "us" {
		t.Errorf("partition_field_2 = %q", v)
	}
	// Bad filters and tables are clear errors.
	_, err := e.p.PlanScan(ctx, id, "nope = 1")
	if nserror.CodeOf(err) != nserror.InvalidInput || !strings.Contains(err.Error(), "position 1") {
		t.Errorf("unknown column: %v", err)
	}
	_, err = e.p.PlanScan(ctx, api.ID{"missing"}, "")
	if nserror.CodeOf(err) != nserror.NamespaceNotFound {
		t.Errorf("missing table: %v", err)
	}
}

func TestSpecEvolutionPlansRowsOfBothSpecs(t *testing.T) {
	e := newPenv(t)
	e.create("t", `[{"source_ids":[3],"transform":{"type":"month"}}]`)
	id := api.ID{"t"}
	v1 := must(e.p.ResolveRow(ctx, id, map[string]any{"d": "2024-01-15", "i": 3}))
	// Reusing field id 1 for another transform is refused.
	var bad Spec
	_ = jsonUnmarshal(`{"fields":[{"field_id":"1","source_ids":[3],"transform":{"type":"year"}}]}`, &bad)
	if _, err := e.p.EvolveSpec(ctx, id, bad); nserror.CodeOf(err) != nserror.InvalidInput {
		t.Fatalf("reusing a field id with another transform: %v", err)
	}
	var next Spec
	_ = jsonUnmarshal(`{"fields":[{"source_ids":[3],"transform":{"type":"month"}},{"source_ids":[1],"transform":{"type":"bucket","num_buckets":4}}]}`, &next)
	tbl := must(e.p.EvolveSpec(ctx, id, next))
	if tbl.Current().ID != 2 || tbl.Current().Fields[0].FieldID != "1" || tbl.Current().Fields[1].FieldID != "2" {
		t.Fatalf("spec v2 %+v: want the month field to keep id 1 and the bucket field to get 2", tbl.Current())
	}
	v2 := must(e.p.ResolveRow(ctx, id, map[string]any{"d": "2024-01-20", "i": 7}))
	if v2.SpecID != 2 || !strings.HasPrefix(v2.ID.String(), "t$v2$") {
		t.Fatalf("new rows go to spec 2: %+v", v2)
	}
	got := e.plan("t", "d = DATE '2024-01-20' AND i = 7")
	if _, ok := got[v1.ID.String()]; !ok {
		t.Errorf("the v1 leaf of January is pruned for a January day")
	}
	if _, ok := got[v2.ID.String()]; !ok {
		t.Errorf("the v2 leaf of (January, bucket(7)) is pruned")
	}
	other := must(e.p.ResolveRow(ctx, id, map[string]any{"d": "2024-01-20", "i": otherBucket(t, 7, 4)}))
	if _, ok := e.plan("t", "d = DATE '2024-01-20' AND i = 7")[other.ID.String()]; ok {
		t.Errorf("a v2 leaf of another bucket is kept for i = 7")
	}
	if len(e.plan("t", "d >= '2024-02-01'")) != 0 {
		t.Errorf("February planned leaves of January")
	}
	// Two evolutions at once: never both to the same spec version (one
	// gets ConcurrentModification, unless the second began after the
	// first ended and built on it).
	var wg sync.WaitGroup
	errs := make([]error, 2)
	specs := make([]int32, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sp Spec
			_ = jsonUnmarshal(`{"fields":[{"source_ids":[2],"transform":{"type":"truncate","width":2}}]}`, &sp)
			tb, err := New(e.svc).EvolveSpec(ctx, id, sp)
			if err == nil {
				specs[i] = tb.Current().ID
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case nserror.CodeOf(err) != nserror.ConcurrentModification:
			t.Errorf("losing evolution: %v", err)
		}
	}
	if wins == 0 || wins == 2 && specs[0] == specs[1] {
		t.Errorf("%d concurrent evolutions won, to specs %v (%v)", wins, specs, errs)
	}
}

func otherBucket(t *testing.T, v int64, n int) int64 {
	for w := v + 1; ; w++ {
		if bucketOf(hashValue(Int(w)), n) != bucketOf(hashValue(Int(v)), n) {
			return w
		}
	}
}

func TestConcurrentResolveOrCreateMakesOneLeaf(t *testing.T) {
	e := newPenv(t)
	e.create("t", `[{"source_ids":[2],"transform":{"type":"identity"}},{"source_ids":[1],"transform":{"type":"truncate","width":10}}]`)
	second := New(e.env.Open(t))
	var wg sync.WaitGroup
	ids := make([]string, 12)
	errs := make([]error, 12)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := e.p
			if i%2 == 1 {
				p = second
			}
			l, err := p.ResolveOrCreate(ctx, api.ID{"t"}, map[string]any{"1": "x", "2": 20})
			if err == nil {
				ids[i] = l.ID.String()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		if ids[i] != ids[0] {
			t.Fatalf("callers got leaves %v", ids)
		}
	}
	if n := len(e.plan("t", "")); n != 1 {
		t.Fatalf("%d leaves after 12 racing creators, want 1", n)
	}
	if _, err := e.p.ResolveOrCreate(ctx, api.ID{"t"}, map[string]any{"9": 1}); nserror.CodeOf(err) != nserror.InvalidInput {
		t.Errorf("an unknown field: %v", err)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// Every int64 round-trips: rows and partition values sent as JSON (as
// REST and Flight bodies) resolve exactly at the int64 limits, as numbers
// or as decimal strings; a value too wide for its column is refused; the
// plan finds each leaf by its exact value and answers it exactly.
func TestInt64ValuesRoundTripExactly(t *testing.T) {
	e := newPenv(t)
	e.create("big", `[{"source_ids":[1],"transform":{"type":"identity"}},{"source_ids":[7],"transform":{"type":"identity"}}]`)
	resolve, _ := OpByName("ResolvePartition")
	plan, _ := OpByName("PlanScan")
	leafOf := func(body string) (*Leaf, error) {
		l, err := resolve.Run(ctx, e.p, []byte(body), nil)
		if err != nil {
			return nil, err
		}
		return l.(*Leaf), nil
	}
	leaves := map[string]string{}
	for _, c := range []struct{ body, i string }{
		{`{"id":["big"],"row":{"i":9223372036854775807,"n":2147483647}}`, "9223372036854775807"},
		{`{"id":["big"],"row":{"i":-9223372036854775808,"n":-2147483648}}`, "-9223372036854775808"},
		{`{"id":["big"],"row":{"i":"9223372036854775806","n":0}}`, "9223372036854775806"},
		{`{"id":["big"],"row":{"i":9007199254740993,"n":0}}`, "9007199254740993"},
		{`{"id":["big"],"values":{"1":9007199254740995,"2":1}}`, "9007199254740995"},
	} {
		l, err := leafOf(c.body)
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if got := fmt.Sprint(l.Values["1"]); got != c.i {
			t.Fatalf("%s resolved to partition value %s, want %s", c.body, got, c.i)
		}
		leaves[c.i] = l.ID.String()
	}
	if len(leaves) != 5 {
		t.Fatalf("leaves %v: neighbours of 2^53 collapsed", leaves)
	}
	for _, body := range []string{
		`{"id":["big"],"row":{"i":1,"n":2147483648}}`,
		`{"id":["big"],"values":{"1":1,"2":-2147483649}}`,
		`{"id":["big"],"row":{"i":9223372036854775808}}`,
		`{"id":["big"],"row":{"i":1.5}}`,
		`{"id":["big"],"row":{"i":"12x"}}`,
	} {
		if _, err := leafOf(body); nserror.CodeOf(err) != nserror.InvalidInput {
			t.Errorf("%s: %v, want InvalidInput", body, err)
		}
	}
	for i, id := range leaves {
		out, err := plan.Run(ctx, e.p, []byte(`{"id":["big"],"filter":"i = `+i+`"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		pl := out.(*Plan)
		if len(pl.Leaves) != 1 || pl.Leaves[0].ID != id {
			t.Fatalf("i = %s planned %+v, want only %s", i, pl.Leaves, id)
		}
		b, err := json.Marshal(pl)
		if err != nil || !strings.Contains(string(b), `"partition_field_1":`+i) {
			t.Fatalf("plan JSON %s (%v) does not carry %s exactly", b, err, i)
		}
	}
}

// Plans walk a cached copy of each spec's partition tree: a leaf created,
// a leaf dropped or a version committed after a plan shows in the next
// plan (the tree is rebuilt when anything below the spec's root changed;
// versions are read when planned).
func TestAPlanSeesEveryChangeAfterThePlanBefore(t *testing.T) {
	e := newPenv(t)
	e.create("ev", `[{"source_ids":[2],"transform":{"type":"identity"}}]`)
	id := api.ID{"ev"}
	us := must(e.p.ResolveRow(ctx, id, map[string]any{"s": "us"})).ID
	if got := e.plan("ev", ""); len(got) != 1 || got[us.String()].Version != 0 {
		t.Fatalf("first plan: %v", got)
	}
	eu := must(e.p.ResolveRow(ctx, id, map[string]any{"s": "eu"})).ID
	if got := e.plan("ev", ""); len(got) != 2 {
		t.Fatalf("after a new leaf: %v, want us and eu", got)
	}
	must(e.svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: us, Version: 1, ManifestPath: e.stage(us, 1, "v1")}))
	if got := e.plan("ev", "s = 'us'")[us.String()]; got.Version != 1 {
		t.Fatalf("after a commit: %+v, want version 1", got)
	}
	must(e.svc.DropTable(ctx, api.DropTableRequest{ID: eu}))
	if got := e.plan("ev", ""); len(got) != 1 || got[us.String()].Version != 1 {
		t.Fatalf("after dropping eu's leaf: %v, want us alone", got)
	}
}

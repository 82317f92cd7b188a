package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/planner"
)

// planScenario measures plan_scan on a partitioned table of 10k and 100k
// leaves (day(ts) × bucket(user_id, 100)), with a selective filter (1 %
// of the days) and a broad one (75 %), beside the same question asked the
// partitioning spec's own way — SQL over __manifest's partition columns —
// and beside plan_scan called from SQL, all in the same run.
func planScenario() Scenario {
	return Scenario{
		Name:        "plan",
		Description: "plan_scan at 10k and 100k leaves, selective (1 %) and broad (75 %) filters, vs SQL over __manifest and vs SELECT FROM plan_scan(…)",
		Run:         runPlan,
		Steps:       func(Config) int { return 18 },
	}
}

const planBuckets = 100

func runPlan(ctx context.Context, cfg Config, rep *Report) error {
	for _, leaves := range []int{10_000, 100_000} {
		if err := planAt(ctx, cfg, rep, leaves); err != nil {
			return err
		}
	}
	return nil
}

func planAt(ctx context.Context, cfg Config, rep *Report, leaves int) error {
	svc, closeAll, err := openSQLCatalog(ctx, cfg, "flightns-bench-plan-", 64)
	if err != nil {
		return err
	}
	defer closeAll()
	p := planner.New(svc)
	if err := p.RegisterSQL(ctx); err != nil {
		return err
	}
	var spec planner.Spec
	_ = json.Unmarshal([]byte(`{"fields":[{"source_ids":[1],"transform":{"type":"day"}},{"source_ids":[2],"transform":{"type":"bucket","num_buckets":100}}]}`), &spec)
	schema := `{"fields":[{"name":"ts","nullable":true,"type":{"type":"timestamp"},"metadata":{"lance:field_id":"1"}},` +
		`{"name":"user_id","nullable":true,"type":{"type":"int64"},"metadata":{"lance:field_id":"2"}}]}`
	if _, err := p.CreateTable(ctx, planner.CreateTableRequest{ID: api.ID{"events"}, Schema: json.RawMessage(schema), Spec: spec}); err != nil {
		return err
	}
	// The partitions go straight into __manifest in large appends (the
	// planner reads __manifest; creating 100k leaves one by one would
	// measure the catalog's mutation rate, not planning).
	days := leaves / planBuckets
	first := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	var batch []manifesttable.Change
	flush := func() error { return appendDurable(ctx, svc, &batch) }
	for d := 0; d < days; d++ {
		day := arrow.Date32(first.AddDate(0, 0, d).Unix() / 86400)
		dayNS := fmt.Sprintf("events$v1$d%05d", d)
		batch = append(batch, manifesttable.Change{Row: manifesttable.Row{ObjectType: manifesttable.TypeNamespace, ObjectID: dayNS,
			Metadata: "{}", HasSpecID: true, SpecID: 1, Extra: map[string]any{"partition_field_1": day}}})
		for b := 0; b < planBuckets; b++ {
			vals := map[string]any{"partition_field_1": day, "partition_field_2": int32(b)}
			ns := fmt.Sprintf("%s$b%03d", dayNS, b)
			batch = append(batch,
				manifesttable.Change{Row: manifesttable.Row{ObjectType: manifesttable.TypeNamespace, ObjectID: ns, Metadata: "{}", HasSpecID: true, SpecID: 1, Extra: vals}},
				manifesttable.Change{Row: manifesttable.Row{ObjectType: manifesttable.TypeTable, ObjectID: ns + "$dataset", Location: fmt.Sprintf("p_%d_%d", d, b),
					Metadata: "{}", HasSpecID: true, SpecID: 1, ReadVersion: 1, Extra: vals}})
		}
		if len(batch) >= 20_000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := svc.Table().WaitCaughtUp(ctx); err != nil {
		return err
	}
	load := time.Since(start)
	dayAt := func(d int) string { return first.AddDate(0, 0, d).Format("2006-01-02") }
	at := func(d int, hour int) time.Time { return first.AddDate(0, 0, d).Add(time.Duration(hour) * time.Hour) }
	selDays := max(1, days/100)
	// Each leaf (day d, bucket b) is taken to hold one row, at b×14
	// minutes into its day: precision counts the returned leaves whose row
	// matches, and every leaf whose row matches must be returned.
	rowOf := func(d, b int) time.Time { return first.AddDate(0, 0, d).Add(time.Duration(b*14) * time.Minute) }
	hourly := days / 3
	filters := []struct {
		name, filter, sqlWhere string
		match                  func(time.Time) bool
	}{
		{"selective", fmt.Sprintf("ts >= TIMESTAMP '%s' AND ts < TIMESTAMP '%s'", dayAt(days/2), dayAt(days/2+selDays)),
			fmt.Sprintf("partition_field_1 >= DATE '%s' AND partition_field_1 < DATE '%s'", dayAt(days/2), dayAt(days/2+selDays)),
			func(ts time.Time) bool { return !ts.Before(at(days/2, 0)) && ts.Before(at(days/2+selDays, 0)) }},
		{"broad", fmt.Sprintf("ts >= TIMESTAMP '%s'", dayAt(days/4)), fmt.Sprintf("partition_field_1 >= DATE '%s'", dayAt(days/4)),
			func(ts time.Time) bool { return !ts.Before(at(days/4, 0)) }},
		{"hourly", fmt.Sprintf("ts >= TIMESTAMP '%s 06:00:00' AND ts < TIMESTAMP '%s 18:00:00'", dayAt(hourly), dayAt(hourly+2)),
			fmt.Sprintf("partition_field_1 >= DATE '%s' AND partition_field_1 <= DATE '%s'", dayAt(hourly), dayAt(hourly+2)),
			func(ts time.Time) bool { return !ts.Before(at(hourly, 6)) && ts.Before(at(hourly+2, 18)) }},
	}
	size := fmt.Sprintf("%dk leaves", leaves/1000)
	for _, f := range filters {
		var got int
		var returned []planner.PlannedLeaf
		var planErr error
		reps := 200
		if f.name == "broad" && leaves >= 100_000 {
			reps = 30
		}
		plan := measureN(reps, func() error {
			pl, err := p.PlanScan(ctx, api.ID{"events"}, f.filter)
			if err == nil {
				got, returned = len(pl.Leaves), pl.Leaves
			} else {
				planErr = err
			}
			return err
		})
		if planErr != nil {
			return fmt.Errorf("plan %s: %w", f.name, planErr)
		}
		precision, err := planPrecision(returned, days, f.match, rowOf)
		if err != nil {
			return fmt.Errorf("plan %s: %w", f.name, err)
		}
		plan.Precision = precision
		sqlQ := "SELECT object_id, location, read_version, partition_spec_id, partition_field_1, partition_field_2 FROM __manifest " +
			"WHERE object_type = 'table' AND starts_with(object_id, 'events$v1$') AND " + f.sqlWhere
		viaSQL := measureN(reps, func() error { return drain(ctx, svc.Table(), sqlQ) })
		fn := measureN(reps, func() error {
			return drain(ctx, svc.Table(), "SELECT * FROM plan_scan('events', $1)", f.filter)
		})
		plan.Scenario, plan.Note = "plan:"+f.name+":plan_scan",
			fmt.Sprintf("%s, %d leaves planned, precision %.2f; loaded in %.1fs; target p50 <= 10 ms at 100k leaves for the selective filter", size, got, precision, load.Seconds())
		viaSQL.Scenario, viaSQL.Note = "plan:"+f.name+":sql-over-manifest", size+": the partitioning spec's approach, the same leaves by SQL over partition columns"
		fn.Scenario, fn.Note = "plan:"+f.name+":sql-plan_scan", size+": SELECT * FROM plan_scan(…) through the SQL engine"
		if viaSQL.P50Ms > 0 {
			plan.Ceiling, plan.Ratio = "plan:"+f.name+":sql-over-manifest ("+size+")", viaSQL.P50Ms/plan.P50Ms
		}
		for _, r := range []Result{plan, viaSQL, fn} {
			r.Backend = "file"
			rep.Results = append(rep.Results, r)
			cfg.progress(r)
		}
	}
	return nil
}

// planPrecision is the share of the returned leaves whose row (rowOf)
// matches; a leaf whose row matches and that the plan left out is an
// unsound plan, an error.
func planPrecision(returned []planner.PlannedLeaf, days int, match func(time.Time) bool, rowOf func(d, b int) time.Time) (float64, error) {
	in := map[string]bool{}
	hits := 0
	for _, l := range returned {
		in[l.ID] = true
		var d, b int
		if _, err := fmt.Sscanf(l.ID, "events$v1$d%05d$b%03d$dataset", &d, &b); err != nil {
			return 0, fmt.Errorf("leaf %q: %w", l.ID, err)
		}
		if match(rowOf(d, b)) {
			hits++
		}
	}
	for d := 0; d < days; d++ {
		for b := 0; b < planBuckets; b++ {
			if id := fmt.Sprintf("events$v1$d%05d$b%03d$dataset", d, b); match(rowOf(d, b)) && !in[id] {
				return 0, fmt.Errorf("leaf %s holds a matching row and was not planned", id)
			}
		}
	}
	if len(returned) == 0 {
		return 1, nil
	}
	return float64(hits) / float64(len(returned)), nil
}

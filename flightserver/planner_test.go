package flightserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/planner"
)

const plannerSchema = `{"fields":[
 {"name":"day","nullable":true,"type":{"type":"date32"},"metadata":{"lance:field_id":"1"}},
 {"name":"country","nullable":true,"type":{"type":"utf8"},"metadata":{"lance:field_id":"2"}}]}`

// readPlan streams a plan's FlightInfo with DoGet and returns its table ids
// and residual filters.
func readPlan(t *testing.T, ctx context.Context, c flight.Client, info *flight.FlightInfo) (ids, residuals []string) {
	t.Helper()
	stream, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	for rd.Next() {
		rec := rd.RecordBatch()
		idc := rec.Column(rec.Schema().FieldIndices("table_id")[0]).(*array.String)
		rc := rec.Column(rec.Schema().FieldIndices("residual_filter")[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			ids, residuals = append(ids, idc.Value(i)), append(residuals, rc.Value(i))
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	return ids, residuals
}

func TestPartitionedTablesOverFlightActions(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := e.client().Client
	create := map[string]any{"id": []string{"ev"}, "schema": json.RawMessage(plannerSchema),
		"spec": map[string]any{"fields": []any{
			map[string]any{"source_ids": []int{1}, "transform": map[string]any{"type": "month"}},
			map[string]any{"source_ids": []int{2}, "transform": map[string]any{"type": "identity"}}}}}
	if err := doAction(ctx, c, "CreatePartitionedTable", create, nil); err != nil {
		t.Fatal(err)
	}
	var leaf struct {
		ID []string `json:"id"`
	}
	for _, row := range []map[string]any{{"day": "2024-05-02", "country": "pt"}, {"day": "2024-06-02", "country": "pt"}, {"day": "2024-05-09", "country": "es"}} {
		if err := doAction(ctx, c, "ResolvePartition", map[string]any{"id": []string{"ev"}, "row": row}, &leaf); err != nil {
			t.Fatal(err)
		}
	}
	// The action answers with a FlightInfo; DoGet streams the plan.
	body, _ := json.Marshal(map[string]any{"id": []string{"ev"}, "filter": "day BETWEEN '2024-05-01' AND '2024-05-20' AND country = 'pt'"})
	stream, err := c.DoAction(ctx, &flight.Action{Type: "PlanScan", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	res, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var info flight.FlightInfo
	if err := proto.Unmarshal(res.Body, &info); err != nil {
		t.Fatal(err)
	}
	ids, residuals := readPlan(t, ctx, c, &info)
	if len(ids) != 1 || residuals[0] != "day <= DATE '2024-05-20'" {
		t.Fatalf("plan %v %v: want the one leaf of (May, pt) with the day range left", ids, residuals)
	}
	// A ticket whose plan was fetched plans again.
	if again, _ := readPlan(t, ctx, c, &info); len(again) != 1 || again[0] != ids[0] {
		t.Fatalf("re-fetched plan %v", again)
	}
	// GetFlightInfo on a plan_scan command.
	cmd, _ := json.Marshal(map[string]any{"plan_scan": map[string]any{"id": []string{"ev"}, "filter": "country = 'pt'"}})
	fi, err := c.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := readPlan(t, ctx, c, fi); len(ids) != 2 {
		t.Fatalf("country = 'pt' planned %v, want 2 leaves", ids)
	}
	// Errors keep their Lance codes.
	body, _ = json.Marshal(map[string]any{"id": []string{"ev"}, "filter": "nope = 1"})
	stream, err = c.DoAction(ctx, &flight.Action{Type: "PlanScan", Body: body})
	if err == nil {
		_, err = stream.Recv()
	}
	wantStatus(t, "a bad filter", err, codes.InvalidArgument)
	wantLanceCode(t, "a bad filter", err, nserror.InvalidInput)
	// ListActions names the planner's actions.
	la, err := c.ListActions(ctx, &flight.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for {
		a, err := la.Recv()
		if err != nil {
			break
		}
		found = found || a.Type == "PlanScan"
	}
	if !found {
		t.Error("ListActions lacks PlanScan")
	}
}

func TestPlannerActionsNeedTheirRoles(t *testing.T) {
	e := start(t, withAuth)
	ctx := context.Background()
	c := e.client(flight.NewClientCookieMiddleware()).Client
	rctx, err := c.AuthenticateBasicToken(ctx, "rita", "rita-pw")
	if err != nil {
		t.Fatal(err)
	}
	err = doAction(rctx, c, "CreatePartitionedTable", map[string]any{"id": []string{"x"}, "schema": json.RawMessage(plannerSchema),
		"spec": map[string]any{"fields": []any{map[string]any{"source_ids": []int{2}, "transform": map[string]any{"type": "identity"}}}}}, nil)
	wantStatus(t, "a reader creating a partitioned table", err, codes.PermissionDenied)
	err = doAction(ctx, c, "PlanScan", map[string]any{"id": []string{"x"}}, nil)
	wantStatus(t, "planning without credentials", err, codes.Unauthenticated)
}

func TestPlanScanIsASQLTableFunction(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := e.client()
	create := map[string]any{"id": []string{"ev"}, "schema": json.RawMessage(plannerSchema),
		"spec": map[string]any{"fields": []any{map[string]any{"source_ids": []int{2}, "transform": map[string]any{"type": "identity"}}}}}
	if err := doAction(ctx, c.Client, "CreatePartitionedTable", create, nil); err != nil {
		t.Fatal(err)
	}
	for _, country := range []string{"pt", "es", "fr"} {
		if err := doAction(ctx, c.Client, "ResolvePartition", map[string]any{"id": []string{"ev"}, "values": map[string]any{"1": country}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	info, err := c.Execute(ctx, `SELECT partition_field_1 AS country, residual_filter FROM plan_scan('ev', 'country IN (''pt'', ''fr'') AND day IS NULL') ORDER BY 1`)
	_, recs := fetch(t, ctx, c, info, err)
	if got := column(t, recs, "country"); len(got) != 2 || got[0] != "fr" || got[1] != "pt" {
		t.Fatalf("plan_scan in SQL gave %v", got)
	}
	if got := column(t, recs, "residual_filter"); got[0] != "day IS NULL" {
		t.Fatalf("residual %v", got)
	}
	// A join with __manifest works; errors are the planner's.
	info, err = c.Execute(ctx, `SELECT count(*) AS n FROM plan_scan('ev', '') p JOIN __manifest m ON m.object_id = p.table_id`)
	if _, recs = fetch(t, ctx, c, info, err); column(t, recs, "n")[0] != "3" {
		t.Fatalf("join gave %v", column(t, recs, "n"))
	}
	_, err = c.Execute(ctx, `SELECT * FROM plan_scan('ev', 'nope = 1')`)
	if err == nil || !strings.Contains(err.Error(), `unknown column "nope"`) {
		t.Fatalf("a bad filter in SQL: %v", err)
	}
	// NULL arguments are a clear error, not a crashed server (the patched
	// duckdb-go of third_party/).
	for _, q := range []string{`SELECT * FROM plan_scan(NULL, NULL)`, `SELECT * FROM plan_scan(CAST(NULL AS VARCHAR), 'TRUE')`} {
		if _, err := c.Execute(ctx, q); err == nil || !strings.Contains(err.Error(), "names no partitioned table") && !strings.Contains(err.Error(), "id") {
			t.Errorf("%s: %v", q, err)
		}
	}
	info, err = c.Execute(ctx, `SELECT count(*) AS n FROM plan_scan('ev', NULL)`)
	if _, recs = fetch(t, ctx, c, info, err); column(t, recs, "n")[0] != "3" {
		t.Fatalf("a NULL filter is no filter: %v", column(t, recs, "n"))
	}
}

// plan_scan from the clients users have: ADBC (prepared, with the filter
// bound as a parameter) and Go's database/sql driver.
func TestPlanScanFromADBCAndDatabaseSQL(t *testing.T) {
	e := start(t)
	p := planner.New(e.svc)
	var spec planner.Spec
	_ = json.Unmarshal([]byte(`{"fields":[{"source_ids":[1],"transform":{"type":"year"}}]}`), &spec)
	must(p.CreateTable(context.Background(), planner.CreateTableRequest{ID: api.ID{"y"}, Schema: json.RawMessage(plannerSchema), Spec: spec}))
	for _, d := range []string{"2022-03-01", "2023-03-01", "2024-03-01"} {
		must(p.ResolveRow(context.Background(), api.ID{"y"}, map[string]any{"day": d}))
	}
	cn := e.adbcConn(nil)
	defer func() { _ = cn.Close() }()
	recs, err := adbcQuery(t, cn, "SELECT count(*) AS n FROM plan_scan('y', ?)", record("day >= DATE '2023-01-01'"))
	if err != nil {
		t.Fatal(err)
	}
	if n := recs[0].Column(0).(*array.Int64).Value(0); n != 2 {
		t.Fatalf("ADBC: %d leaves, want 2", n)
	}
	db, err := sql.Open("flightsql", "flightsql://"+e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	var n int64
	if err := db.QueryRowContext(context.Background(), "SELECT count(*) FROM plan_scan('y', 'day < ''2023-01-01''')").Scan(&n); err != nil || n != 1 {
		t.Fatalf("database/sql: %d, %v", n, err)
	}
}

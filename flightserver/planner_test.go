package flightserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/flightns/flightns/nserror"
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

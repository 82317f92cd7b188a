package flightserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/nserror"
)

// tenants are two principals with no catalog-wide role, alice granted
// read on namespace a and bob on namespace b, and an admin.
var tenants = auth.Config{Tokens: []auth.TokenEntry{
	{Token: "alice-token", Name: "alice", Role: "none"},
	{Token: "bob-token", Name: "bob", Role: "none"},
	{Token: "admin-token", Name: "admin", Role: "admin"},
}}

// as is ctx with the bearer token of a principal.
func as(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

// startTenants starts a server of tenants over namespaces a and b, each
// with a table t and a partitioned table pt, and the two grants.
func startTenants(t *testing.T) *fenv {
	t.Helper()
	e := start(t, func(c *Config) {
		a, err := auth.New(tenants)
		if err != nil {
			t.Fatal(err)
		}
		c.Auth = a
	})
	ctx := context.Background()
	c := e.client().Client
	for _, ns := range []string{"a", "b"} {
		must(e.svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{ns}}))
		must(e.svc.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{ns, "t"}}))
		create := map[string]any{"id": []string{ns, "pt"}, "schema": json.RawMessage(plannerSchema),
			"spec": map[string]any{"fields": []any{map[string]any{"source_ids": []int{2}, "transform": map[string]any{"type": "identity"}}}}}
		if err := doAction(as("admin-token"), c, "CreatePartitionedTable", create, nil); err != nil {
			t.Fatal(err)
		}
		if err := doAction(as("admin-token"), c, "ResolvePartition", map[string]any{"id": []string{ns, "pt"}, "row": map[string]any{"country": ns}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for who, ns := range map[string]string{"alice": "a", "bob": "b"} {
		if err := e.svc.Access().Grant(ctx, auth.Grant{Namespace: []string{ns}, Principal: who, Role: auth.Read}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// tableIDs runs the first endpoint of info as the caller of ctx and
// returns the object_id column.
func tableIDs(t *testing.T, ctx context.Context, c *flightsql.Client, info *flight.FlightInfo) ([]string, error) {
	t.Helper()
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	var out []string
	for r.Next() {
		out = append(out, column(t, []arrow.RecordBatch{r.RecordBatch()}, "object_id")...)
	}
	return out, r.Err()
}

// only reports whether ids is not empty and every one of them lies in
// namespace ns.
func only(ids []string, ns string) bool {
	return len(ids) > 0 && !slices.ContainsFunc(ids, func(id string) bool { return !strings.HasPrefix(id, ns+"$") })
}

// readPlanErr streams a plan as the caller of ctx and returns its table
// ids.
func readPlanErr(ctx context.Context, c flight.Client, info *flight.FlightInfo) ([]string, error) {
	stream, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return nil, err
	}
	rd, err := flight.NewRecordReader(stream)
	if err != nil {
		return nil, err
	}
	defer rd.Release()
	var ids []string
	for rd.Next() {
		rec := rd.RecordBatch()
		col := rec.Column(rec.Schema().FieldIndices("table_id")[0]).(*array.String)
		for i := 0; i < col.Len(); i++ {
			ids = append(ids, col.Value(i))
		}
	}
	return ids, rd.Err()
}

// planAction runs the PlanScan action as the caller of ctx.
func planAction(ctx context.Context, c flight.Client, id ...string) (*flight.FlightInfo, error) {
	body, _ := json.Marshal(map[string]any{"id": id})
	s, err := c.DoAction(ctx, &flight.Action{Type: "PlanScan", Body: body})
	if err != nil {
		return nil, err
	}
	res, err := s.Recv()
	if err != nil {
		return nil, err
	}
	var info flight.FlightInfo
	return &info, proto.Unmarshal(res.GetBody(), &info)
}

// A started query's ticket, a prepared statement's handle and a plan's
// ticket are bound to the principal that made them: another principal
// redeems them as if what they name were gone — the statement runs from
// its ticket in the redeemer's grants, the plan is planned again in them,
// the prepared handle is unknown — and what the first principal made
// stays its own (issue 43: bob read alice's rows through her ticket).
func TestATicketIsBoundToThePrincipalThatMadeIt(t *testing.T) {
	e := startTenants(t)
	c := e.client()
	alice, bob := as("alice-token"), as("bob-token")
	const tables = "SELECT object_id FROM tables ORDER BY object_id"

	// A started query.
	info, err := c.Execute(alice, tables)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.srv.started.len(); n != 1 {
		t.Fatalf("%d started queries, want alice's", n)
	}
	if got, err := tableIDs(t, bob, c, info); err != nil || !only(got, "b") {
		t.Fatalf("bob redeems alice's ticket: %v, %v; want b's tables alone", got, err)
	}
	if got, err := tableIDs(t, alice, c, info); err != nil || !only(got, "a") {
		t.Fatalf("alice's own fetch: %v, %v", got, err)
	}
	if n := e.srv.started.len(); n != 0 {
		t.Fatalf("%d started queries after alice's fetch: bob's redemption did not leave hers for her", n)
	}
	// Bob's cancel of alice's query cancels nothing of hers.
	info, err = c.Execute(alice, tables)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelFlightInfo(bob, &flight.CancelFlightInfoRequest{Info: info}); err != nil {
		t.Fatal(err)
	}
	if got, err := tableIDs(t, alice, c, info); err != nil || !only(got, "a") {
		t.Fatalf("alice's query after bob's cancel: %v, %v", got, err)
	}

	// A prepared statement: unknown to bob, exactly as a forged handle.
	prep, err := c.Prepare(alice, tables)
	if err != nil {
		t.Fatal(err)
	}
	unknown := func(handle []byte) string {
		t.Helper()
		cmd, _ := anypb.New(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle})
		b, _ := proto.Marshal(cmd)
		_, err := c.Client.GetFlightInfo(bob, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b})
		st := wantStatus(t, "bob's GetFlightInfo of a prepared handle", err, codes.InvalidArgument)
		wantLanceCode(t, "bob's GetFlightInfo of a prepared handle", err, nserror.InvalidInput)
		return st.Message()
	}
	if theirs, forged := unknown(prep.Handle()), unknown([]byte("0123456789abcdef0123456789abcdef")); theirs != forged {
		t.Fatalf("alice's handle answers bob %q, a forged one %q", theirs, forged)
	}
	// Bob's close leaves it open for alice.
	closeAs := func(ctx context.Context, handle []byte) {
		req, _ := anypb.New(&pb.ActionClosePreparedStatementRequest{PreparedStatementHandle: handle})
		b, _ := proto.Marshal(req)
		if err := rawAction(ctx, c.Client, flightsql.ClosePreparedStatementActionType, b); err != nil {
			t.Fatal(err)
		}
	}
	closeAs(bob, prep.Handle())
	info, err = prep.Execute(alice)
	if err != nil {
		t.Fatalf("alice's prepared statement after bob's close: %v", err)
	}
	if got, err := tableIDs(t, alice, c, info); err != nil || !only(got, "a") {
		t.Fatalf("alice's prepared query: %v, %v", got, err)
	}
	closeAs(alice, prep.Handle())

	// A plan: bob's redemption plans the request again in his grants,
	// which answers what a plan of a table that does not exist answers,
	// and leaves alice's plan for her.
	plan, err := planAction(alice, c.Client, "a", "pt")
	if err != nil {
		t.Fatal(err)
	}
	missing, err := planAction(as("admin-token"), c.Client, "a", "pt")
	if err != nil {
		t.Fatal(err)
	}
	missing.Endpoint[0].Ticket.Ticket = []byte(strings.Replace(string(missing.Endpoint[0].Ticket.Ticket), `"pt"`, `"nope"`, 1))
	_, errTheirs := readPlanErr(bob, c.Client, plan)
	_, errMissing := readPlanErr(bob, c.Client, missing)
	if errTheirs == nil || status.Code(errTheirs) != status.Code(errMissing) ||
		strings.ReplaceAll(status.Convert(errTheirs).Message(), "a$pt", "X") != strings.ReplaceAll(status.Convert(errMissing).Message(), "a$nope", "X") {
		t.Fatalf("bob redeems alice's plan: %v; a plan of a missing table: %v", errTheirs, errMissing)
	}
	if n := e.srv.plans.len(); n != 2 {
		t.Fatalf("%d plans parked after bob's redemptions, want alice's and the admin's", n)
	}
	if ids, err := readPlanErr(alice, c.Client, plan); err != nil || len(ids) != 1 {
		t.Fatalf("alice's plan: %v, %v", ids, err)
	}
}

// One principal cannot fill a pool every principal needs (issue 43: 1,030
// PlanScan actions of one reader blocked every tenant's plans for a
// minute): past its share (a quarter of the pool by default) its plans
// and prepared statements are refused with Throttling, its GetFlightInfo
// only plans, and another principal still gets all three.
func TestOnePrincipalCannotFillThePoolsOfAll(t *testing.T) {
	e := startWithSlots(t, 16, withAuth, func(c *Config) {
		c.Limits.MaxUnfetchedResults = 8
		c.Limits.MaxPreparedStatements = 8
	})
	c := e.client()
	reader, writer := as("read-token"), as("write-token")
	if err := doAction(as("write-token"), c.Client, "CreatePartitionedTable", map[string]any{"id": []string{"ev"}, "schema": json.RawMessage(plannerSchema),
		"spec": map[string]any{"fields": []any{map[string]any{"source_ids": []int{2}, "transform": map[string]any{"type": "identity"}}}}}, nil); err != nil {
		t.Fatal(err)
	}
	throttled := func(what string, err error) {
		t.Helper()
		st := wantStatus(t, what, err, codes.ResourceExhausted)
		wantLanceCode(t, what, err, nserror.Throttling)
		if !strings.Contains(st.Message(), "per principal") {
			t.Fatalf("%s: %q does not say the limit is the principal's", what, st.Message())
		}
	}

	// Plans: a share of 2 of 8.
	for i := range 2 {
		if _, err := planAction(reader, c.Client, "ev"); err != nil {
			t.Fatalf("the reader's plan %d: %v", i+1, err)
		}
	}
	_, err := planAction(reader, c.Client, "ev")
	throttled("the reader's third plan", err)
	info, err := planAction(writer, c.Client, "ev")
	if err != nil {
		t.Fatalf("the writer's plan while the reader's share is full: %v", err)
	}
	if _, err := readPlanErr(writer, c.Client, info); err != nil {
		t.Fatal(err)
	}

	// Prepared statements: a share of 2 of 8.
	for i := range 2 {
		if _, err := c.Prepare(reader, "SELECT 1"); err != nil {
			t.Fatalf("the reader's prepared statement %d: %v", i+1, err)
		}
	}
	_, err = c.Prepare(reader, "SELECT 1")
	throttled("the reader's third prepared statement", err)
	if _, err := c.Prepare(writer, "SELECT 1"); err != nil {
		t.Fatalf("the writer's prepared statement while the reader's share is full: %v", err)
	}

	// Started queries: 16 slots start 4, a share of 1; past it the
	// reader's GetFlightInfo only plans, and its DoGet runs the query.
	var unfetched []*flight.FlightInfo
	for range 3 {
		info, err := c.Execute(reader, "SELECT 1 AS n")
		if err != nil {
			t.Fatal(err)
		}
		unfetched = append(unfetched, info)
	}
	if n := e.srv.started.len(); n != 1 {
		t.Fatalf("%d started queries wait after three of the reader's, want its share of 1", n)
	}
	info, err = c.Execute(writer, "SELECT 2 AS n")
	if err != nil {
		t.Fatal(err)
	}
	if n := e.srv.started.len(); n != 2 {
		t.Fatalf("%d started queries wait, want the writer's beside the reader's", n)
	}
	_, recs := fetch(t, writer, c, info, nil)
	if got := column(t, recs, "n"); !slices.Equal(got, []string{"2"}) {
		t.Fatalf("the writer's query: %v", got)
	}
	for _, info := range unfetched {
		_, recs := fetch(t, reader, c, info, nil)
		if got := column(t, recs, "n"); !slices.Equal(got, []string{"1"}) {
			t.Fatalf("the reader's query: %v", got)
		}
	}
}

// With authentication off every caller is the one anonymous principal:
// its share is the whole pool.
func TestWithoutAuthenticationTheShareIsThePool(t *testing.T) {
	e := start(t, func(c *Config) { c.Limits.MaxUnfetchedResults = 8 })
	c := e.client()
	ctx := context.Background()
	if err := doAction(ctx, c.Client, "CreatePartitionedTable", map[string]any{"id": []string{"ev"}, "schema": json.RawMessage(plannerSchema),
		"spec": map[string]any{"fields": []any{map[string]any{"source_ids": []int{2}, "transform": map[string]any{"type": "identity"}}}}}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if _, err := planAction(ctx, c.Client, "ev"); err != nil {
			t.Fatalf("plan %d of 8: %v", i+1, err)
		}
	}
	_, err := planAction(ctx, c.Client, "ev")
	st := wantStatus(t, "the ninth plan", err, codes.ResourceExhausted)
	if strings.Contains(st.Message(), "per principal") {
		t.Fatalf("the ninth plan: %q, want the server's limit", st.Message())
	}
}

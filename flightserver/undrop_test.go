package flightserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/nserror"
)

// A table dropped within the retention comes back by the UndropTable
// action with its versions, and SQL's dropped view shows it meanwhile.
func TestUndropTableAction(t *testing.T) {
	env := nstest.New(t)
	e := serve(t, env, env.Open(t, func(c *namespace.Config) { c.DropRetention = time.Hour }))
	c := e.client()
	ctx := context.Background()
	fc := c.Client
	if err := doAction(ctx, fc, "CreateNamespace", map[string]any{"id": []string{"lake"}}, nil); err != nil {
		t.Fatal(err)
	}
	var declared api.DeclareTableResponse
	if err := doAction(ctx, fc, "DeclareTable", api.DeclareTableRequest{ID: api.ID{"lake", "events"}}, &declared); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 2; v++ {
		if err := doAction(ctx, fc, "CreateTableVersion", api.CreateTableVersionRequest{
			ID: api.ID{"lake", "events"}, Version: int64(v), ManifestPath: e.stage(declared.Location, uint64(v))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := doAction(ctx, fc, "DropTable", map[string]any{"id": []string{"lake", "events"}}, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && len(got) == 0; time.Sleep(50 * time.Millisecond) {
		info, err := c.Execute(ctx, "SELECT object_id FROM dropped")
		_, recs := fetch(t, ctx, c, info, err)
		got = column(t, recs, "object_id")
	}
	if !slices.Equal(got, []string{"lake$events"}) {
		t.Fatalf("dropped view: %v", got)
	}
	err := doAction(ctx, fc, "UndropTable", map[string]any{"id": []string{"lake", "events"}, "drop_id": "not-a-drop"}, nil)
	wantLanceCode(t, "a malformed drop id", err, nserror.InvalidInput)
	var undone api.UndropResponse
	if err := doAction(ctx, fc, "UndropTable", map[string]any{"id": []string{"lake", "events"}}, &undone); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(undone.Tables, []string{"lake$events"}) || undone.DropID == "" {
		t.Fatalf("UndropTable reply %+v", undone)
	}
	var desc api.DescribeTableResponse
	if err := doAction(ctx, fc, "DescribeTable", map[string]any{"id": []string{"lake", "events"}}, &desc); err != nil {
		t.Fatal(err)
	}
	if desc.Version == nil || *desc.Version != 2 {
		t.Fatalf("DescribeTable after undrop %+v", desc)
	}
	err = doAction(ctx, fc, "UndropTable", map[string]any{"id": []string{"lake", "events"}}, nil)
	wantStatus(t, "undoing it again", err, codes.NotFound)
}

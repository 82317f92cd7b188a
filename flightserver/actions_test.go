package flightserver

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

func TestListActionsNamesEveryOperationWithADescription(t *testing.T) {
	e := start(t)
	c := e.client()
	stream, err := c.Client.ListActions(context.Background(), &flight.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for {
		a, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[a.GetType()] = a.GetDescription()
	}
	for _, want := range []string{
		"CreateNamespace", "ListNamespaces", "DescribeNamespace", "NamespaceExists", "DropNamespace",
		"DeclareTable", "RegisterTable", "DescribeTable", "TableExists", "ListTables", "ListAllTables",
		"DeregisterTable", "DropTable", "RenameTable", "CreateTableVersion", "DescribeTableVersion",
		"ListTableVersions", "BatchDeleteTableVersions", "BatchCreateTableVersions", "BatchCommitTables",
		"CreatePreparedStatement", "ClosePreparedStatement",
	} {
		if got[want] == "" {
			t.Errorf("ListActions lacks %s (or its description): %v", want, got)
		}
	}
}

// Actions take the REST request models as JSON and answer with the REST
// response models; what they change is what SQL then reads.
func TestActionsMutateTheCatalogThroughTheRESTModels(t *testing.T) {
	e := start(t)
	c := e.client()
	ctx := context.Background()
	fc := c.Client

	if err := doAction(ctx, fc, "CreateNamespace", map[string]any{"id": []string{"lake"}, "properties": map[string]string{"owner": "ana"}}, nil); err != nil {
		t.Fatal(err)
	}
	var declared api.DeclareTableResponse
	if err := doAction(ctx, fc, "DeclareTable", api.DeclareTableRequest{ID: api.ID{"lake", "events"}}, &declared); err != nil {
		t.Fatal(err)
	}
	if declared.Location == "" || !declared.ManagedVersioning {
		t.Fatalf("DeclareTable reply %+v", declared)
	}
	for v := 1; v <= 3; v++ {
		var created api.CreateTableVersionResponse
		err := doAction(ctx, fc, "CreateTableVersion", api.CreateTableVersionRequest{
			ID: api.ID{"lake", "events"}, Version: int64(v), ManifestPath: e.stage(declared.Location, uint64(v))}, &created)
		if err != nil {
			t.Fatal(err)
		}
		if created.Version == nil || created.Version.Version != int64(v) {
			t.Fatalf("CreateTableVersion reply %+v", created)
		}
		// Read-your-writes: the query right after the reply sees the version.
		info, err := c.Execute(ctx, "SELECT max(version) AS v FROM table_versions WHERE table_id = 'lake$events'")
		_, recs := fetch(t, ctx, c, info, err)
		if got := column(t, recs, "v"); !slices.Equal(got, []string{strconv.Itoa(v)}) {
			t.Fatalf("after committing version %d SQL reads %v", v, got)
		}
	}
	var desc api.DescribeTableResponse
	if err := doAction(ctx, fc, "DescribeTable", map[string]any{"id": []string{"lake", "events"}}, &desc); err != nil {
		t.Fatal(err)
	}
	if desc.Version == nil || *desc.Version != 3 {
		t.Fatalf("DescribeTable %+v", desc)
	}
	var list api.ListTablesResponse
	if err := doAction(ctx, fc, "ListTables", map[string]any{"id": []string{"lake"}}, &list); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(list.Tables, []string{"events"}) {
		t.Fatalf("ListTables %+v", list)
	}
	if err := doAction(ctx, fc, "TableExists", map[string]any{"id": []string{"lake", "events"}}, nil); err != nil {
		t.Fatal(err)
	}
	// A version already taken loses.
	err := doAction(ctx, fc, "CreateTableVersion", api.CreateTableVersionRequest{
		ID: api.ID{"lake", "events"}, Version: 3, ManifestPath: e.stage(declared.Location, 3)}, nil)
	wantStatus(t, "version 3 again", err, codes.Aborted)
	wantLanceCode(t, "version 3 again", err, nserror.ConcurrentModification)
}

func TestActionErrorsCarryTheLanceCode(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client()
	ctx := context.Background()
	fc := c.Client
	for _, c2 := range []struct {
		name string
		body string
		grpc codes.Code
		code nserror.Code
	}{
		{"DescribeTable", `{"id":["sales","nope"]}`, codes.NotFound, nserror.TableNotFound},
		{"DescribeNamespace", `{"id":["nope"]}`, codes.NotFound, nserror.NamespaceNotFound},
		{"NamespaceExists", `{"id":["nope"]}`, codes.NotFound, nserror.NamespaceNotFound},
		{"CreateNamespace", `{"id":["sales"]}`, codes.AlreadyExists, nserror.NamespaceAlreadyExists},
		{"DropNamespace", `{"id":["sales"]}`, codes.FailedPrecondition, nserror.NamespaceNotEmpty},
		{"DescribeTableVersion", `{"id":["sales","orders"],"version":9}`, codes.NotFound, nserror.TableVersionNotFound},
		{"CreateNamespace", `{"id":["a$b"]}`, codes.InvalidArgument, nserror.InvalidInput},
		{"CreateNamespace", `{"id":`, codes.InvalidArgument, nserror.InvalidInput},
		{"CreateNamespace", `["x"]`, codes.InvalidArgument, nserror.InvalidInput},
		{"DeclareTable", `{"id":["sales","t"],"location":"file:///etc"}`, codes.InvalidArgument, nserror.InvalidInput},
	} {
		stream, err := fc.DoAction(ctx, &flight.Action{Type: c2.name, Body: []byte(c2.body)})
		if err == nil {
			_, err = stream.Recv()
		}
		what := c2.name + " " + c2.body
		wantStatus(t, what, err, c2.grpc)
		wantLanceCode(t, what, err, c2.code)
	}
	// An unknown action is the Flight SQL router's to refuse.
	stream, err := fc.DoAction(ctx, &flight.Action{Type: "MakeCoffee"})
	if err == nil {
		_, err = stream.Recv()
	}
	if err == nil {
		t.Fatal("an unknown action succeeded")
	}
}

// The consistency header tells its two answers apart. With __manifest's
// segments held back, a version is acknowledged (in the commit log) but
// not yet in the SQL engine: "visible" answers at once with what the
// engine has applied (the old version; a wait for the new one could not
// end), while "latest" pins the head of the log when it is planned and
// cannot answer until the segment is written, then answers the new one.
// A query GetFlightInfo starts waits there (and a client that gives up
// leaves nothing waiting); one it only plans waits in its DoGet.
func TestConsistencyHeader(t *testing.T) {
	t.Run("started", func(t *testing.T) { testConsistencyHeader(t, 32) })
	t.Run("planned", func(t *testing.T) { testConsistencyHeader(t, 3) })
}

func testConsistencyHeader(t *testing.T, slots int) {
	ctx := context.Background()
	env := nstest.New(t)
	var holding atomic.Bool
	release := make(chan struct{})
	hold := objstore.FaultFunc(func(ctx context.Context, op objstore.Op, key string, ph objstore.Phase) error {
		if op != objstore.OpPutIfAbsent || ph != objstore.Before || !strings.HasPrefix(key, manifesttable.Prefix) || !holding.Load() {
			return nil
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	objs, err := objstore.OpenWith(ctx, "file://"+env.Root, objstore.Options{Faults: hold})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	svc := env.Open(t, func(c *namespace.Config) { c.Objects = objs; c.Table.Engine.MaxQueries = slots })
	released := sync.OnceFunc(func() { close(release) })
	t.Cleanup(released)
	e := serve(t, env, svc)
	e.seed()
	c := e.client()
	const q = "SELECT max(version) AS v FROM table_versions"
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := svc.Table().WaitCaughtUp(wctx); err != nil {
		t.Fatal(err)
	}

	holding.Store(true)
	orders := api.ID{"sales", "orders"}
	d := must(svc.DescribeTable(ctx, api.DescribeTableRequest{ID: orders}))
	must(svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: orders, Version: 4, ManifestPath: e.stage(d.Location, 4)}))
	with := func(consistency string) context.Context {
		return metadata.AppendToOutgoingContext(wctx, ConsistencyHeader, consistency)
	}

	info, err := c.Execute(with("visible"), q)
	if _, recs := fetch(t, wctx, c, info, err); !slices.Equal(column(t, recs, "v"), []string{"3"}) {
		t.Fatalf("visible, the new version held back: %v, want the old newest version 3", column(t, recs, "v"))
	}
	short, cancelShort := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, ConsistencyHeader, "latest"), 500*time.Millisecond)
	defer cancelShort()
	var latest *flight.FlightInfo
	if e.srv.limits.MaxStartedQueries > 0 {
		_, err := c.Execute(short, q)
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("latest, the new version held back: %v, want GetFlightInfo to wait for the version (and time out)", err)
		}
		waitFor(t, "the query the client gave up on stops waiting", func() bool {
			return e.srv.started.len() == 0 && svc.Table().RunningQueries() == 0
		})
	} else {
		if latest, err = c.Execute(with("latest"), q); err != nil {
			t.Fatal(err)
		}
		if err := drain(short, c, latest, nil); status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("latest, the new version held back: %v, want DoGet to wait for the version (and time out)", err)
		}
	}

	released()
	if latest == nil {
		latest, err = c.Execute(with("latest"), q)
	}
	if _, recs := fetch(t, wctx, c, latest, err); !slices.Equal(column(t, recs, "v"), []string{"4"}) {
		t.Fatalf("latest, planned while the version was held back: %v, want 4", column(t, recs, "v"))
	}
	info, err = c.Execute(with("visible"), q)
	if _, recs := fetch(t, wctx, c, info, err); !slices.Equal(column(t, recs, "v"), []string{"4"}) {
		t.Fatalf("visible, after latest saw version 4: %v", column(t, recs, "v"))
	}

	info, err = c.Execute(with("eventual-ish"), "SELECT 1")
	wantStatus(t, "bad consistency", drain(wctx, c, info, err), codes.InvalidArgument)
}

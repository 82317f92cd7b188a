package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/server"
)

// stageLanceManifest stages LanceDB's manifest name (package
// lancemanifest's testdata) as version v of the table at location.
func stageLanceManifest(t *testing.T, location string, v uint64, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "internal", "lancemanifest", "testdata", name+".manifest"))
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimPrefix(location, "file://")
	p := filepath.Join(dir, "_versions", fmt.Sprintf("%020d.manifest-%s", uint64(math.MaxUint64)-v, uuid.NewString()))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

// Compaction jobs are handed out on both surfaces of a running server: a
// worker claims over Flight (the action ClaimCompaction) and renews and
// completes over REST (the Go client), and the list agrees.
func TestCompactionJobsOverFlightAndREST(t *testing.T) {
	ctx := context.Background()
	srv, err := server.Start(ctx, config(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	c := restClient(t, srv)
	if _, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"a"},
		Properties: api.Properties{namespace.PropCompactionMaxFragments: "1"}}); err != nil {
		t.Fatal(err)
	}
	tid := api.ID{"a", "t"}
	d, err := c.DeclareTable(ctx, api.DeclareTableRequest{ID: tid})
	if err != nil {
		t.Fatal(err)
	}
	for v, name := range []string{"v1", "v2"} { // two fragments at the head
		if _, err := c.CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tid, Version: int64(v + 1),
			ManifestPath: stageLanceManifest(t, d.Location, uint64(v+1), name)}); err != nil {
			t.Fatal(err)
		}
	}

	fc, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fc.Close() }()
	stream, err := fc.Client.DoAction(ctx, &flight.Action{Type: api.OpClaimCompaction, Body: []byte(`{"worker": "flight-worker"}`)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var claimed api.ClaimCompactionResponse
	if err := json.Unmarshal(res.Body, &claimed); err != nil {
		t.Fatal(err)
	}
	if claimed.Job == nil || !claimed.Job.ID.Equal(tid) || claimed.Job.Worker != "flight-worker" {
		t.Fatalf("claimed over Flight: %s", res.Body)
	}

	again, err := c.ClaimCompaction(ctx, api.ClaimCompactionRequest{Worker: "rest-worker"})
	if err != nil || again.Job != nil {
		t.Fatalf("a second claim over REST: %+v, %v", again, err)
	}
	list, err := c.ListCompactions(ctx, api.ListCompactionsRequest{})
	if err != nil || len(list.Jobs) != 1 || list.Jobs[0].JobID != claimed.Job.JobID {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if _, err := c.HeartbeatCompaction(ctx, api.HeartbeatCompactionRequest{JobID: claimed.Job.JobID, Worker: "flight-worker"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompleteCompaction(ctx, api.CompleteCompactionRequest{JobID: claimed.Job.JobID, Worker: "flight-worker"}); err != nil {
		t.Fatal(err)
	}
	if list, err := c.ListCompactions(ctx, api.ListCompactionsRequest{}); err != nil || len(list.Jobs) != 0 {
		t.Fatalf("list after the completion: %+v, %v", list, err)
	}
}

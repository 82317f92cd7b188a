package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/server"
)

// startRootAndWes starts a server of cfg whose auth file (in dir) has two
// tokens: root-token-1 for root, an admin, and wes-token-1 for wes, who
// holds no role but what grants give; must is a REST step of root's.
func startRootAndWes(t *testing.T, cfg server.Config, dir string) (*server.Server, func(path, body string) string) {
	t.Helper()
	cfg.AuthFile = writeFile(t, dir, "auth.json", []byte(`{"tokens": [
		{"token": "root-token-1", "name": "root", "role": "admin"},
		{"token": "wes-token-1", "name": "wes", "role": "none"}]}`))
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, okFrom(t, restAs(t, srv, "root-token-1"))
}

// A claim's answer names a table its request did not: a retry of a claim
// is answered only to a caller who may still write that table. A writer
// of namespace a claims the jobs of a$t (REST) and a$u (a Flight action)
// with keys; once its grant on a is revoked, both retries are refused,
// as a request on those tables would be, and name no job. (Before, the
// retry was authorized as a claim of nothing in particular, and replayed
// the job of a table the caller could no longer reach.)
func TestARetriedClaimAfterTheGrantIsRevokedIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config(t, filepath.Join(dir, "data"))
	srv, must := startRootAndWes(t, cfg, dir)
	must("/v1/namespace/a/create", `{"properties": {"flightns.compaction.max_fragments": "1"}}`)
	must("/v1/namespace/b/create", `{}`)
	for _, tbl := range []string{"t", "u"} {
		var d api.DeclareTableResponse
		if err := json.Unmarshal([]byte(must("/v1/table/a$"+tbl+"/declare", `{}`)), &d); err != nil {
			t.Fatal(err)
		}
		for v, name := range []string{"v1", "v2"} { // two fragments at the head: due
			must("/v1/table/a$"+tbl+"/version/create", fmt.Sprintf(`{"version": %d, "manifest_path": %q}`, v+1,
				stageLanceManifest(t, d.Location, uint64(v+1), name)))
		}
	}
	must("/v1/namespace/b/grants/create", `{"principal": "wes", "role": "write"}`) // wes writes somewhere throughout
	must("/v1/namespace/a/grants/create", `{"principal": "wes", "role": "write"}`)

	fc, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fc.Close() }()
	action := func(key string) (string, error) {
		t.Helper()
		md := metadata.Pairs("authorization", "Bearer wes-token-1", flightserver.IdempotencyMetadata, key)
		s, err := fc.Client.DoAction(metadata.NewOutgoingContext(ctx, md), &flight.Action{Type: api.OpClaimCompaction, Body: []byte(`{"worker": "w"}`)})
		if err != nil {
			return "", err
		}
		r, err := s.Recv()
		return string(r.GetBody()), err
	}
	const claim = `{"worker": "w"}`
	until(t, "wes's write on a", func() bool {
		c, _, _ := keyedAs(t, srv, "wes-token-1", "", "/v1/namespace/a/describe", `{}`)
		return c == http.StatusOK
	})
	code, first, _ := keyedAs(t, srv, "wes-token-1", "k-rest", "/v1/compaction/claim", claim)
	if code != http.StatusOK || !strings.Contains(first, `"a","t"`) {
		t.Fatalf("wes's claim: %d %s, want a$t's job", code, first)
	}
	firstF, err := action("k-flight")
	if err != nil || !strings.Contains(firstF, `"a","u"`) {
		t.Fatalf("wes's claim on Flight: %v %s, want a$u's job", err, firstF)
	}
	if c, b, replayed := keyedAs(t, srv, "wes-token-1", "k-rest", "/v1/compaction/claim", claim); c != http.StatusOK || b != first || !replayed {
		t.Fatalf("the retry while wes may: %d %s (replayed %v)", c, b, replayed)
	}

	must("/v1/namespace/a/grants/delete", `{"principal": "wes"}`)
	until(t, "wes's grant on a revoked", func() bool {
		c, _, _ := keyedAs(t, srv, "wes-token-1", "", "/v1/namespace/a/describe", `{}`)
		return c == http.StatusNotFound
	})
	if c, b, _ := keyedAs(t, srv, "wes-token-1", "k-rest", "/v1/compaction/claim", claim); c != http.StatusNotFound || strings.Contains(b, "job_id") {
		t.Fatalf("the retry after the revocation: %d %s, want 404 naming no job", c, b)
	}
	if b, err := action("k-flight"); status.Code(err) != codes.NotFound || strings.Contains(b, "job_id") {
		t.Fatalf("the Flight retry after the revocation: %v %s, want NotFound", err, b)
	}
}

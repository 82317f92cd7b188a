package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/server"
)

// A retry is answered only to a caller who may still make the request:
// a writer of namespace a declares a table with an Idempotency-Key, and
// is answered with credentials for its directory (REST, and as a Flight
// action, and a planner operation); once its grant on a is revoked, the
// retry with the same key is refused exactly as a first request is
// (NamespaceNotFound: a is hidden from it now; PermissionDenied once it
// may only read a) and carries no credentials; given its grant back, the
// retry gets the first answer again, so the refusals left the records
// alone.
func TestARetryAfterTheGrantIsRevokedIsRefused(t *testing.T) {
	ctx := context.Background()
	minio := s3test.Start(t, "cat")
	dir := t.TempDir()
	cfg := config(t, filepath.Join(dir, "data"))
	cfg.Store.Root = minio.URI("cat", "root")
	cfg.Vend = server.Vend{Enabled: true, Duration: 15 * time.Minute}
	srv, must := startRootAndWes(t, cfg, dir)
	must("/v1/namespace/a/create", `{}`)
	must("/v1/namespace/b/create", `{}`)
	must("/v1/namespace/a$logs/partitioned/create", `{"schema": {"fields": [
		{"name": "k", "nullable": true, "type": {"type": "int64"}, "metadata": {"lance:field_id": "1"}}]},
		"spec": {"fields": [{"source_ids": [1], "transform": {"type": "identity"}}]}}`)
	grant := func(role string) {
		t.Helper()
		if role == "" {
			must("/v1/namespace/a/grants/delete", `{"principal": "wes"}`)
		} else {
			must("/v1/namespace/a/grants/create", `{"principal": "wes", "role": "`+role+`"}`)
		}
	}
	// wes keeps write on b throughout: it holds the write role somewhere,
	// so what refuses it on a is the check on a itself.
	must("/v1/namespace/b/grants/create", `{"principal": "wes", "role": "write"}`)
	grant("write")

	// keyed POSTs as wes with key; it answers the status, the body and
	// whether it was a replay.
	keyed := func(key, path, body string) (int, string, bool) {
		t.Helper()
		return keyedAs(t, srv, "wes-token-1", key, path, body)
	}
	fc, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fc.Close() }()
	action := func(key, typ, body string) (string, bool, error) {
		t.Helper()
		md := metadata.Pairs("authorization", "Bearer wes-token-1", flightserver.IdempotencyMetadata, key)
		var hdr metadata.MD
		s, err := fc.Client.DoAction(metadata.NewOutgoingContext(ctx, md), &flight.Action{Type: typ, Body: []byte(body)}, grpc.Header(&hdr))
		if err != nil {
			return "", false, err
		}
		r, err := s.Recv()
		if err != nil {
			return "", false, err
		}
		h, _ := s.Header()
		return string(r.GetBody()), len(h.Get("idempotent-replayed")) > 0, nil
	}
	secret := func(body string) bool { return strings.Contains(body, "aws_secret_access_key") }

	// The grant reaches the server (grants are re-read within
	// namespace.GrantsRecheck); until: the first answers, with credentials.
	until(t, "wes's write on a", func() bool { c, _, _ := keyed("", "/v1/namespace/a/describe", `{}`); return c == http.StatusOK })
	const declare = `{"vend_credentials": true}`
	code, first, replayed := keyed("k-rest", "/v1/table/a$t/declare", declare)
	if code != http.StatusOK || replayed || !secret(first) {
		t.Fatalf("wes declares a$t: %d %s (replayed %v), want 200 with credentials", code, first, replayed)
	}
	firstF, replayedF, err := action("k-flight", "DeclareTable", `{"id": ["a", "f"], "vend_credentials": true}`)
	if err != nil || replayedF || !secret(firstF) {
		t.Fatalf("wes declares a$f on Flight: %v %s (replayed %v), want credentials", err, firstF, replayedF)
	}
	const resolve = `{"row": {"k": 1}}`
	code, firstP, _ := keyed("k-plan", "/v1/namespace/a$logs/partitioned/resolve", resolve)
	if code != http.StatusOK {
		t.Fatalf("wes resolves a partition of a$logs: %d %s", code, firstP)
	}
	if c, b, replayed := keyed("k-rest", "/v1/table/a$t/declare", declare); c != http.StatusOK || b != first || !replayed {
		t.Fatalf("the retry while wes may: %d %s (replayed %v), want the first answer", c, b, replayed)
	}

	// Revoked: every retry is refused as a first request of wes's is now.
	type refusal struct {
		status int
		code   int
		grpc   codes.Code
	}
	for _, step := range []struct {
		grant string
		want  refusal
	}{
		{"", refusal{http.StatusNotFound, 1, codes.NotFound}},               // a is hidden from wes
		{"read", refusal{http.StatusForbidden, 15, codes.PermissionDenied}}, // wes may read a, not write it
	} {
		grant(step.grant)
		until(t, "wes's grant on a changed to "+step.grant, func() bool {
			c, _, _ := keyed("", "/v1/table/a$other/declare", `{}`)
			return c == step.want.status
		})
		_, fresh, _ := keyed("", "/v1/table/a$t/declare", declare) // a first request, with no key
		for _, r := range []struct{ what, key, path, body string }{
			{"the declare's retry", "k-rest", "/v1/table/a$t/declare", declare},
			{"the planner operation's retry", "k-plan", "/v1/namespace/a$logs/partitioned/resolve", resolve},
		} {
			c, b, replayed := keyed(r.key, r.path, r.body)
			var e struct{ Code int }
			_ = json.Unmarshal([]byte(b), &e)
			if c != step.want.status || e.Code != step.want.code || replayed || secret(b) {
				t.Fatalf("grant %q: %s: %d %s (replayed %v), want %d with code %d", step.grant, r.what, c, b, replayed, step.want.status, step.want.code)
			}
			if r.key == "k-rest" && b != fresh {
				t.Fatalf("grant %q: the refused retry says %s, a first request %s", step.grant, b, fresh)
			}
		}
		body, replayedF, err := action("k-flight", "DeclareTable", `{"id": ["a", "f"], "vend_credentials": true}`)
		if status.Code(err) != step.want.grpc || replayedF || secret(body) {
			t.Fatalf("grant %q: the Flight retry: %v %s (replayed %v), want %v", step.grant, err, body, replayedF, step.want.grpc)
		}
	}

	// The write grant back: the records were left alone.
	grant("write")
	until(t, "wes's write on a again", func() bool { c, _, _ := keyed("", "/v1/namespace/a/describe", `{}`); return c == http.StatusOK })
	if c, b, replayed := keyed("k-rest", "/v1/table/a$t/declare", declare); c != http.StatusOK || b != first || !replayed {
		t.Fatalf("the retry with the grant back: %d %s (replayed %v), want the first answer", c, b, replayed)
	}
	if c, b, replayed := keyed("k-plan", "/v1/namespace/a$logs/partitioned/resolve", resolve); c != http.StatusOK || b != firstP || !replayed {
		t.Fatalf("the planner retry with the grant back: %d %s (replayed %v), want the first answer", c, b, replayed)
	}
	if body, replayedF, err := action("k-flight", "DeclareTable", `{"id": ["a", "f"], "vend_credentials": true}`); err != nil || !replayedF || body != firstF {
		t.Fatalf("the Flight retry with the grant back: %v %s (replayed %v), want the first answer", err, body, replayedF)
	}
}

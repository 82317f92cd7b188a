package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/server"
)

// keyed POSTs body to path on REST with an Idempotency-Key and answers
// the status, the body and whether it was a replay.
func keyed(t *testing.T, srv *server.Server, key, path, body string) (int, string, bool) {
	t.Helper()
	return keyedAs(t, srv, "", key, path, body)
}

// keyedAs POSTs body to path as the caller of bearer ("": none) with the
// Idempotency-Key key ("": none); it answers the status, the body and
// whether it was a replay.
func keyedAs(t *testing.T, srv *server.Server, bearer, key, path, body string) (int, string, bool) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+srv.RESTAddr().String()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), resp.Header.Get("Idempotent-Replayed") == "true"
}

// A mutation retried with its Idempotency-Key gets the first answer, on
// REST and as a Flight action, also after the server restarts; the key
// with another body is refused with 409; a commit retried does not become
// a second version or a conflict.
func TestRetriedMutationsGetTheirFirstAnswer(t *testing.T) {
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "data")
	srv, err := server.Start(ctx, config(t, data))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = srv.Close()
		}
	}()

	code, body, replayed := keyed(t, srv, "k-ns", "/v1/namespace/sales/create", `{}`)
	if code != http.StatusOK || replayed {
		t.Fatalf("create: %d %s %v", code, body, replayed)
	}
	// Without the key a second create is refused; with it, it is the
	// first answer again.
	if code, _, _ := keyed(t, srv, "k-other", "/v1/namespace/sales/create", `{}`); code != http.StatusConflict {
		t.Fatalf("a second create: %d", code)
	}
	if c, b, replayed := keyed(t, srv, "k-ns", "/v1/namespace/sales/create", `{}`); c != code || b != body || !replayed {
		t.Fatalf("the retry: %d %s %v, want %d %s replayed", c, b, replayed, code, body)
	}
	if c, b, _ := keyed(t, srv, "k-ns", "/v1/namespace/sales/create", `{"properties": {"a": "b"}}`); c != http.StatusConflict || !strings.Contains(b, "another request") {
		t.Fatalf("the key with another body: %d %s", c, b)
	}
	if c, b, _ := keyed(t, srv, "k-ns", "/v1/namespace/other/create", `{}`); c != http.StatusConflict {
		t.Fatalf("the key on another id: %d %s", c, b)
	}
	if c, b, _ := keyed(t, srv, "bad key", "/v1/namespace/x/create", `{}`); c != http.StatusBadRequest {
		t.Fatalf("a bad key: %d %s", c, b)
	}

	// A commit whose reply was lost: its retry is the same answer, not a
	// conflict, and makes no second version.
	var decl struct{ Location string }
	code, body, _ = keyed(t, srv, "k-decl", "/v1/table/sales$t/declare", `{}`)
	if err := json.Unmarshal([]byte(body), &decl); code != http.StatusOK || err != nil {
		t.Fatalf("declare: %d %s", code, body)
	}
	manifest := stageManifest(t, decl.Location, 1)
	commit := fmt.Sprintf(`{"version": 1, "manifest_path": %q}`, manifest)
	code, body, _ = keyed(t, srv, "k-commit", "/v1/table/sales$t/version/create", commit)
	if code != http.StatusOK {
		t.Fatalf("commit: %d %s", code, body)
	}
	if c, b, replayed := keyed(t, srv, "k-commit", "/v1/table/sales$t/version/create", commit); c != code || b != body || !replayed {
		t.Fatalf("the commit's retry: %d %s %v", c, b, replayed)
	}
	_, versions := restAs(t, srv, "")("/v1/table/sales$t/version/list", `{}`)
	if strings.Count(versions, `"version"`) != 1 {
		t.Fatalf("versions after the retry: %s", versions)
	}

	// Flight: the same key in the action's metadata.
	fc, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fc.Close() }()
	action := func(key, typ, body string) (string, bool, error) {
		var hdr metadata.MD
		s, err := fc.Client.DoAction(metadata.AppendToOutgoingContext(ctx, flightserver.IdempotencyMetadata, key),
			&flight.Action{Type: typ, Body: []byte(body)}, grpc.Header(&hdr))
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
	first, replayedF, err := action("k-flight", "CreateNamespace", `{"id": ["ops"]}`)
	if err != nil || replayedF {
		t.Fatalf("flight create: %v %v", err, replayedF)
	}
	again, replayedF, err := action("k-flight", "CreateNamespace", `{"id": ["ops"]}`)
	if err != nil || !replayedF || again != first {
		t.Fatalf("flight retry: %q %v %v, want %q", again, replayedF, err, first)
	}
	if _, _, err := action("k-flight", "CreateNamespace", `{"id": ["ops2"]}`); err == nil {
		t.Fatal("flight: the key with another body ran")
	}

	// The keys live in Redis: a restarted server still answers them.
	_ = srv.Close()
	closed = true
	srv2, err := server.Start(ctx, config(t, data))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv2.Close() }()
	if c, b, replayed := keyed(t, srv2, "k-commit", "/v1/table/sales$t/version/create", commit); c != code || b != body || !replayed {
		t.Fatalf("the retry after a restart: %d %s %v", c, b, replayed)
	}
}

package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/server"
)

const grantsSchema = `{"fields":[
 {"name":"day","nullable":true,"type":{"type":"date32"},"metadata":{"lance:field_id":"1"}}]}`

// A reader granted namespace a, and nothing catalog-wide, cannot see,
// describe, list, plan, query or commit anything of b on any surface
// (REST, Flight actions, Flight SQL with plan_scan, the plan_scan
// command), and every answer about b is word for word the answer about
// something that does not exist.
func TestAReaderOfOneNamespaceSeesNothingOfAnother(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"tokens": [
		{"token": "root-token-1", "name": "root", "role": "admin"},
		{"token": "ana-token-1", "name": "ana", "role": "none"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config(t, filepath.Join(dir, "data"))
	cfg.AuthFile = authFile
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()

	rest := func(token, path, body string) (int, string) {
		t.Helper()
		return restAs(t, srv, token)(path, body)
	}
	must := func(path, body string) {
		t.Helper()
		if code, out := rest("root-token-1", path, body); code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, out)
		}
	}
	for _, ns := range []string{"a", "b"} {
		must("/v1/namespace/"+ns+"/create", `{}`)
		must("/v1/table/"+ns+"$t/declare", `{}`)
		must("/v1/namespace/"+ns+"$pt/partitioned/create", `{"schema": `+grantsSchema+`, "spec": {"fields": [{"source_ids": [1], "transform": {"type": "identity"}}]}}`)
	}

	// The grant, by an admin, through the REST operation.
	must("/v1/namespace/a/grants/create", `{"principal": "ana", "role": "read"}`)
	if code, out := rest("ana-token-1", "/v1/namespace/a/grants/create", `{"principal": "ana", "role": "admin"}`); code != http.StatusForbidden {
		t.Fatalf("a reader grants itself admin: %d %s", code, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := rest("ana-token-1", "/v1/table/a$t/describe", `{}`); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the grant did not reach the server")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// REST: b's objects answer as missing ones do.
	same := func(what, hiddenPath, missingPath, hiddenID, missingID string) {
		t.Helper()
		hc, hb := rest("ana-token-1", hiddenPath, `{}`)
		mc, mb := rest("root-token-1", missingPath, `{}`)
		// What the caller did not send itself: the error and its code.
		var he, me struct {
			Error string `json:"error"`
			Code  int    `json:"code"`
		}
		_, _ = json.Unmarshal([]byte(hb), &he), json.Unmarshal([]byte(mb), &me)
		if hc != mc || hc == http.StatusOK || he.Code != me.Code || strings.ReplaceAll(he.Error, hiddenID, "X") != strings.ReplaceAll(me.Error, missingID, "X") {
			t.Errorf("%s: %d %s; a missing one: %d %s", what, hc, hb, mc, mb)
		}
	}
	same("describe", "/v1/table/b$t/describe", "/v1/table/b$nope/describe", "b$t", "b$nope")
	same("exists", "/v1/table/b$t/exists", "/v1/table/b$nope/exists", "b$t", "b$nope")
	same("versions", "/v1/table/b$t/version/list", "/v1/table/b$nope/version/list", "b$t", "b$nope")
	same("namespace", "/v1/namespace/b/describe", "/v1/namespace/zz/describe", `"b"`, `"zz"`)
	same("b exists", "/v1/namespace/b/exists", "/v1/namespace/zz/exists", `"b"`, `"zz"`)
	same("tables of b", "/v1/namespace/b/table/list", "/v1/namespace/zz/table/list", `"b"`, `"zz"`)
	same("plan_scan", "/v1/namespace/b$pt/partitioned/plan_scan", "/v1/namespace/b$nope/partitioned/plan_scan", "b$pt", "b$nope")
	same("describe partitioned", "/v1/namespace/b$pt/partitioned/describe", "/v1/namespace/b$nope/partitioned/describe", "b$pt", "b$nope")
	if code, out := rest("ana-token-1", "/v1/table/b$t/version/create", `{"version": 1, "manifest_path": "x"}`); code != http.StatusForbidden || strings.Contains(out, "b$t\"") {
		t.Errorf("a reader's commit to b$t: %d %s", code, out)
	}
	if code, out := rest("ana-token-1", "/v1/table/a$t/drop", `{}`); code != http.StatusForbidden {
		t.Errorf("a reader drops a$t: %d %s", code, out)
	}
	if _, out := rest("ana-token-1", "/v1/namespace/$/list", `{}`); !strings.Contains(out, `"namespaces":["a"]`) {
		t.Errorf("the root's namespaces: %s", out)
	}
	if _, out := rest("ana-token-1", "/v1/table", `{}`); strings.Contains(out, "b$") || !strings.Contains(out, "a$t") {
		t.Errorf("every table: %s", out)
	}
	if code, out := rest("ana-token-1", "/v1/namespace/a$pt/partitioned/plan_scan", `{"filter": ""}`); code != http.StatusOK {
		t.Errorf("plan_scan of a$pt: %d %s", code, out)
	}

	// Flight: actions, the plan_scan command, and SQL.
	c, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	as := func(token string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	hiddenErr := flightAction(ctx, c, "ana-token-1", "DescribeTable", `{"id": ["b", "t"]}`)
	missingErr := flightAction(ctx, c, "root-token-1", "DescribeTable", `{"id": ["b", "nope"]}`)
	if hiddenErr == nil || status.Code(hiddenErr) != status.Code(missingErr) ||
		strings.ReplaceAll(status.Convert(hiddenErr).Message(), "b$t", "X") != strings.ReplaceAll(status.Convert(missingErr).Message(), "b$nope", "X") {
		t.Errorf("DescribeTable b$t over Flight: %v; a missing one: %v", hiddenErr, missingErr)
	}
	if err := flightAction(ctx, c, "ana-token-1", "PlanScan", `{"id": ["b", "pt"]}`); status.Code(err) != status.Code(missingErr) {
		t.Errorf("the PlanScan action on b$pt: %v", err)
	}
	cmd, _ := json.Marshal(map[string]any{"plan_scan": map[string]any{"id": []string{"b", "pt"}}})
	if _, err := c.Client.GetFlightInfo(as("ana-token-1"), &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}); status.Code(err) != status.Code(missingErr) {
		t.Errorf("the plan_scan command on b$pt: %v", err)
	}
	query := func(q string) (string, error) {
		info, err := c.Execute(as("ana-token-1"), q)
		if err != nil {
			return "", err
		}
		rdr, err := c.DoGet(as("ana-token-1"), info.Endpoint[0].Ticket)
		if err != nil {
			return "", err
		}
		defer rdr.Release()
		var out []string
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				out = append(out, rec.Column(0).(*array.String).Value(i))
			}
		}
		return strings.Join(out, ","), rdr.Err()
	}
	if got, err := query("SELECT object_id FROM __manifest WHERE object_type <> 'table_version' ORDER BY 1"); err != nil || strings.Contains(got, "b") || !strings.Contains(got, "a$t") {
		t.Errorf("__manifest: %q, %v", got, err)
	}
	if got, err := query("SELECT table_id FROM table_versions UNION ALL SELECT object_id FROM tables UNION ALL SELECT object_id FROM namespaces"); err != nil || strings.Contains(got, "b") {
		t.Errorf("the views: %q, %v", got, err)
	}
	if got, err := query("SELECT CAST(count(*) AS VARCHAR) FROM plan_scan('a$pt', '')"); err != nil {
		t.Errorf("plan_scan of a$pt in SQL: %q, %v", got, err)
	}
	if _, err := query("SELECT CAST(count(*) AS VARCHAR) FROM plan_scan('b$pt', '')"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("plan_scan of b$pt in SQL: %v", err)
	}
	if _, err := query("SELECT object_id FROM flightns.main.__manifest"); err == nil || !strings.Contains(err.Error(), "limited to some namespaces") {
		t.Errorf("the main schema by name: %v", err)
	}
	// The admin, unscoped, sees b.
	info, err := c.Execute(as("root-token-1"), "SELECT count(*) FROM namespaces WHERE object_id LIKE 'b%'")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.DoGet(as("root-token-1"), info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() || rdr.RecordBatch().Column(0).(*array.Int64).Value(0) < 2 { // b, b$pt and what it holds
		t.Errorf("the admin's count of b's namespaces: %v %v", rdr.RecordBatch(), rdr.Err())
	}
}

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightns/flightns/server"
)

type auditEvent struct {
	Audit     bool   `json:"audit"`
	Principal string `json:"principal"`
	Surface   string `json:"surface"`
	Op        string `json:"op"`
	Target    string `json:"target"`
	Outcome   string `json:"outcome"`
}

// Every mutation and every refused request, on REST and Flight alike, is
// one audit event with principal, operation, target id and outcome, in
// the audit file; reads that pass are not; no event carries a password
// or a token.
func TestEveryMutationAndRefusalIsAudited(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config(t, t.TempDir())
	cfg.AuthFile = writeFile(t, dir, "auth.json", []byte(`{"users": [{"name": "ana", "password": "pw-ana-secret", "role": "write"}],
		"tokens": [{"token": "reader-token-secret", "name": "rita", "role": "read"}]}`))
	cfg.AuditFile = filepath.Join(dir, "audit.jsonl")
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path, user, pass, token string
		want                            int
	}{
		{"POST", "/v1/namespace/sales/create", "ana", "pw-ana-secret", "", 200},
		{"GET", "/v1/namespace/sales/list", "", "", "reader-token-secret", 200},      // a read: not audited
		{"POST", "/v1/namespace/ops/create", "", "", "reader-token-secret", 403},     // a reader writing
		{"POST", "/v1/namespace/hr/create", "ana", "wrong-password-secret", "", 401}, // bad credentials
		{"GET", "/v1/namespace/sales/list", "", "", "forged-token-secret", 401},      // a refused read
		{"POST", "/v1/namespace/sales/drop", "ana", "pw-ana-secret", "", 200},        // a mutation
	} {
		creds := bearer(c.token)
		if c.user != "" {
			creds = func(r *http.Request) { r.SetBasicAuth(c.user, c.pass) }
		}
		if got := restStatus(t, srv, c.method, c.path, creds); got != c.want {
			t.Fatalf("%s %s: %d, want %d", c.method, c.path, got, c.want)
		}
	}
	fc, err := flightsql.NewClient(srv.FlightAddr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fc.Close() }()
	_ = flightAction(ctx, fc, "reader-token-secret", "CreateNamespace", `{"id": ["by-rita"]}`)
	_ = flightAction(ctx, fc, "forged-token-secret", "ListNamespaces", `{"id": []}`)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(cfg.AuditFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"pw-ana-secret", "reader-token-secret", "wrong-password-secret", "forged-token-secret"} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("the audit file holds the credential %q:\n%s", secret, raw)
		}
	}
	var got []auditEvent
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || !e.Audit {
			t.Fatalf("not an audit event: %s (%v)", sc.Text(), err)
		}
		got = append(got, e)
	}
	want := []auditEvent{
		{true, "ana", "rest", "CreateNamespace", "sales", "ok"},
		{true, "rita", "rest", "CreateNamespace", "ops", "PermissionDenied"},
		{true, "", "rest", "CreateNamespace", "hr", "Unauthenticated"},
		{true, "", "rest", "ListNamespaces", "sales", "Unauthenticated"},
		{true, "ana", "rest", "DropNamespace", "sales", "ok"},
		{true, "rita", "flight", "CreateNamespace", "", "PermissionDenied"}, // refused before its body is read
		{true, "", "flight", "/arrow.flight.protocol.FlightService/DoAction", "", "Unauthenticated"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d audit events, want %d:\n%s", len(got), len(want), raw)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

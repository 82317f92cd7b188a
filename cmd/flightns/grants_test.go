package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Grants given and revoked with the admin CLI reach a running server
// within seconds, and decide what a principal limited to them sees, SQL
// included: its queries run in the SQL worker process (the default
// isolation), which shows it the rows of its namespaces alone and refuses
// a text that names the tables beneath.
func TestGrantsFromTheCLIScopeARunningServer(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	authFile := filepath.Join(work, "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"tokens": [
		{"token": "root-token-1", "name": "root", "role": "admin"},
		{"token": "ana-token-1", "name": "ana", "role": "none"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, work, nil, "--auth-file", authFile)
	cli := func(token string, want int, args ...string) (string, string) {
		t.Helper()
		args = append(args, "--flight", s.flight, "--rest", "http://"+s.rest, "--token", token)
		code, out, errs := runCLI(t, work, args...)
		if code != want {
			t.Fatalf("flightns %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
		}
		return out, errs
	}
	admin := adminCLI(t, work)
	for _, ns := range []string{"a", "b", "b.deep"} {
		cli("root-token-1", 0, "ns", "create", ns)
	}
	cli("root-token-1", 0, "table", "declare", "a.t")
	cli("root-token-1", 0, "table", "declare", "b.secret_table")

	const ids = "SELECT string_agg(object_id, ',' ORDER BY object_id) AS ids FROM __manifest"
	if out, _ := cli("ana-token-1", 0, "query", "--format", "csv", ids); strings.Contains(out, "a") {
		t.Fatalf("ana before any grant: %q", out)
	}
	if out := admin(0, "grant", "--namespace", "a", "--role", "read", "--principal", "ana"); !strings.Contains(out, `granted read on namespace "a" to principal ana`) {
		t.Errorf("grant: %q", out)
	}
	admin(1, "grant", "--namespace", "a", "--role", "read")                       // no grantee
	admin(1, "grant", "--namespace", "a", "--role", "none", "--principal", "ana") // nothing to give
	if out := admin(0, "grants", "--format", "json"); !strings.Contains(out, `"principal":"ana"`) || !strings.Contains(out, `"role":"read"`) {
		t.Errorf("grants: %q", out)
	}

	// The server picks the grant up from storage within seconds.
	until := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 15 s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	until("the grant", func() bool {
		out, _ := cli("ana-token-1", 0, "query", "--format", "csv", ids)
		return strings.Contains(out, "a,a$t")
	})
	if out, _ := cli("ana-token-1", 0, "query", "--format", "csv", ids); strings.Contains(out, "b") {
		t.Errorf("ana sees b: %q", out)
	}
	if _, errs := cli("ana-token-1", 1, "query", "SELECT * FROM _objects"); !strings.Contains(errs, "limited to some namespaces") {
		t.Errorf("the physical table: %q", errs)
	}
	if out, _ := cli("ana-token-1", 0, "ns", "list"); strings.TrimSpace(out) != "a" {
		t.Errorf("ns list: %q", out)
	}
	_, hidden := cli("ana-token-1", 1, "ns", "describe", "b")
	_, missing := cli("ana-token-1", 1, "ns", "describe", "zz")
	if strings.ReplaceAll(hidden, `"b"`, "X") != strings.ReplaceAll(missing, `"zz"`, "X") {
		t.Errorf("a hidden namespace and a missing one differ:\n%s\n%s", hidden, missing)
	}

	admin(0, "revoke-grant", "--namespace", "a", "--principal", "ana")
	until("the revocation", func() bool {
		out, _ := cli("ana-token-1", 0, "query", "--format", "csv", ids)
		return !strings.Contains(out, "a")
	})
	if out := admin(0, "grants"); strings.TrimSpace(out) != "" {
		t.Errorf("grants after the revocation: %q", out)
	}
}

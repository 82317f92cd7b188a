package reliability

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
)

// tenantServer runs the binary with an auth file: an admin token, and
// "bo", a token with role none that the test gives write on namespace b
// and read on a; namespaces a, b and c (hidden from bo) with tables a$t1
// (one version, a data file) and c$secret1 at the location "hidden-dir".
// args are the server's further flags.
func tenantServer(t *testing.T, args ...string) (srv *server, admin, bo *restClient, t1 string) {
	t.Helper()
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.json")
	b, _ := json.Marshal(map[string]any{"tokens": []map[string]string{
		{"token": adminToken, "name": "admin", "role": "admin"},
		{"token": writeToken, "name": "bo", "role": "none"},
	}})
	if err := os.WriteFile(authFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	srv = startServer(t, nil, append([]string{"--auth-file", authFile}, args...)...)
	admin, bo = newREST(srv.rest), newREST(srv.rest)
	admin.header.Set("Authorization", "Bearer "+adminToken)
	bo.header.Set("Authorization", "Bearer "+writeToken)
	for _, ns := range []string{"a", "b", "c"} {
		admin.must(t, "/v1/namespace/"+ns+"/create", map[string]any{}, nil)
	}
	admin.must(t, "/v1/namespace/b/grants/create", map[string]any{"principal": "bo", "role": "write"}, nil)
	admin.must(t, "/v1/namespace/a/grants/create", map[string]any{"principal": "bo", "role": "read"}, nil)
	var d struct{ Location string }
	admin.must(t, "/v1/table/a$t1/declare", map[string]any{}, &d)
	admin.must(t, "/v1/table/c$secret1/declare", map[string]any{"location": "hidden-dir"}, nil)
	return srv, admin, bo, strings.TrimSuffix(d.Location, "/")
}

// refusedOverlap fails unless c's declaration or registration of
// b$evil at loc is refused as an overlap (400, code 13) naming nothing of
// namespace c.
func refusedOverlap(t *testing.T, c *restClient, op, loc string) {
	t.Helper()
	rep, err := c.post(context.Background(), "/v1/table/b$evil/"+op, map[string]any{"location": loc})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != http.StatusBadRequest || rep.Code != 13 || !strings.Contains(string(rep.Body), "overlaps the directory of another table") {
		t.Errorf("%s b$evil at %s: HTTP %d %.300s, want 400 code 13, an overlap", op, loc, rep.Status, rep.Body)
	}
	if strings.Contains(string(rep.Body), "c$secret") || strings.Contains(string(rep.Body), "already belongs") {
		t.Errorf("%s b$evil at %s: the refusal names a hidden table: %s", op, loc, rep.Body)
	}
}

// The storage half of tenant isolation, against the binary on a
// directory: a writer of namespace b cannot declare or register a table
// inside, around or at another table's directory (a$t1, which it may
// only read, or c$secret1, which it cannot see), and its refusals name no
// hidden table; its own table's drop (retention 0) and a routine gc
// delete nothing of anyone else's; verify finds nothing wrong.
func TestTenantsCannotReachEachOthersDirectories(t *testing.T) {
	data := t.TempDir()
	srv, admin, bo, t1 := tenantServer(t, "--data", data, "--drop-retention", "0")
	root := filepath.Join(data, "root")
	t1Dir := strings.TrimPrefix(t1, "file://")
	rows := filepath.Join(t1Dir, "data", "part-0.lance")
	if err := os.MkdirAll(filepath.Dir(rows), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rows, []byte("a's rows"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Base(t1Dir)
	for _, loc := range []string{t1 + "/data", t1, key, key + "/data/x", "file://" + root + "/" + key + "/data",
		"hidden-dir", "hidden-dir/x"} {
		refusedOverlap(t, bo, "declare", loc)
	}
	// The same in one batch.
	rep, err := bo.post(context.Background(), "/v1/table/batch-commit", map[string]any{"operations": []any{
		map[string]any{"declare_table": map[string]any{"id": []string{"b", "evil"}, "location": "hidden-dir/y"}}}})
	if err != nil || rep.Status != http.StatusBadRequest || strings.Contains(string(rep.Body), "c$secret") {
		t.Errorf("a batch declaring inside c$secret1: %v HTTP %d %s", err, rep.Status, rep.Body)
	}
	// Its own table, at a directory of its choosing and beside a$t1's
	// name, then dropped with its data.
	bo.must(t, "/v1/table/b$own/declare", map[string]any{"location": key + "0"}, nil)
	if err := os.MkdirAll(filepath.Join(root, key+"0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, key+"0", "f.lance"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bo.must(t, "/v1/table/b$own/drop", map[string]any{}, nil)
	if _, err := os.Stat(rows); err != nil {
		t.Fatalf("b's drop deleted a$t1's data: %v", err)
	}
	cmd := exec.Command(binary, "admin", "gc", "--data", data, "--older-than", "1ns", "--drop-retention", "0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("admin gc: %v\n%s", err, out)
	}
	if _, err := os.Stat(rows); err != nil {
		t.Fatalf("gc deleted a$t1's data: %v", err)
	}
	out, err := exec.Command(binary, "admin", "verify", "--data", data).CombinedOutput()
	if err != nil {
		t.Fatalf("admin verify: %v\n%s", err, out)
	}
	if srv.readyz() != http.StatusOK {
		t.Fatal("the server is not ready after the attack")
	}
	admin.must(t, "/v1/table/c$secret1/describe", map[string]any{}, nil)
}

// A drop kept for undrop keeps its directory from every other table: a
// writer of b cannot register c$secret1's directory (in a namespace it
// cannot see) into b, nor declare inside it; undrop brings it back. On
// MinIO with credential vending: a refused declaration vends nothing.
func TestAKeptDropsDirectoryIsNobodyElses(t *testing.T) {
	s3 := s3test.Start(t, "lake")
	_, admin, bo, t1 := tenantServer(t, "--redis", redistest.Start(t).URL(), "--root", s3.URI("lake", "cat"), "--vend-credentials")
	// c$secret1 holds a Lance table (a final manifest) when it is dropped.
	st := openStore(t, s3.URI("lake", "cat"))
	if err := st.Put(context.Background(), "hidden-dir/_versions/18446744073709551614.manifest", []byte("manifest")); err != nil {
		t.Fatal(err)
	}
	admin.must(t, "/v1/table/c$secret1/drop", map[string]any{}, nil)
	refusedOverlap(t, bo, "register", "hidden-dir")
	refusedOverlap(t, admin, "register", "hidden-dir") // even for the catalog's admin: only undrop brings it back
	refusedOverlap(t, bo, "declare", "hidden-dir")
	refusedOverlap(t, bo, "declare", "hidden-dir/x")
	rep, err := bo.post(context.Background(), "/v1/table/b$evil/declare", map[string]any{"location": t1 + "/data", "vend_credentials": true})
	if err != nil || rep.Status != http.StatusBadRequest || strings.Contains(string(rep.Body), "aws_secret_access_key") {
		t.Fatalf("declaring inside a$t1 with vending: %v HTTP %d %s", err, rep.Status, rep.Body)
	}
	admin.must(t, "/v1/table/c$secret1/undrop", map[string]any{}, nil)
	admin.must(t, "/v1/table/c$secret1/describe", map[string]any{}, nil)
}

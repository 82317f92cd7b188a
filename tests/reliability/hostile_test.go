package reliability

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
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
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
)

// route is one REST route; mutating routes need the write role.
type route struct {
	method, path string
	write        bool
}

// restRoutes is every route of the REST surface (docs/rest.md), with {id}
// filled with an existing namespace or table.
var restRoutes = []route{
	{"POST", "/v1/namespace/{ns}/create", true},
	{"POST", "/v1/namespace/{ns}/list", false},
	{"POST", "/v1/namespace/{ns}/describe", false},
	{"POST", "/v1/namespace/{ns}/drop", true},
	{"POST", "/v1/namespace/{ns}/exists", false},
	{"POST", "/v1/namespace/{ns}/table/list", false},
	{"POST", "/v1/table", false},
	{"POST", "/v1/table/{tb}/declare", true},
	{"POST", "/v1/table/{tb}/create-empty", true},
	{"POST", "/v1/table/{tb}/register", true},
	{"POST", "/v1/table/{tb}/describe", false},
	{"POST", "/v1/table/{tb}/exists", false},
	{"POST", "/v1/table/{tb}/drop", true},
	{"POST", "/v1/table/{tb}/deregister", true},
	{"POST", "/v1/table/{tb}/rename", true},
	{"POST", "/v1/table/{tb}/version/list", false},
	{"POST", "/v1/table/{tb}/version/create", true},
	{"POST", "/v1/table/{tb}/version/describe", false},
	{"POST", "/v1/table/{tb}/version/delete", true},
	{"POST", "/v1/table/{tb}/restore", true},
	{"POST", "/v1/table/{tb}/undrop", true},
	{"POST", "/v1/namespace/{ns}/undrop", true},
	{"POST", "/v1/table/{tb}/branches/create", true},
	{"POST", "/v1/table/{tb}/branches/delete", true},
	{"POST", "/v1/table/version/batch-create", true},
	{"POST", "/v1/table/batch-commit", true},
	{"POST", "/v1/namespace/{ns}/partitioned/create", true},
	{"POST", "/v1/namespace/{ns}/partitioned/describe", false},
	{"POST", "/v1/namespace/{ns}/partitioned/evolve", true},
	{"POST", "/v1/namespace/{ns}/partitioned/resolve", true},
	{"POST", "/v1/namespace/{ns}/partitioned/commit", true},
	{"POST", "/v1/namespace/{ns}/partitioned/plan_scan", false},
	{"POST", "/v1/namespace/{ns}/grants/create", true},
	{"POST", "/v1/namespace/{ns}/grants/delete", true},
	{"POST", "/v1/namespace/{ns}/grants/list", false},
}

// flightActions is every Flight action; true: mutating.
var flightActions = map[string]bool{
	"CreateNamespace": true, "ListNamespaces": false, "DescribeNamespace": false, "NamespaceExists": false,
	"DropNamespace": true, "DeclareTable": true, "RegisterTable": true, "DescribeTable": false,
	"TableExists": false, "ListTables": false, "ListAllTables": false, "DeregisterTable": true,
	"DropTable": true, "RenameTable": true, "CreateTableVersion": true, "DescribeTableVersion": false,
	"ListTableVersions": false, "BatchDeleteTableVersions": true, "BatchCreateTableVersions": true,
	"BatchCommitTables": true, "CreatePartitionedTable": true, "DescribePartitionedTable": false,
	"EvolvePartitionSpec": true, "ResolvePartition": true, "CommitPartitions": true, "PlanScan": false,
	"CreateNamespaceGrant": true, "DeleteNamespaceGrant": true, "ListNamespaceGrants": false,
	"RestoreTable": true, "CreateTableBranch": true, "DeleteTableBranch": true,
	"UndropTable": true, "UndropNamespace": true,
}

const (
	adminToken = "admin-token-0123456789abcdef"
	writeToken = "write-token-0123456789abcdef"
	readToken  = "read-token-0123456789abcdef"
)

// hostileServer runs the binary with an auth file, a namespace "ns" and a
// table "ns$t" with one version; it returns the users' bcrypt hashes, as
// the auth file holds them.
func hostileServer(t *testing.T) (*server, string, *catalog, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.json")
	hashes := map[string]string{"ana": hashPassword(t, "ana-password-123"), "bea": hashPassword(t, "bea-password-456")}
	a := map[string]any{
		"tokens": []map[string]string{
			{"token": adminToken, "name": "admin", "role": "admin"},
			{"token": writeToken, "name": "writer", "role": "write"},
			{"token": readToken, "name": "reader", "role": "read"},
		},
		"users": []map[string]string{
			{"name": "ana", "password": hashes["ana"], "role": "admin"},
			{"name": "bea", "password": hashes["bea"], "role": "read"},
		},
	}
	b, _ := json.Marshal(a)
	if err := os.WriteFile(authFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	srv := startServer(t, nil, "--data", data, "--auth-file", authFile, "--max-body-bytes", "1048576", "--max-message-bytes", "1048576")
	root := filepath.Join(data, "root")
	rc := newREST(srv.rest)
	rc.header.Set("Authorization", "Bearer "+adminToken)
	rc.must(t, "/v1/namespace/ns/create", map[string]any{}, nil)
	var d struct{ Location string }
	rc.must(t, "/v1/table/ns$t/declare", map[string]any{}, &d)
	st := openStore(t, "file://"+root)
	cat := &catalog{ns: "ns", ids: [][]string{{"ns", "t"}}, locs: []string{strings.TrimSuffix(d.Location, "/")},
		keys: []string{filepath.Base(strings.TrimSuffix(d.Location, "/"))}, store: st}
	p, err := cat.stage(context.Background(), 0, 0, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	rc.must(t, "/v1/table/ns$t/version/create", map[string]any{"version": 1, "manifest_path": p, "manifest_size": 64}, nil)
	return srv, root, cat, hashes
}

// snapshot is the catalog as far as a client and the disk can tell: every
// file under the root with its size, and the listings. It is taken once
// the server is caught up, so a version row still lingering in the commit
// log does not land on disk between two snapshots.
func snapshot(t *testing.T, srv *server, root string) string {
	t.Helper()
	caughtUp(t, srv)
	var files []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err == nil {
			files = append(files, fmt.Sprintf("%s %d", strings.TrimPrefix(p, root), info.Size()))
		}
		return nil
	})
	sort.Strings(files)
	rc := newREST(srv.rest)
	rc.header.Set("Authorization", "Bearer "+adminToken)
	var sb strings.Builder
	sb.WriteString(strings.Join(files, "\n"))
	for _, p := range []string{"/v1/table?include_declared=true", "/v1/namespace/%24/list", "/v1/namespace/ns/list", "/v1/table/ns$t/version/list"} {
		r, err := rc.do(context.Background(), http.MethodGet, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "\n%s: %d %s", p, r.Status, r.Body)
	}
	return sb.String()
}

// caughtUp returns once every change acknowledged before it is durable
// on disk and visible to SQL: a Flight SQL query with the consistency
// "latest" (read-your-writes) answers only then.
func caughtUp(t *testing.T, srv *server) {
	t.Helper()
	c, err := flightsql.NewClient(srv.flight, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+adminToken, flightserver.ConsistencyHeader, "latest")
	info, err := c.Execute(ctx, "SELECT 1")
	if err != nil {
		t.Fatalf("waiting for the catalog to catch up: %v", err)
	}
	r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatalf("waiting for the catalog to catch up: %v", err)
	}
	defer r.Release()
	for r.Next() {
	}
	if err := r.Err(); err != nil {
		t.Fatalf("waiting for the catalog to catch up: %v", err)
	}
}

func fill(p string) string {
	return strings.NewReplacer("{ns}", "ns", "{tb}", "ns$t").Replace(p)
}

// hashPassword is what `flightns hash-password` prints for pw.
func hashPassword(t *testing.T, pw string) string {
	t.Helper()
	cmd := exec.Command(binary, "hash-password")
	cmd.Stdin = strings.NewReader(pw + "\n")
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "$2a$") {
		t.Fatalf("flightns hash-password: %q, %v", out, err)
	}
	return strings.TrimSpace(string(out))
}

// Every route and every RPC refuses callers without valid credentials,
// and read-only callers on every mutation; oversized and malformed bodies,
// path traversal and bucket escapes are refused with 4xx codes; the server
// stays up and the catalog is unchanged.
func TestHostileInput(t *testing.T) {
	srv, root, cat, hashes := hostileServer(t)
	before := snapshot(t, srv, root)
	ctx := context.Background()
	n := 0

	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	// The auth file holds bcrypt hashes: the password logs in, on REST
	// and Flight, and the hash itself does not.
	bea := newREST(srv.rest)
	bea.header.Set("Authorization", basic("bea", "bea-password-456"))
	bea.must(t, "/v1/namespace/ns/describe", map[string]any{}, nil)
	if _, err := newFlight(t, srv.flight, "authorization", basic("bea", "bea-password-456")).action(ctx, "DescribeTable", []byte(`{"id":["ns","t"]}`)); err != nil {
		t.Fatalf("Flight with bea's password: %v", err)
	}
	badCreds := []http.Header{
		{},
		{"Authorization": {"Bearer wrong-token"}},
		{"Authorization": {"Bearer "}},
		{"Authorization": {"Bearer " + strings.ToUpper(adminToken)}},
		{"Authorization": {"Bearer " + adminToken + "x"}},
		{"Authorization": {"Bearer " + adminToken[:len(adminToken)-1]}},
		{"Authorization": {basic("ana", "wrong")}},
		{"Authorization": {basic("ana", "")}},
		{"Authorization": {basic("bea", hashes["bea"])}}, // what the auth file holds
		{"Authorization": {basic("", "ana-password-123")}},
		{"Authorization": {"Basic !!!not-base64"}},
		{"Authorization": {"Digest username=ana"}},
		{"Authorization": {"Bearer wrong-token"}, "X-Api-Key": {adminToken}}, // Authorization wins
		{"X-Api-Key": {"wrong"}},
		{"X-Api-Key": {""}},
		{"Identity": {adminToken}},
	}
	// A password guess (Basic) is refused as Unauthenticated until its
	// user name has failed ten times within a minute, then as Throttling
	// (auth/limit.go): the routes below guess far more often than that.
	isGuess := func(v string) bool { return strings.HasPrefix(v, "Basic ") && v != "Basic !!!not-base64" }
	throttled := 0
	body := []byte(`{"id":["ns","t"],"version":2,"manifest_path":"x"}`)
	for _, r := range restRoutes {
		for i, h := range badCreds {
			rc := newREST(srv.rest)
			rc.header = h
			rep, err := rc.do(ctx, r.method, fill(r.path), body)
			n++
			if err != nil {
				t.Fatalf("%s %s: %v", r.method, r.path, err)
			}
			if isGuess(h.Get("Authorization")) && rep.Status == http.StatusTooManyRequests && rep.Code == 21 {
				throttled++
				continue
			}
			if rep.Status != http.StatusUnauthorized || rep.Code != 16 {
				t.Errorf("%s %s with bad credentials #%d: HTTP %d %s, want 401 code 16", r.method, r.path, i, rep.Status, rep.Body)
			}
		}
		if r.write {
			rc := newREST(srv.rest)
			rc.header.Set("Authorization", "Bearer "+readToken)
			rep, err := rc.do(ctx, r.method, fill(r.path), body)
			n++
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status != http.StatusForbidden || rep.Code != 15 {
				t.Errorf("%s %s as a reader: HTTP %d %s, want 403 code 15", r.method, r.path, rep.Status, rep.Body)
			}
		}
	}

	if throttled == 0 {
		t.Error("no password guess was throttled, after ten failures of a name and many more")
	}

	// Malformed and oversized bodies on every route, as the admin.
	admin := newREST(srv.rest)
	admin.header.Set("Authorization", "Bearer "+adminToken)
	malformed := [][]byte{
		[]byte(`{`), []byte(`[]`), []byte(`"x"`), []byte(`42`), []byte(`{"id":5}`), []byte(`{"id":[1,2]}`),
		[]byte(`{"id":{"a":"b"}}`), []byte("\xff\xfe\x00garbage"), []byte(`{"id":["ns"],}`),
		bytes.Repeat([]byte("["), 100000),
		append(append([]byte(`{"properties":{"k":"`), bytes.Repeat([]byte("v"), 2<<20)...), `"}}`...), // over the 1 MiB limit
	}
	for _, r := range restRoutes {
		for i, b := range malformed {
			rep, err := admin.do(ctx, r.method, fill(r.path), b)
			n++
			if err != nil {
				t.Fatalf("%s %s malformed #%d: %v", r.method, r.path, i, err)
			}
			if rep.Status >= 500 || (r.write && rep.Status == http.StatusOK) {
				t.Errorf("%s %s malformed #%d: HTTP %d %.200s, want a 4xx refusal", r.method, r.path, i, rep.Status, rep.Body)
			}
			if i == len(malformed)-1 && rep.Status != http.StatusRequestEntityTooLarge {
				t.Errorf("%s %s oversized: HTTP %d, want 413", r.method, r.path, rep.Status)
			}
		}
	}

	// Invalid ids on every route: control characters, empty names, too
	// long, too deep.
	ids := []string{"%00", "ns%24%0a", "ns%24%7f", "ns%24%24t", "%24ns", "ns%24", strings.Repeat("a", 5000),
		strings.Repeat("a%24", 300) + "a"}
	for _, r := range restRoutes {
		if !strings.Contains(r.path, "{") {
			continue
		}
		for _, id := range ids {
			p := strings.NewReplacer("{ns}", id, "{tb}", id).Replace(r.path)
			rep, err := admin.do(ctx, r.method, p, []byte(`{}`))
			n++
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status != http.StatusBadRequest && rep.Status != http.StatusNotFound {
				t.Errorf("%s %.100s: HTTP %d %.200s, want 400 or 404", r.method, p, rep.Status, rep.Body)
			}
		}
	}

	// Locations and manifest paths outside the root, in other buckets, in
	// the catalog's own directories.
	tableDir := filepath.Join(root, cat.keys[0])
	locations := []string{"../outside", "../../etc", "/etc", "file:///etc", "file://" + root + "/../outside",
		"file://otherhost" + root + "/x", "s3://other-bucket/x", "s3://" + root + "/x", "mem://x", "http://127.0.0.1/x",
		"file://" + root + "/__manifest", "__manifest/_log", cat.keys[0] + "/_versions/x", "file://" + root,
		"x/../../outside", "%2e%2e/outside", "file://" + root + "/a/%2e%2e/%2e%2e/outside"}
	for _, loc := range locations {
		for _, p := range []string{"/v1/table/ns$evil/declare", "/v1/table/ns$evil/register"} {
			rep, err := admin.post(ctx, p, map[string]any{"location": loc})
			n++
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status != http.StatusBadRequest || rep.Code != 13 {
				t.Errorf("POST %s location %q: HTTP %d %.200s, want 400 code 13", p, loc, rep.Status, rep.Body)
			}
		}
	}
	manifests := []string{"/etc/passwd", "../../etc/passwd", "file:///etc/passwd", "file://" + root + "/../x.manifest-1",
		"s3://other/x", tableDir + "/../../outside/_versions/18446744073709551613.manifest-x",
		tableDir + "/_versions/../../" + cat.keys[0] + "/_versions/18446744073709551613.manifest-x",
		"__manifest/_log/00000000000000000001.parquet", tableDir + "/_versions/18446744073709551614.manifest",
		strings.TrimPrefix(tableDir, "/") + "/../../../../etc/passwd", "file://" + tableDir + "/_versions/%2e%2e/x"}
	for _, m := range manifests {
		for _, p := range []string{"/v1/table/ns$t/version/create", "/v1/table/version/batch-create"} {
			var b any = map[string]any{"version": 2, "manifest_path": m, "manifest_size": 1}
			if strings.Contains(p, "batch") {
				b = map[string]any{"entries": []any{map[string]any{"id": []string{"ns", "t"}, "version": 2, "manifest_path": m, "manifest_size": 1}}}
			}
			rep, err := admin.post(ctx, p, b)
			n++
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status == http.StatusOK || rep.Status >= 500 {
				t.Errorf("POST %s manifest_path %q: HTTP %d %.200s, want a 4xx refusal", p, m, rep.Status, rep.Body)
			}
		}
	}

	// Flight: every action and RPC without (or with wrong) credentials,
	// every mutation as a reader, malformed and oversized bodies.
	for _, md := range [][]string{nil, {"authorization", "Bearer wrong"}, {"authorization", basic("ana", "nope")},
		{"x-api-key", "wrong"}, {"auth-token-bin", "wrong"}} {
		fc := newFlight(t, srv.flight, md...)
		// A guess of ana's password is throttled by now (the REST
		// guesses above).
		want := codes.Unauthenticated
		if len(md) == 2 && isGuess(md[1]) {
			want = codes.ResourceExhausted
		}
		for a := range flightActions {
			_, err := fc.action(ctx, a, []byte(`{"id":["ns","t"]}`))
			n++
			if status.Code(err) != want {
				t.Errorf("action %s with credentials %v: %v, want %v", a, md, err, want)
			}
		}
		for name, call := range flightRPCs(fc) {
			n++
			if err := call(ctx); status.Code(err) != want {
				t.Errorf("%s with credentials %v: %v, want %v", name, md, err, want)
			}
		}
	}
	reader := newFlight(t, srv.flight, "authorization", "Bearer "+readToken)
	adminF := newFlight(t, srv.flight, "authorization", "Bearer "+adminToken)
	for a, mut := range flightActions {
		if mut {
			_, err := reader.action(ctx, a, []byte(`{"id":["ns","t2"]}`))
			n++
			if status.Code(err) != codes.PermissionDenied {
				t.Errorf("action %s as a reader: %v, want PermissionDenied", a, err)
			}
		}
		for i, b := range malformed {
			_, err := adminF.action(ctx, a, b)
			n++
			switch status.Code(err) {
			case codes.InvalidArgument, codes.NotFound, codes.ResourceExhausted, codes.Aborted, codes.FailedPrecondition, codes.AlreadyExists, codes.Unimplemented:
			case codes.OK:
				if mut {
					t.Errorf("action %s malformed #%d succeeded", a, i)
				}
			default:
				t.Errorf("action %s malformed #%d: %v, want a client error", a, i, err)
			}
		}
	}
	if _, err := adminF.action(ctx, "NoSuchAction", nil); status.Code(err) == codes.OK || status.Code(err) == codes.Internal {
		t.Errorf("unknown action: %v", err)
	}

	srv.mustReady(10 * time.Second)
	after := snapshot(t, srv, root)
	if before != after {
		t.Errorf("the catalog changed under hostile requests:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	t.Logf("%d hostile requests refused; catalog unchanged", n)

	// Ids that look like traversal are plain names: their tables stay
	// directly under the root.
	for i, id := range []string{"..", ".", "ns%24..", "ns%24t%2F..%2F..%2Fetc", "ns%24%2e%2e", "ns%24..%5C..%5Cwin"} {
		if i < 2 {
			rep, _ := admin.post(ctx, "/v1/namespace/"+id+"/create", map[string]any{})
			if rep.Status != http.StatusOK && rep.Status != http.StatusBadRequest {
				t.Errorf("create namespace %q: HTTP %d %s", id, rep.Status, rep.Body)
			}
			continue
		}
		rep, err := admin.post(ctx, "/v1/table/"+id+"/declare", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Status == http.StatusBadRequest {
			continue
		}
		var d struct{ Location string }
		if rep.Status != http.StatusOK || json.Unmarshal(rep.Body, &d) != nil {
			t.Fatalf("declare %q: HTTP %d %s", id, rep.Status, rep.Body)
		}
		u, err := url.Parse(d.Location)
		if err != nil || u.Scheme != "file" || path.Dir(path.Clean(u.Path)) != root || strings.Contains(strings.ToLower(u.RawPath), "%2e") {
			t.Errorf("table %q declared at %q, not directly under the root %s", id, d.Location, root)
		}
	}
}

// flightRPCs are the Flight RPCs other than DoAction, each run to its
// first answer.
func flightRPCs(c *flightClient) map[string]func(ctx context.Context) error {
	first := func(recv func() error) error {
		err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("SELECT 1")}
	return map[string]func(ctx context.Context) error{
		"Handshake": func(ctx context.Context) error {
			s, err := c.Handshake(c.ctx(ctx))
			if err != nil {
				return err
			}
			_ = s.Send(&flight.HandshakeRequest{Payload: []byte("x")})
			return first(func() error { _, err := s.Recv(); return err })
		},
		"ListFlights": func(ctx context.Context) error {
			s, err := c.ListFlights(c.ctx(ctx), &flight.Criteria{})
			if err != nil {
				return err
			}
			return first(func() error { _, err := s.Recv(); return err })
		},
		"GetFlightInfo": func(ctx context.Context) error { _, err := c.GetFlightInfo(c.ctx(ctx), desc); return err },
		"GetSchema":     func(ctx context.Context) error { _, err := c.GetSchema(c.ctx(ctx), desc); return err },
		"PollFlightInfo": func(ctx context.Context) error {
			_, err := c.PollFlightInfo(c.ctx(ctx), desc)
			return err
		},
		"DoGet": func(ctx context.Context) error {
			s, err := c.DoGet(c.ctx(ctx), &flight.Ticket{Ticket: []byte("x")})
			if err != nil {
				return err
			}
			return first(func() error { _, err := s.Recv(); return err })
		},
		"DoPut": func(ctx context.Context) error {
			s, err := c.DoPut(c.ctx(ctx))
			if err != nil {
				return err
			}
			_ = s.Send(&flight.FlightData{FlightDescriptor: desc})
			_ = s.CloseSend()
			return first(func() error { _, err := s.Recv(); return err })
		},
		"DoExchange": func(ctx context.Context) error {
			s, err := c.DoExchange(c.ctx(ctx))
			if err != nil {
				return err
			}
			_ = s.Send(&flight.FlightData{FlightDescriptor: desc})
			_ = s.CloseSend()
			return first(func() error { _, err := s.Recv(); return err })
		},
		"ListActions": func(ctx context.Context) error {
			s, err := c.ListActions(c.ctx(ctx), &flight.Empty{})
			if err != nil {
				return err
			}
			return first(func() error { _, err := s.Recv(); return err })
		},
	}
}

// On an s3:// root, locations and manifest paths in another bucket, or in
// the same bucket outside the catalog's prefix, are refused, and so are
// object-store paths that climb out of the prefix.
func TestBucketEscapes(t *testing.T) {
	s3 := s3test.Start(t, "lake", "other")
	srv := startServer(t, nil, "--redis", redistest.Start(t).URL(), "--root", s3.URI("lake", "cat"))
	rc := newREST(srv.rest)
	rc.must(t, "/v1/namespace/ns/create", map[string]any{}, nil)
	var d struct{ Location string }
	rc.must(t, "/v1/table/ns$t/declare", map[string]any{}, &d)
	ctx := context.Background()
	for _, loc := range []string{"s3://other/cat/x", "s3://other/x", "s3://lake/x", "s3://lake/catalog/x", "s3://lake/cat/../x",
		"s3://lake/cat/%2e%2e/x", "lake/cat/../x", "../x", "file:///etc", "s3://lake/cat/__manifest", "s3://LAKE/cat/x"} {
		rep, err := rc.post(ctx, "/v1/table/ns$evil/declare", map[string]any{"location": loc})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Status != http.StatusBadRequest || rep.Code != 13 {
			t.Errorf("declare at %q: HTTP %d %.200s, want 400 code 13", loc, rep.Status, rep.Body)
		}
	}
	key := path.Base(strings.TrimSuffix(d.Location, "/"))
	for _, m := range []string{"s3://other/cat/" + key + "/_versions/18446744073709551614.manifest-x",
		"s3://lake/elsewhere/_versions/18446744073709551614.manifest-x", "other/cat/" + key + "/_versions/18446744073709551614.manifest-x",
		"lake/cat/../" + key + "/_versions/18446744073709551614.manifest-x", "/lake/cat/" + key + "/_versions/18446744073709551614.manifest-x"} {
		rep, err := rc.post(ctx, "/v1/table/ns$t/version/create", map[string]any{"version": 1, "manifest_path": m, "manifest_size": 1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Status == http.StatusOK || rep.Status >= 500 {
			t.Errorf("create with manifest_path %q: HTTP %d %.200s, want a 4xx refusal", m, rep.Status, rep.Body)
		}
	}
	// Nothing was written to the other bucket.
	other := openStore(t, s3.URI("other", ""))
	if all, err := other.ListAll(ctx, ""); err != nil || len(all) != 0 {
		t.Fatalf("the other bucket holds %d objects (%v)", len(all), err)
	}
}

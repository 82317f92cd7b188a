package restserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/nserror"
)

// TestErrorCodes: every error this surface can produce, with its exact
// Lance code and the HTTP status of that code.
func TestErrorCodes(t *testing.T) {
	s := startServer(t, withMaxBody(4096))
	key := s.declareOrders()
	s.commit(pOrders, key, 1, "one")
	ok(t, "a table to make prod non-empty", s.post("/v1/table/prod%24t/declare"+dq, nil))

	for _, tc := range []struct {
		name         string
		method, path string
		body         any
		code, status int
	}{
		// 0 Unsupported: data-plane and unknown operations, unknown routes.
		{"insert over REST", "POST", pOrders + "/insert" + dq, "", 0, 406},
		{"count_rows over REST", "GET", pOrders + "/count_rows" + dq, nil, 0, 406},
		{"query over REST", "POST", pOrders + "/query" + dq, "{}", 0, 406},
		{"create with Arrow data", "POST", pOrders + "/create" + dq, "ARROW", 0, 406},
		{"an index operation", "POST", pOrders + "/index/idx/stats" + dq, nil, 0, 406},
		{"a namespace operation that does not exist", "POST", pProd + "/frobnicate" + dq, nil, 0, 406},
		{"transactions", "POST", "/v1/transaction/abc/describe" + dq, nil, 0, 406},
		{"a path outside /v1", "GET", "/v2/table", nil, 0, 404},
		{"a table without an operation", "POST", "/v1/table/x", nil, 0, 404},
		// 1 NamespaceNotFound.
		{"describe a missing namespace", "POST", "/v1/namespace/nope/describe" + dq, nil, 1, 404},
		{"list inside a missing namespace", "GET", "/v1/namespace/nope/list" + dq, nil, 1, 404},
		{"declare in a missing namespace", "POST", "/v1/table/nope%24t/declare" + dq, nil, 1, 404},
		{"drop a missing namespace", "POST", "/v1/namespace/nope/drop" + dq, nil, 1, 404},
		// 2 NamespaceAlreadyExists.
		{"create an existing namespace", "POST", pProd + "/create" + dq, nil, 2, 409},
		{"create the root", "POST", pRoot + "/create" + dq, `{"id":[]}`, 2, 409},
		// 3 NamespaceNotEmpty.
		{"drop a namespace with a table", "POST", pProd + "/drop" + dq, nil, 3, 409},
		// 4 TableNotFound.
		{"describe a missing table", "POST", "/v1/table/prod%24nope/describe" + dq, nil, 4, 404},
		{"version/list of a missing table", "POST", "/v1/table/prod%24nope/version/list" + dq + "&limit=1&descending=true", "null", 4, 404},
		{"version/create on a missing table", "POST", "/v1/table/prod%24nope/version/create" + dq, `{"version":1,"manifest_path":"x"}`, 4, 404},
		{"drop a missing table", "POST", "/v1/table/prod%24nope/drop" + dq, nil, 4, 404},
		{"rename a missing table", "POST", "/v1/table/prod%24nope/rename" + dq, `{"new_table_name":"x"}`, 4, 404},
		{"restore a missing table", "POST", "/v1/table/prod%24nope/restore" + dq, `{"version":1}`, 4, 404},
		{"branch a missing table", "POST", "/v1/table/prod%24nope/branches/create" + dq, `{"name":"dev"}`, 4, 404},
		{"delete a branch of a missing table", "POST", "/v1/table/prod%24nope/branches/delete" + dq, `{"name":"dev"}`, 4, 404},
		{"list the versions of a branch that does not exist", "POST", pOrders + "/version/list" + dq + "&branch=ghost", "null", 22, 404},
		// 5 TableAlreadyExists.
		{"declare an existing table", "POST", pOrders + "/declare" + dq, nil, 5, 409},
		{"rename onto an existing table", "POST", "/v1/table/prod%24t/rename" + dq, `{"new_table_name":"orders","new_namespace_id":["prod","sales"]}`, 5, 409},
		// 11 TableVersionNotFound.
		{"describe a missing version", "POST", pOrders + "/version/describe" + dq, `{"version":7}`, 11, 404},
		{"exists at a missing version", "POST", pOrders + "/exists" + dq, `{"version":7}`, 11, 404},
		// 13 InvalidInput.
		{"an empty name in the id", "POST", "/v1/table/prod%24%24t/describe" + dq, nil, 13, 400},
		{"an empty id", "POST", "/v1/namespace//describe" + dq, nil, 13, 400},
		{"a body id that disagrees", "POST", pOrders + "/describe" + dq, `{"id":["prod","sales","other"]}`, 13, 400},
		{"a root body id on a table path", "POST", pOrders + "/describe" + dq, `{"id":[]}`, 13, 400},
		{"a body that is not JSON", "POST", pOrders + "/describe" + dq, "{nope", 13, 400},
		{"a body that is an array", "POST", pOrders + "/describe" + dq, "[1]", 13, 400},
		{"trailing data after the body", "POST", pOrders + "/describe" + dq, "{} {}", 13, 400},
		{"a field of the wrong type", "POST", pOrders + "/version/describe" + dq, `{"version":"two"}`, 13, 400},
		{"a limit that is not a number", "GET", pRoot + "/list" + dq + "&limit=ten", nil, 13, 400},
		{"a limit beyond 32 bits", "GET", pRoot + "/list" + dq + "&limit=99999999999", nil, 13, 400},
		{"a negative limit", "GET", pRoot + "/list" + dq + "&limit=-1", nil, 13, 400},
		{"a flag that is not a boolean", "POST", pOrders + "/describe" + dq + "&with_table_uri=maybe", nil, 13, 400},
		{"a bad page token", "POST", pOrders + "/version/list" + dq + "&page_token=x", "null", 13, 400},
		{"a delimiter with a control character", "POST", pOrders + "/describe?delimiter=%0A", nil, 13, 400},
		{"a table id that is the root", "POST", "/v1/table/%24/describe" + dq, nil, 13, 400},
		{"an unknown mode", "POST", "/v1/namespace/x/create" + dq, `{"mode":"Sometimes"}`, 13, 400},
		{"a version that skips one", "POST", pOrders + "/version/create" + dq, `{"version":3,"manifest_path":"` + s.stage(key, 3, "three") + `"}`, 13, 400},
		{"a staging manifest that does not exist", "POST", pOrders + "/version/create" + dq, `{"version":2,"manifest_path":"` + strings.TrimPrefix(s.Root, "/") + "/" + key + `/_versions/missing.manifest-x"}`, 13, 400},
		{"a manifest outside the root", "POST", pOrders + "/version/create" + dq, `{"version":2,"manifest_path":"etc/passwd"}`, 13, 400},
		{"a location outside the root", "POST", "/v1/table/prod%24evil/declare" + dq, `{"location":"/etc"}`, 13, 400},
		{"an empty batch", "POST", "/v1/table/batch-commit" + dq, `{"operations":[]}`, 13, 400},
		{"a batch-create without entries", "POST", "/v1/table/version/batch-create" + dq, `{}`, 13, 400},
		{"a body over the limit", "POST", pOrders + "/describe" + dq, `{"context":{"x":"` + strings.Repeat("x", 5000) + `"}}`, 13, 413},
		{"GET on a mutation", "GET", pProd + "/create" + dq, nil, 13, 405},
		{"PUT on a read", "PUT", pOrders + "/describe" + dq, nil, 13, 405},
		// 14 ConcurrentModification: only when the version exists.
		{"a version that is taken", "POST", pOrders + "/version/create" + dq, `{"version":1,"manifest_path":"` + s.stage(key, 1, "other bytes") + `"}`, 14, 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(tc.method, tc.path, tc.body)
			wantError(t, tc.name, r, tc.code, tc.status)
			if tc.status == http.StatusMethodNotAllowed && r.header.Get("Allow") == "" {
				t.Fatalf("405 without an Allow header")
			}
		})
	}

	// The taken version is the first writer's, untouched.
	var dv api.DescribeTableVersionResponse
	ok(t, "version 1", s.post(pOrders+"/version/describe"+dq, `{"version":1}`)).decode(t, &dv)
	if *dv.Version.ManifestSize != int64(len("one")) {
		t.Fatalf("version 1 changed: %+v", dv.Version)
	}
}

// TestCreateTableVersionConflictsOnlyWhenTaken: Lance rebases on code 14
// and fails on anything else after re-describing the version, so 14 must
// mean "that version exists" and a retry of one's own commit succeeds.
func TestCreateTableVersionConflictsOnlyWhenTaken(t *testing.T) {
	s := startServer(t)
	key := s.declareOrders()
	staged := s.stage(key, 1, "mine")
	body := map[string]any{"version": 1, "manifest_path": staged, "manifest_size": 4, "naming_scheme": "V2"}
	var first, retry api.CreateTableVersionResponse
	ok(t, "commit", s.post(pOrders+"/version/create"+dq, body)).decode(t, &first)
	ok(t, "the same request again (an unknown outcome retried)", s.post(pOrders+"/version/create"+dq, body)).decode(t, &retry)
	if retry.Version.ManifestPath != first.Version.ManifestPath {
		t.Fatalf("a retried commit answered %+v, first %+v", retry.Version, first.Version)
	}
	r := s.post(pOrders+"/version/create"+dq, map[string]any{"version": 1, "manifest_path": s.stage(key, 1, "theirs")})
	wantError(t, "another writer's version 1", r, 14, 409)
	ok(t, "and version 1 exists", s.post(pOrders+"/version/describe"+dq, `{"version":1}`))
	r = s.post(pOrders+"/version/create"+dq, map[string]any{"version": 5, "manifest_path": s.stage(key, 5, "gap")})
	wantError(t, "a version far ahead", r, 13, 400)
	wantError(t, "is not a conflict: version 5 does not exist", s.post(pOrders+"/version/describe"+dq, `{"version":5}`), 11, 404)
}

// TestAuthErrors: 16 without or with bad credentials, 15 for a role too
// low; Bearer, Basic and x-api-key all work.
func TestAuthErrors(t *testing.T) {
	a, err := auth.New(auth.Config{
		Tokens: []auth.TokenEntry{{Token: "reader-token-1", Name: "r", Role: "read"}, {Token: "writer-token-1", Name: "w", Role: "write"}},
		Users:  []auth.UserEntry{{Name: "ann", Password: "secret", Role: "write"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withAuth(a))
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	list, create := pRoot+"/list"+dq, pProd+"/create"+dq
	for _, tc := range []struct {
		name         string
		path         string
		headers      []string
		code, status int // 0, 200: success
	}{
		{"no credentials", list, nil, 16, 401},
		{"a wrong bearer token", list, []string{"Authorization", "Bearer nope-nope-nope"}, 16, 401},
		{"a wrong api key", list, []string{"X-Api-Key", "nope-nope-nope"}, 16, 401},
		{"a wrong password", list, []string{"Authorization", basic("ann", "guess")}, 16, 401},
		{"malformed basic credentials", list, []string{"Authorization", "Basic !!!"}, 16, 401},
		{"an unknown scheme", list, []string{"Authorization", "Digest abc"}, 16, 401},
		{"a reader reads", list, []string{"Authorization", "Bearer reader-token-1"}, 0, 200},
		{"a reader by api key reads", list, []string{"X-Api-Key", "reader-token-1"}, 0, 200},
		{"a reader writes", create, []string{"Authorization", "Bearer reader-token-1"}, 15, 403},
		{"a reader by api key writes", create, []string{"X-Api-Key", "reader-token-1"}, 15, 403},
		{"a writer writes", create, []string{"Authorization", "Bearer writer-token-1"}, 0, 200},
		{"a basic user writes", "/v1/namespace/ann/create" + dq, []string{"Authorization", basic("ann", "secret")}, 0, 200},
		{"Authorization wins over x-api-key", "/v1/namespace/x/create" + dq, []string{"Authorization", "Bearer reader-token-1", "X-Api-Key", "writer-token-1"}, 15, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodPost
			if tc.path == list {
				method = http.MethodGet
			}
			r := s.do(method, tc.path, nil, tc.headers...)
			if tc.status == 200 {
				ok(t, tc.name, r)
				return
			}
			wantError(t, tc.name, r, tc.code, tc.status)
			if tc.code == 16 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without WWW-Authenticate: %v", r.header)
			}
		})
	}
	// Nothing reached the service before authentication: no namespace was
	// created by the refused callers.
	var l api.ListNamespacesResponse
	ok(t, "list", s.do(http.MethodGet, list, nil, "Authorization", "Bearer reader-token-1")).decode(t, &l)
	if strings.Join(l.Namespaces, ",") != "ann,prod" {
		t.Fatalf("namespaces: %v", l.Namespaces)
	}
}

// TestReadersCannotChangeTags: a reader lists tags, reads a tag's version
// and lists branches; creating, moving or deleting a tag, deleting
// versions, restoring one, or creating or deleting a branch needs the
// write role, and a refusal changes nothing.
func TestReadersCannotChangeTags(t *testing.T) {
	a, err := auth.New(auth.Config{Tokens: []auth.TokenEntry{
		{Token: "reader-token-1", Name: "r", Role: "read"}, {Token: "writer-token-1", Name: "w", Role: "write"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withAuth(a))
	writer := []string{"Authorization", "Bearer writer-token-1"}
	reader := []string{"Authorization", "Bearer reader-token-1"}
	ok(t, "create prod", s.post(pProd+"/create"+dq, nil, writer...))
	ok(t, "create prod$sales", s.post(pSales+"/create"+dq, nil, writer...))
	var d api.DeclareTableResponse
	ok(t, "declare", s.post(pOrders+"/declare"+dq, nil, writer...)).decode(t, &d)
	key := s.keyOf(d.Location)
	for v := uint64(1); v <= 2; v++ {
		ok(t, "commit", s.post(pOrders+"/version/create"+dq, map[string]any{"version": v, "manifest_path": s.stage(key, v, "m")}, writer...))
	}
	ok(t, "tag", s.post(pOrders+"/tags/create"+dq, map[string]any{"tag": "first", "version": 1}, writer...))
	for _, r := range []struct{ route, body string }{
		{"/tags/list", `{}`},
		{"/tags/version", `{"tag":"first"}`},
		{"/branches/list", `{}`},
	} {
		ok(t, "a reader: "+r.route, s.post(pOrders+r.route+dq, r.body, reader...))
	}
	for _, r := range []struct{ route, body string }{
		{"/tags/create", `{"tag":"second","version":2}`},
		{"/tags/update", `{"tag":"first","version":2}`},
		{"/tags/delete", `{"tag":"first"}`},
		{"/version/delete", `{"ranges":[{"start_version":1,"end_version":2}]}`},
		{"/restore", `{"version":1}`},
		{"/branches/create", `{"name":"dev"}`},
		{"/branches/delete", `{"name":"dev"}`},
	} {
		wantError(t, "a reader: "+r.route, s.post(pOrders+r.route+dq, r.body, reader...), 15, 403)
	}
	var list api.ListTableTagsResponse
	ok(t, "tags", s.post(pOrders+"/tags/list"+dq, `{}`, reader...)).decode(t, &list)
	if len(list.Tags) != 1 || list.Tags["first"].Version != 1 {
		t.Fatalf("the tags changed: %+v", list.Tags)
	}
	var versions api.ListTableVersionsResponse
	ok(t, "versions", s.post(pOrders+"/version/list"+dq, `{}`, reader...)).decode(t, &versions)
	if len(versions.Versions) != 2 {
		t.Fatalf("the versions changed: %+v", versions.Versions)
	}
}

// TestServiceUnavailable: with Redis out of reach, the answer is 17 (503,
// Retry-After): the client may retry. Once it is back, requests succeed.
func TestServiceUnavailable(t *testing.T) {
	s := startServer(t)
	ok(t, "create", s.post(pProd+"/create"+dq, nil))
	if err := s.Redis.Kill(); err != nil {
		t.Fatal(err)
	}
	r := s.post(pProd+"/describe"+dq, nil)
	wantError(t, "describe with Redis down", r, 17, 503)
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After")
	}
	s.Redis.Restart()
	ok(t, "describe with Redis back (its state recovered from storage)", s.post(pProd+"/describe"+dq, nil))
}

// TestInternalErrors: an error without a code is 18, and a panic in a route
// is answered, not propagated.
func TestInternalErrors(t *testing.T) {
	h := &handler{log: quiet}
	rec := httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("POST", "/v1/x", nil), errors.New("disk on fire"))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":18`) {
		t.Fatalf("an error without a code: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("POST", "/v1/x", nil), context.DeadlineExceeded)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"code":17`) {
		t.Fatalf("a deadline: %d %s", rec.Code, rec.Body)
	}
	// A request its client gave up on is not a failure of the server:
	// 499, logged at debug; the same error with the client still there
	// is one.
	var logBuf bytes.Buffer
	h.log = slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	gone, hangUp := context.WithCancel(context.Background())
	hangUp()
	rec = httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("POST", "/v1/x", nil).WithContext(gone), fmt.Errorf("redisclaim: claim: %w", context.Canceled))
	if rec.Code != 499 || logBuf.Len() != 0 {
		t.Fatalf("the client went away: %d %s; log: %s", rec.Code, rec.Body, logBuf.String())
	}
	rec = httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("POST", "/v1/x", nil), fmt.Errorf("redisclaim: claim: %w", context.Canceled))
	if rec.Code != 500 || !strings.Contains(logBuf.String(), "request failed") {
		t.Fatalf("cancelled inside, the client still there: %d %s; log: %s", rec.Code, rec.Body, logBuf.String())
	}
	h.log = quiet
	rec = httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("POST", "/v1/x", nil), nserror.New(nserror.Throttling, "slow down"))
	if rec.Code != 429 || !strings.Contains(rec.Body.String(), `"code":21`) {
		t.Fatalf("throttling: %d %s", rec.Code, rec.Body)
	}

	s := startServer(t)
	tableRoutes["panic"] = route{name: "Panic", run: func(context.Context, *handler, []byte, *namespace.REST) (any, error) { panic("boom") }}
	t.Cleanup(func() { delete(tableRoutes, "panic") })
	wantError(t, "a panicking route", s.post("/v1/table/t/panic"+dq, nil), 18, 500)
	ok(t, "the server still serves", s.do(http.MethodGet, pRoot+"/list"+dq, nil))
}

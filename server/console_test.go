package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/google/uuid"

	"github.com/flightns/flightns/internal/console"
	"github.com/flightns/flightns/server"
)

// consoleUser is a browser of the console: its cookie jar.
type consoleUser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newConsoleUser(t *testing.T, srv *server.Server) *consoleUser {
	jar, _ := cookiejar.New(nil)
	return &consoleUser{t: t, base: "http://" + srv.ConsoleAddr().String(), c: &http.Client{Jar: jar}}
}

// call sends method path with body as the console's pages do (its
// header, and a body as JSON), changed by edit when given, and returns
// the status and body.
func (u *consoleUser) call(method, path, body string, edit func(*http.Request)) (int, []byte) {
	u.t.Helper()
	req, _ := http.NewRequest(method, u.base+path, strings.NewReader(body))
	req.Header.Set(console.Header, "1")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if edit != nil {
		edit(req)
	}
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// json calls and decodes a 200 answer into out.
func (u *consoleUser) json(method, path, body string, out any) {
	u.t.Helper()
	code, raw := u.call(method, path, body, nil)
	if code != http.StatusOK {
		u.t.Fatalf("%s %s: %d %s", method, path, code, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		u.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
	}
}

func (u *consoleUser) login(body string) {
	u.t.Helper()
	if code, raw := u.call(http.MethodPost, "/api/login", body, nil); code != http.StatusOK {
		u.t.Fatalf("login %s: %d %s", body, code, raw)
	}
}

// apiErr is a failed call's body.
type apiErr struct {
	Error struct {
		Code    int    `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func errOf(raw []byte) apiErr {
	var e apiErr
	_ = json.Unmarshal(raw, &e)
	return e
}

// startConsoleServer runs a server with the console and an auth file of
// an admin token, a writer, a reader and a grant-limited user.
func startConsoleServer(t *testing.T) (*server.Server, func(path, body string) (int, string)) {
	t.Helper()
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"tokens": [{"token": "root-token-1", "name": "root", "role": "admin"}],
		"users": [{"name": "ana", "password": "ana-pw", "role": "write"}, {"name": "rob", "password": "rob-pw", "role": "read"},
		{"name": "lim", "password": "lim-pw", "role": "none"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config(t, filepath.Join(dir, "data"))
	cfg.AuthFile = authFile
	cfg.ConsoleAddr = "127.0.0.1:0"
	cfg.ConsoleSampleEvery = 50 * time.Millisecond
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, restAs(t, srv, "root-token-1")
}

// commitVersions stages and commits versions from..to of table id (as
// its only writer), through REST.
func commitVersions(t *testing.T, root func(path, body string) (int, string), id string, from, to uint64) {
	t.Helper()
	code, out := root("/v1/table/"+id+"/describe", `{}`)
	var d struct{ Location string }
	if err := json.Unmarshal([]byte(out), &d); code != http.StatusOK || err != nil {
		t.Fatalf("describe %s: %d %s", id, code, out)
	}
	for v := from; v <= to; v++ {
		p := stageManifest(t, d.Location, v)
		if code, out := root("/v1/table/"+id+"/version/create", fmt.Sprintf(`{"version": %d, "manifest_path": %q}`, v, p)); code != http.StatusOK {
			t.Fatalf("commit %s v%d: %d %s", id, v, code, out)
		}
	}
}

// stageManifest writes a staging manifest of version v (content that
// names it) in the table directory at location (file://) and returns its
// URI.
func stageManifest(t *testing.T, location string, v uint64) string {
	t.Helper()
	dir := strings.TrimPrefix(location, "file://")
	p := filepath.Join(dir, "_versions", fmt.Sprintf("%020d.manifest-%s", uint64(math.MaxUint64)-v, uuid.NewString()))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(fmt.Sprintf("manifest %s v%d", location, v)), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

// The console refuses what is not its own page's call (no header,
// another origin or site), sends its security headers everywhere, lists
// no directory, and a reader can change nothing through it.
func TestConsoleRefusesCrossSiteCallsAndReadersWrites(t *testing.T) {
	srv, root := startConsoleServer(t)
	if code, out := root("/v1/namespace/a/create", `{}`); code != http.StatusOK {
		t.Fatal(code, out)
	}
	u := newConsoleUser(t, srv)

	// Not logged in; wrong password; the cookie a login sets.
	if code, raw := u.call(http.MethodGet, "/api/session", "", nil); code != http.StatusUnauthorized || errOf(raw).Error.Type != "Unauthenticated" {
		t.Fatalf("session before login: %d %s", code, raw)
	}
	if code, raw := u.call(http.MethodPost, "/api/login", `{"user": "rob", "password": "nope"}`, nil); code != http.StatusUnauthorized {
		t.Fatalf("a wrong password: %d %s", code, raw)
	}
	req, _ := http.NewRequest(http.MethodPost, u.base+"/api/login", strings.NewReader(`{"user": "rob", "password": "rob-pw"}`))
	req.Header.Set(console.Header, "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Path != "/" {
		t.Fatalf("login cookie %+v", ck)
	}
	u.login(`{"user": "rob", "password": "rob-pw"}`)
	var who struct{ Principal, Role string }
	u.json(http.MethodGet, "/api/session", "", &who)
	if who.Principal != "rob" || who.Role != "read" {
		t.Fatalf("session %+v", who)
	}

	// A reader's mutation, through the REST passthrough: 403, nothing made.
	if code, raw := u.call(http.MethodPost, "/api/v1/namespace/x/create", `{}`, nil); code != http.StatusForbidden {
		t.Fatalf("a reader creates a namespace: %d %s", code, raw)
	}
	// A writer may; but never without the header, from another origin
	// or another site, even with its cookie.
	w := newConsoleUser(t, srv)
	w.login(`{"user": "ana", "password": "ana-pw"}`)
	for what, edit := range map[string]func(*http.Request){
		"no header":           func(r *http.Request) { r.Header.Del(console.Header) },
		"another origin":      func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") },
		"the port of another": func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:1") },
		"a null origin":       func(r *http.Request) { r.Header.Set("Origin", "null") },
		"another site":        func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
		"a sibling site":      func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") },
	} {
		code, raw := w.call(http.MethodPost, "/api/v1/namespace/x/create", `{}`, edit)
		if code != http.StatusForbidden || !strings.Contains(errOf(raw).Error.Message, "cross-site") {
			t.Errorf("%s: %d %s", what, code, raw)
		}
	}
	if code, out := root("/v1/namespace/x/exists", `{}`); code != http.StatusNotFound {
		t.Fatalf("x was made by a refused call: %d %s", code, out)
	}
	if code, raw := w.call(http.MethodPost, "/api/v1/namespace/x/create", `{}`, func(r *http.Request) {
		r.Header.Set("Origin", w.base)
		r.Header.Set("Sec-Fetch-Site", "same-origin")
	}); code != http.StatusOK {
		t.Fatalf("the writer's own call: %d %s", code, raw)
	}

	// Headers on pages and calls; no listing; no other method on pages.
	for _, path := range []string{"/", "/api/session", "/nope.js"} {
		req, _ := http.NewRequest(http.MethodGet, u.base+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		h := resp.Header
		if h.Get("Content-Security-Policy") != console.ContentSecurityPolicy || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	if code, _ := u.call(http.MethodGet, "/vendor/", "", nil); code != http.StatusNotFound {
		t.Errorf("a directory: %d", code)
	}
	if code, _ := u.call(http.MethodPost, "/", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", code)
	}

	// A token logs in too; logging out ends the session.
	tk := newConsoleUser(t, srv)
	tk.login(`{"token": "root-token-1"}`)
	tk.json(http.MethodGet, "/api/session", "", &who)
	if who.Principal != "root" || who.Role != "admin" {
		t.Fatalf("token session %+v", who)
	}
	if code, _ := tk.call(http.MethodPost, "/api/logout", "", nil); code != http.StatusNoContent {
		t.Fatalf("logout: %d", code)
	}
	if code, _ := tk.call(http.MethodGet, "/api/session", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("session after logout: %d", code)
	}
	// The token itself is not the console's to end: it still works.
	if code, out := root("/v1/namespace/a/exists", `{}`); code != http.StatusOK {
		t.Fatalf("the token after a console logout: %d %s", code, out)
	}
	// A password login's session ends with its logout, everywhere: a copy
	// of its cookie, and its token as a REST bearer, are refused after.
	pw := newConsoleUser(t, srv)
	pw.login(`{"user": "rob", "password": "rob-pw"}`)
	base, _ := url.Parse(pw.base)
	var stolen string
	for _, c := range pw.c.Jar.Cookies(base) {
		if c.Name == console.CookieName {
			stolen = c.Value
		}
	}
	copyOf := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: console.CookieName, Value: stolen}) }
	thief := newConsoleUser(t, srv)
	if code, raw := thief.call(http.MethodGet, "/api/session", "", copyOf); code != http.StatusOK {
		t.Fatalf("a copy of a live cookie (%q): %d %s", stolen, code, raw)
	}
	bearer := restAs(t, srv, strings.TrimPrefix(stolen, "console."))
	if code, out := bearer("/v1/namespace/a/exists", `{}`); code != http.StatusOK {
		t.Fatalf("the console's session as a REST bearer: %d %s", code, out)
	}
	if code, raw := pw.call(http.MethodPost, "/api/logout", "", nil); code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", code, raw)
	}
	if code, raw := thief.call(http.MethodGet, "/api/session", "", copyOf); code != http.StatusUnauthorized {
		t.Fatalf("a copy of the cookie after its logout: %d %s", code, raw)
	}
	if code, out := bearer("/v1/namespace/a/exists", `{}`); code != http.StatusUnauthorized {
		t.Fatalf("the session as a REST bearer after its logout: %d %s", code, out)
	}
	// Password guessing is throttled by user name, the right password
	// included, and a name nobody has alike.
	for _, name := range []string{"rob", "nobody"} {
		g := newConsoleUser(t, srv)
		for range 10 {
			if code, raw := g.call(http.MethodPost, "/api/login", `{"user": "`+name+`", "password": "guess"}`, nil); code != http.StatusUnauthorized {
				t.Fatalf("a wrong guess for %s: %d %s", name, code, raw)
			}
		}
		code, raw := g.call(http.MethodPost, "/api/login", `{"user": "`+name+`", "password": "rob-pw"}`, nil)
		if code != http.StatusTooManyRequests || errOf(raw).Error.Type != "Throttling" {
			t.Fatalf("the 11th login of %s within a minute: %d %s", name, code, raw)
		}
	}
	// A forged cookie is nobody.
	f := newConsoleUser(t, srv)
	if code, _ := f.call(http.MethodGet, "/api/session", "", func(r *http.Request) {
		r.AddCookie(&http.Cookie{Name: console.CookieName, Value: "fns1.forged.sig"})
	}); code != http.StatusUnauthorized {
		t.Fatalf("a forged cookie: %d", code)
	}
}

// The console's pages read the catalog as the caller may see it: the
// tree with counts, a table with its versions a page at a time and its
// verification, SQL pages and downloads, plan_scan kept and pruned, the
// activity charts' samples, health; and a grant-limited reader sees
// nothing outside its grant, answered as missing things are.
func TestConsoleReadsTheCatalogAsTheCallerMaySee(t *testing.T) {
	srv, root := startConsoleServer(t)
	must := okFrom(t, root)
	for _, ns := range []string{"a", "a$deep", "b"} {
		must("/v1/namespace/"+ns+"/create", `{}`)
	}
	must("/v1/table/a$t/declare", `{}`)
	must("/v1/table/a$deep$t2/declare", `{}`)
	must("/v1/table/b$u/declare", `{}`)
	commitVersions(t, root, "a$t", 1, 5)
	commitVersions(t, root, "b$u", 1, 1)
	must("/v1/namespace/a$logs/partitioned/create", `{"schema": {"fields": [
		{"name": "k", "nullable": true, "type": {"type": "int64"}, "metadata": {"lance:field_id": "1"}}]},
		"spec": {"fields": [{"source_ids": [1], "transform": {"type": "identity"}}]}}`)
	for k := 1; k <= 3; k++ {
		must("/v1/namespace/a$logs/partitioned/resolve", fmt.Sprintf(`{"row": {"k": %d}}`, k))
	}

	u := newConsoleUser(t, srv)
	u.login(`{"user": "rob", "password": "rob-pw"}`)
	var tree struct {
		Namespaces []struct {
			Name               string
			Namespaces, Tables int64
		}
	}
	u.json(http.MethodGet, "/api/namespaces", "", &tree)
	got := fmt.Sprint(tree.Namespaces)
	if got != "[{a 2 1} {b 0 1}]" { // a: deep and logs, and t
		t.Fatalf("the root's children: %s", got)
	}

	var table struct {
		Location          string
		ManagedVersioning bool `json:"managed_versioning"`
		Version           int64
		SchemaError       string `json:"schema_error"`
	}
	u.json(http.MethodGet, "/api/table?id=a&id=t", "", &table)
	if !table.ManagedVersioning || table.Version != 5 || !strings.HasPrefix(table.Location, "file://") || table.SchemaError == "" {
		t.Fatalf("table %+v", table)
	}
	type page struct {
		Versions []struct {
			Version int64
			Branch  string
		}
		NextBefore *int64 `json:"next_before"`
	}
	var p page
	u.json(http.MethodGet, "/api/table/versions?id=a&id=t&limit=3", "", &p)
	if len(p.Versions) != 3 || p.Versions[0].Version != 5 || p.Versions[2].Version != 3 || p.NextBefore == nil || *p.NextBefore != 3 {
		t.Fatalf("first page %+v", p)
	}
	u.json(http.MethodGet, fmt.Sprintf("/api/table/versions?id=a&id=t&limit=3&before=%d", *p.NextBefore), "", &p)
	if len(p.Versions) != 2 || p.Versions[1].Version != 1 || p.NextBefore != nil {
		t.Fatalf("second page %+v", p)
	}
	var verify struct {
		OK       bool
		Checked  int
		Problems []any
	}
	u.json(http.MethodGet, "/api/table/verify?id=a&id=t", "", &verify)
	if !verify.OK || verify.Checked != 5 {
		t.Fatalf("verify %+v", verify)
	}
	for _, bad := range []string{"/api/table/versions?id=a&id=t&limit=0", "/api/table/versions?id=a&id=t&before=x", "/api/table?id=a&id=nope"} {
		if code, raw := u.call(http.MethodGet, bad, "", nil); code != http.StatusBadRequest && code != http.StatusNotFound {
			t.Errorf("%s: %d %s", bad, code, raw)
		}
	}

	// SQL: a page, the next, a refused statement, downloads.
	var res struct {
		Columns []struct{ Name, Type string }
		Rows    [][]any
		More    bool
	}
	u.json(http.MethodPost, "/api/sql", `{"sql": "SELECT * FROM range(250) t(i)", "offset": 100, "limit": 100}`, &res)
	if len(res.Rows) != 100 || res.Rows[0][0] != float64(100) || !res.More || res.Columns[0].Name != "i" {
		t.Fatalf("sql page: %d rows, first %v, more %v", len(res.Rows), res.Rows[0], res.More)
	}
	u.json(http.MethodPost, "/api/sql", `{"sql": "SELECT * FROM range(250) t(i)", "offset": 200, "limit": 100}`, &res)
	if len(res.Rows) != 50 || res.More {
		t.Fatalf("last page: %d rows, more %v", len(res.Rows), res.More)
	}
	code, raw := u.call(http.MethodPost, "/api/sql", `{"sql": "CREATE TABLE x (a INT)"}`, nil)
	if e := errOf(raw); code != http.StatusForbidden || e.Error.Type != "PermissionDenied" || !strings.Contains(e.Error.Message, "only reads") {
		t.Fatalf("a refused statement: %d %s", code, raw)
	}
	code, raw = u.call(http.MethodPost, "/api/sql/download", `{"sql": "SELECT i, 'x,\"y' AS s FROM range(3) t(i)", "format": "csv"}`, nil)
	if code != http.StatusOK || string(raw) != "i,s\n0,\"x,\"\"y\"\n1,\"x,\"\"y\"\n2,\"x,\"\"y\"\n" {
		t.Fatalf("csv: %d %q", code, raw)
	}
	code, raw = u.call(http.MethodPost, "/api/sql/download", `{"sql": "SELECT * FROM range(70000) t(i)", "format": "arrow"}`, nil)
	rd, err := ipc.NewReader(bytes.NewReader(raw))
	if code != http.StatusOK || err != nil {
		t.Fatalf("arrow: %d %v", code, err)
	}
	rows := 0
	for rd.Next() {
		rows += int(rd.RecordBatch().NumRows())
	}
	rd.Release()
	if rows != 70000 {
		t.Fatalf("arrow rows %d", rows)
	}

	// plan_scan: kept with its residual, pruned.
	var plan struct {
		Columns []string `json:"partition_columns"`
		Kept    []struct {
			Values   []any
			Residual string
		}
		Pruned []struct{ Values []any }
	}
	u.json(http.MethodPost, "/api/plan", `{"id": ["a", "logs"], "filter": "k = 2"}`, &plan)
	if len(plan.Kept) != 1 || fmt.Sprint(plan.Kept[0].Values) != "[2]" || len(plan.Pruned) != 2 || len(plan.Columns) != 1 {
		t.Fatalf("plan %+v", plan)
	}

	// The activity page's samples see commits.
	var m struct {
		Series map[string][]*float64
		Ops    map[string]map[string][]*float64
	}
	deadline := time.Now().Add(10 * time.Second)
	for v, committed := uint64(2), false; !committed; v++ {
		commitVersions(t, root, "b$u", v, v)
		u.json(http.MethodGet, "/api/metrics", "", &m)
		for _, v := range m.Series["commits_per_s"] {
			committed = committed || (v != nil && *v > 0)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no commit in the history: %v", m.Series["commits_per_s"])
		}
		time.Sleep(60 * time.Millisecond)
	}
	if _, ok := m.Ops["rest CreateTableVersion"]; !ok {
		t.Errorf("no CreateTableVersion in the operations: %v", m.Ops)
	}
	var health struct {
		Ready               bool
		Redis, Storage, SQL struct{ OK bool }
	}
	u.json(http.MethodGet, "/api/health", "", &health)
	if !health.Ready || !health.Redis.OK || !health.Storage.OK || !health.SQL.OK {
		t.Fatalf("health %+v", health)
	}

	// A reader of a alone, by grant.
	must("/v1/namespace/a/grants/create", `{"principal": "lim", "role": "read"}`)
	l := newConsoleUser(t, srv)
	l.login(`{"user": "lim", "password": "lim-pw"}`)
	deadline = time.Now().Add(10 * time.Second)
	for {
		if code, _ := l.call(http.MethodGet, "/api/table?id=a&id=t", "", nil); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the grant did not reach the server")
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.json(http.MethodGet, "/api/namespaces", "", &tree)
	if got := fmt.Sprint(tree.Namespaces); got != "[{a 2 1}]" {
		t.Fatalf("lim's root: %s", got)
	}
	for _, path := range []string{"/api/table?id=b&id=u", "/api/table/versions?id=b&id=u", "/api/table/verify?id=b&id=u"} {
		hc, hraw := l.call(http.MethodGet, path, "", nil)
		mc, mraw := u.call(http.MethodGet, strings.ReplaceAll(path, "id=u", "id=nope"), "", nil)
		he, me := errOf(hraw), errOf(mraw)
		if hc != mc || hc != http.StatusNotFound || he.Error.Code != me.Error.Code ||
			strings.ReplaceAll(he.Error.Message, "u", "X") != strings.ReplaceAll(me.Error.Message, "nope", "X") {
			t.Errorf("%s: %d %s; a missing one: %d %s", path, hc, hraw, mc, mraw)
		}
	}
	l.json(http.MethodPost, "/api/sql", `{"sql": "SELECT count(*), count(*) FILTER (WHERE NOT starts_with(object_id, 'a$')) FROM tables"}`, &res)
	if fmt.Sprint(res.Rows) != "[[5 0]]" { // a$t, a$deep$t2 and the three leaves of a$logs; nothing of b
		t.Fatalf("lim's tables: %v", res.Rows)
	}
	if code, raw := l.call(http.MethodPost, "/api/plan", `{"id": ["b", "logs"], "filter": ""}`, nil); code != http.StatusNotFound {
		t.Fatalf("plan outside the grant: %d %s", code, raw)
	}
}

// With --tls-cert the console serves HTTPS with the same certificate,
// its cookie is Secure, and same-origin means https.
func TestConsoleServesTLSWithTheServersCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "flightns test CA")
	srvCert, srvKey := ca.issue("flightns", true)
	cfg := config(t, filepath.Join(dir, "data"))
	cfg.TLSCert, cfg.TLSKey = writeFile(t, dir, "server.pem", srvCert), writeFile(t, dir, "server.key", srvKey)
	cfg.AuthFile = writeFile(t, dir, "auth.json", []byte(`{"users": [{"name": "ana", "password": "pw-ana", "role": "write"}]}`))
	cfg.ConsoleAddr = "127.0.0.1:0"
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	jar, _ := cookiejar.New(nil)
	u := &consoleUser{t: t, base: "https://" + srv.ConsoleAddr().String(), c: &http.Client{Jar: jar,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}}
	req, _ := http.NewRequest(http.MethodPost, u.base+"/api/login", strings.NewReader(`{"user": "ana", "password": "pw-ana"}`))
	req.Header.Set(console.Header, "1")
	resp, err := u.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if ck := resp.Cookies(); resp.StatusCode != http.StatusOK || len(ck) != 1 || !ck[0].Secure {
		t.Fatalf("login over TLS: %d %+v", resp.StatusCode, ck)
	}
	if code, raw := u.call(http.MethodGet, "/api/session", "", func(r *http.Request) { r.Header.Set("Origin", u.base) }); code != http.StatusOK {
		t.Fatalf("same origin over https: %d %s", code, raw)
	}
	if code, _ := u.call(http.MethodGet, "/api/session", "", func(r *http.Request) {
		r.Header.Set("Origin", "http://"+srv.ConsoleAddr().String())
	}); code != http.StatusForbidden {
		t.Fatalf("the http origin of the same host: %d", code)
	}
	// Plain HTTP gets no page (Go's TLS server answers it 400).
	if resp, err := http.Get("http://" + srv.ConsoleAddr().String() + "/"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP: %d", resp.StatusCode)
		}
	}
}

// Hostile input on every console call: malformed and oversized bodies,
// invalid ids and parameters, bad cookies. Each gets a 4xx with the
// error body, never a 5xx, and nothing in the catalog changes.
func TestConsoleHostileInput(t *testing.T) {
	srv, root := startConsoleServer(t)
	for _, p := range []string{"/v1/namespace/a/create", "/v1/table/a$t/declare"} {
		if code, out := root(p, `{}`); code != http.StatusOK {
			t.Fatal(code, out)
		}
	}
	catalog := func() string {
		_, out := root("/v1/namespace/a/table/list", `{}`)
		_, ns := root("/v1/namespace/$/list", `{}`)
		return out + ns
	}
	before := catalog()
	u := newConsoleUser(t, srv)
	u.login(`{"user": "ana", "password": "ana-pw"}`)
	posts := []string{"/api/login", "/api/sql", "/api/sql/download", "/api/plan"}
	bodies := []string{`{`, `[]`, `"x"`, `42`, `{"sql": 5}`, `{"id": "a"}`, `{"nope": 1}`, "\xff\xfe\x00", `{"sql": "SELECT 1"} {}`,
		`{"sql": "SELECT 1", "offset": -1}`, `{"sql": "SELECT 1", "limit": 100000}`, `{"sql": "SELECT 1", "format": "xml"}`,
		`{"id": ["a", "t\u0000"], "filter": "x"}`, `{"user": "ana"}`, `{"user": "ana", "password": "ana-pw", "token": "t"}`,
		strings.Repeat("[", 100000), `{"sql": "` + strings.Repeat("x", 2<<20) + `"}`}
	for _, p := range posts {
		for i, b := range bodies {
			code, raw := u.call(http.MethodPost, p, b, nil)
			if code < 400 || code >= 500 || errOf(raw).Error.Message == "" {
				t.Errorf("POST %s body #%d: %d %.200s", p, i, code, raw)
			}
		}
	}
	ids := []string{"id=%00", "id=a&id=", "id=" + strings.Repeat("a", 5000), strings.Repeat("id=a&", 300) + "id=t", "id=a%24t", "id=a&id=t%0a"}
	gets := []string{"/api/namespaces", "/api/namespace", "/api/table", "/api/table/versions", "/api/table/verify",
		"/api/table/maintenance", "/api/maintenance"}
	for _, p := range gets {
		for _, q := range ids {
			code, raw := u.call(http.MethodGet, p+"?"+q, "", nil)
			if code != http.StatusBadRequest && code != http.StatusNotFound {
				t.Errorf("GET %s?%.80s: %d %.200s", p, q, code, raw)
			}
		}
	}
	for _, q := range []string{"limit=0", "limit=x", "limit=1001", "before=0", "before=-5", "before=99999999999999999999"} {
		code, raw := u.call(http.MethodGet, "/api/table/versions?id=a&id=t&"+q, "", nil)
		if code != http.StatusBadRequest {
			t.Errorf("%s: %d %.200s", q, code, raw)
		}
		if strings.HasPrefix(q, "limit") {
			if code, raw := u.call(http.MethodGet, "/api/maintenance?id=a&"+q, "", nil); code != http.StatusBadRequest {
				t.Errorf("maintenance %s: %d %.200s", q, code, raw)
			}
		}
	}
	for _, ck := range []string{"", "x", "fns1.", "fns1.e30.", strings.Repeat("A", 8000), "root-token-1x", "Bearer root-token-1"} {
		f := newConsoleUser(t, srv)
		code, _ := f.call(http.MethodPost, "/api/v1/namespace/evil/create", `{}`, func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: console.CookieName, Value: ck})
		})
		if code != http.StatusUnauthorized && code != http.StatusBadRequest {
			t.Errorf("cookie %.20q: %d", ck, code)
		}
	}
	if after := catalog(); after != before {
		t.Fatalf("the catalog changed: %s → %s", before, after)
	}
}

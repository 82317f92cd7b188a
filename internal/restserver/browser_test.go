package restserver

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
)

// raw sends method path with body and exactly headers (pairs; nothing
// else but what net/http adds: Host, User-Agent, Content-Length).
func (s *server) raw(method, path, body string, headers ...string) reply {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url()+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// With authentication off (make run's default), a mutation needs its
// body as application/json, and no route answers a browser's cross-site
// request (Sec-Fetch-Site cross-site or same-site, an Origin not the
// server's own): a web page cannot drive the server with a no-cors
// fetch. Clients that send neither browser header (LanceDB, curl, the
// CLI) are unaffected; a refusal changes nothing.
func TestBrowsersCannotDriveRESTCrossSite(t *testing.T) {
	s := startServer(t)
	own := s.url() // http://127.0.0.1:port
	json := []string{"Content-Type", "application/json"}
	with := func(hs ...string) []string { return append(append([]string{}, json...), hs...) }
	made := 0
	for _, tc := range []struct {
		name         string
		headers      []string
		body         string
		code, status int // 0, 200: made
	}{
		// Content types.
		{"application/json, no browser headers (LanceDB, curl, the CLI)", json, `{}`, 0, 200},
		{"application/json; charset=utf-8", []string{"Content-Type", "application/json; charset=utf-8"}, `{}`, 0, 200},
		{"Application/JSON;Charset=UTF-8", []string{"Content-Type", "Application/JSON;Charset=UTF-8"}, `{}`, 0, 200},
		{"text/plain (a no-cors fetch's string body)", []string{"Content-Type", "text/plain;charset=UTF-8"}, `{}`, 13, 415},
		{"a form", []string{"Content-Type", "application/x-www-form-urlencoded"}, `{}`, 13, 415},
		{"multipart", []string{"Content-Type", "multipart/form-data; boundary=x"}, `{}`, 13, 415},
		{"no Content-Type", nil, `{}`, 13, 415},
		{"a +json type", []string{"Content-Type", "application/merge-patch+json"}, `{}`, 13, 415},
		{"a vendor +json type", []string{"Content-Type", "application/vnd.api+json"}, `{}`, 13, 415},
		{"another charset", []string{"Content-Type", "application/json; charset=iso-8859-1"}, `{}`, 13, 415},
		{"a malformed type", []string{"Content-Type", "application/json; charset"}, `{}`, 13, 415},
		{"two Content-Types", []string{"Content-Type", "application/json", "Content-Type", "text/plain"}, `{}`, 13, 415},
		{"an empty body", json, ``, 13, 400},
		{"a blank body", json, " \n\t", 13, 400},
		// Browsers: Sec-Fetch-Site and Origin.
		{"Sec-Fetch-Site: cross-site", with("Sec-Fetch-Site", "cross-site"), `{}`, 15, 403},
		{"Sec-Fetch-Site: same-site (another port of the host)", with("Sec-Fetch-Site", "same-site"), `{}`, 15, 403},
		{"Sec-Fetch-Site: an unknown value", with("Sec-Fetch-Site", "cross-origin"), `{}`, 15, 403},
		{"Sec-Fetch-Site twice", with("Sec-Fetch-Site", "same-origin", "Sec-Fetch-Site", "cross-site"), `{}`, 15, 403},
		{"Sec-Fetch-Site: same-origin", with("Sec-Fetch-Site", "same-origin"), `{}`, 0, 200},
		{"Sec-Fetch-Site: none (typed by the user)", with("Sec-Fetch-Site", "none"), `{}`, 0, 200},
		{"another origin", with("Origin", "http://evil.example"), `{}`, 15, 403},
		{"another port of the host", with("Origin", "http://127.0.0.1:1"), `{}`, 15, 403},
		{"another scheme", with("Origin", strings.Replace(own, "http:", "https:", 1)), `{}`, 15, 403},
		{"a null origin (a sandboxed page, a file)", with("Origin", "null"), `{}`, 15, 403},
		{"an origin with a path", with("Origin", own+"/x"), `{}`, 15, 403},
		{"an origin with credentials", with("Origin", strings.Replace(own, "http://", "http://u:p@", 1)), `{}`, 15, 403},
		{"two origins", with("Origin", own, "Origin", "http://evil.example"), `{}`, 15, 403},
		{"same-origin said, another origin sent", with("Sec-Fetch-Site", "same-origin", "Origin", "http://evil.example"), `{}`, 15, 403},
		{"the server's own origin", with("Origin", own, "Sec-Fetch-Site", "same-origin"), `{}`, 0, 200},
		{"cross-site and text/plain: refused as cross-site", []string{"Content-Type", "text/plain", "Sec-Fetch-Site", "cross-site"}, `{}`, 15, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/v1/namespace/n" + strings.Repeat("x", made) + "/create"
			r := s.raw(http.MethodPost, path, tc.body, tc.headers...)
			if tc.status == http.StatusOK {
				ok(t, tc.name, r)
				made++
				return
			}
			wantError(t, tc.name, r, tc.code, tc.status)
			var e errorBody
			r.decode(t, &e)
			want := map[int]string{415: "application/json", 400: "JSON body", 403: "cross-site request refused"}[tc.status]
			if !strings.Contains(e.Error, want) {
				t.Fatalf("%s: the error %q does not say %q", tc.name, e.Error, want)
			}
		})
	}
	// No refused request made anything; and every route refuses a
	// cross-site browser, reads too (a plan or a credential is not a
	// page's to ask for), while a read's body needs no Content-Type.
	var l api.ListNamespacesResponse
	ok(t, "list", s.raw(http.MethodGet, pRoot+"/list"+dq, "")).decode(t, &l)
	if len(l.Namespaces) != made {
		t.Fatalf("namespaces %v after %d successes", l.Namespaces, made)
	}
	wantError(t, "a cross-site read", s.raw(http.MethodGet, pRoot+"/list"+dq, "", "Sec-Fetch-Site", "cross-site"), 15, 403)
	wantError(t, "a read from another origin", s.raw(http.MethodPost, "/v1/namespace/n/describe", `{}`, "Origin", "http://evil.example"), 15, 403)
	ok(t, "a read's body as text/plain", s.raw(http.MethodPost, "/v1/namespace/n/describe", `{}`, "Content-Type", "text/plain"))
	ok(t, "a read without a body", s.raw(http.MethodPost, "/v1/namespace/n/describe", ""))
}

// With authentication on, the same: a cross-site request is refused
// before its credentials are looked at (a browser attaches a remembered
// Basic login by itself), and a non-JSON mutation after them (an
// unauthenticated caller learns nothing but 401).
func TestBrowsersCannotDriveRESTCrossSiteWithAuthentication(t *testing.T) {
	a, err := auth.New(auth.Config{Tokens: []auth.TokenEntry{{Token: "writer-token-1", Name: "w", Role: "write"}}})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withAuth(a))
	bearer := []string{"Authorization", "Bearer writer-token-1"}
	for _, tc := range []struct {
		name         string
		headers      []string
		code, status int
	}{
		{"a writer's cross-site request", append([]string{"Content-Type", "application/json", "Sec-Fetch-Site", "cross-site"}, bearer...), 15, 403},
		{"a writer's request from another origin", append([]string{"Content-Type", "application/json", "Origin", "http://evil.example"}, bearer...), 15, 403},
		{"a cross-site request without credentials", []string{"Content-Type", "application/json", "Origin", "http://evil.example"}, 15, 403},
		{"a writer's text/plain", append([]string{"Content-Type", "text/plain"}, bearer...), 13, 415},
		{"text/plain without credentials", []string{"Content-Type", "text/plain"}, 16, 401},
	} {
		wantError(t, tc.name, s.raw(http.MethodPost, "/v1/namespace/evil/create", `{}`, tc.headers...), tc.code, tc.status)
	}
	ok(t, "the writer, as LanceDB sends it", s.raw(http.MethodPost, "/v1/namespace/good/create", `{}`, append([]string{"Content-Type", "application/json"}, bearer...)...))
	var l api.ListNamespacesResponse
	ok(t, "list", s.raw(http.MethodGet, pRoot+"/list"+dq, "", bearer...)).decode(t, &l)
	if strings.Join(l.Namespaces, ",") != "good" {
		t.Fatalf("namespaces: %v", l.Namespaces)
	}
}

// An Origin is the server's own when scheme, host and port are those the
// request reached (TLS: https), a scheme's default port written or not.
func TestSameOrigin(t *testing.T) {
	req := func(host string, tlsOn bool) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/v1/x", nil)
		r.Host = host
		if tlsOn {
			r.TLS = &tls.ConnectionState{}
		}
		return r
	}
	for _, tc := range []struct {
		origin, host string
		tls, same    bool
	}{
		{"http://127.0.0.1:8181", "127.0.0.1:8181", false, true},
		{"http://LOCALHOST:8181", "localhost:8181", false, true},
		{"http://example.com", "example.com:80", false, true},
		{"http://example.com:80", "example.com", false, true},
		{"https://example.com", "example.com:443", true, true},
		{"https://example.com:8443", "example.com:8443", true, true},
		{"http://[::1]:8181", "[::1]:8181", false, true},
		{"https://example.com", "example.com", false, false},
		{"http://example.com", "example.com", true, false},
		{"http://example.com:8080", "example.com:8181", false, false},
		{"http://example.com.evil.example", "example.com", false, false},
		{"http://example.com:80", "example.com:443", false, false},
		{"null", "example.com", false, false},
		{"", "example.com", false, false},
		{"example.com", "example.com", false, false},
		{"http://example.com/", "example.com", false, false},
		{"http://example.com?x", "example.com", false, false},
		{"http://u@example.com", "example.com", false, false},
	} {
		if got := sameOrigin(tc.origin, req(tc.host, tc.tls)); got != tc.same {
			t.Errorf("Origin %q, Host %q, TLS %v: same %v, want %v", tc.origin, tc.host, tc.tls, got, tc.same)
		}
	}
}

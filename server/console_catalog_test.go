package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// The activity and health pages are about the whole catalog: a principal
// of role none with a grant on one namespace gets 403 on both (while it
// reads what its grant gives), a catalog-wide reader and writer get
// them, and so does the none principal once granted read on the root
// namespace.
func TestConsoleActivityAndHealthNeedReadOnTheCatalog(t *testing.T) {
	srv, root := startConsoleServer(t)
	must := okFrom(t, root)
	must("/v1/namespace/a/create", `{}`)
	must("/v1/namespace/a/grants/create", `{"principal": "lim", "role": "read"}`)
	lim := newConsoleUser(t, srv)
	lim.login(`{"user": "lim", "password": "lim-pw"}`)
	until(t, "lim's grant on a", func() bool {
		code, _ := lim.call(http.MethodGet, "/api/namespace?id=a", "", nil)
		return code == http.StatusOK
	})
	for _, path := range []string{"/api/metrics", "/api/health"} {
		code, raw := lim.call(http.MethodGet, path, "", nil)
		if e := errOf(raw); code != http.StatusForbidden || e.Error.Type != "PermissionDenied" || !strings.Contains(e.Error.Message, "whole catalog") {
			t.Errorf("lim (none, read on a) %s: %d %s, want 403 PermissionDenied", path, code, raw)
		}
	}
	for _, who := range []string{`{"user": "rob", "password": "rob-pw"}`, `{"user": "ana", "password": "ana-pw"}`} {
		u := newConsoleUser(t, srv)
		u.login(who)
		for _, path := range []string{"/api/metrics", "/api/health"} {
			if code, raw := u.call(http.MethodGet, path, "", nil); code != http.StatusOK {
				t.Errorf("%s %s: %d %s, want 200", who, path, code, raw)
			}
		}
	}
	// Read on the root namespace is read on the catalog.
	must("/v1/namespace/%24/grants/create", `{"principal": "lim", "role": "read"}`)
	until(t, "lim's grant on the root", func() bool {
		code, _ := lim.call(http.MethodGet, "/api/metrics", "", nil)
		return code == http.StatusOK
	})
	if code, raw := lim.call(http.MethodGet, "/api/health", "", nil); code != http.StatusOK {
		t.Errorf("lim with read on the root: /api/health %d %s", code, raw)
	}
}

// until waits up to 15 s for ok (a grant reaching the server: grants are
// re-read within namespace.GrantsRecheck), failing the test with what.
func until(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15 s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

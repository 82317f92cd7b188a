package main

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

// The binary keeps a dropped table for --drop-retention (a week by
// default): admin dropped lists it, admin undrop puts it back with its
// versions, and admin gc purges it once past the retention.
func TestAdminUndropAndGCOfADroppedTable(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, nil)
	admin := adminCLI(t, work)
	loc := declareTable(t, s.rest, "a", "t")
	for v := uint64(1); v <= 2; v++ {
		if code := commitVersion(t, s.rest, "a$t", loc, v); code != http.StatusOK {
			t.Fatalf("commit %d: HTTP %d", v, code)
		}
	}
	mustREST(t, s.rest, "/v1/table/a$t/drop", `{}`, nil)
	if _, err := os.Stat(finalPath(loc, 2)); err != nil {
		t.Fatalf("the drop deleted the table's data despite the default retention: %v", err)
	}
	if out := admin(0, "dropped"); !strings.Contains(out, "table     a$t") {
		t.Errorf("admin dropped: %q", out)
	}
	if out := admin(0, "verify"); !strings.Contains(out, "0 drift") {
		t.Errorf("verify with a drop kept: %q", out)
	}
	admin(1, "undrop", "--table", "a.t", "--drop-id", "../x")
	admin(1, "undrop", "--table", "a.nope")
	if out := admin(0, "undrop", "--table", "a.t"); !strings.Contains(out, "0 namespaces, 1 tables") {
		t.Errorf("admin undrop: %q", out)
	}
	var dv struct{ Version struct{ Version int64 } }
	mustREST(t, s.rest, "/v1/table/a$t/version/describe", `{}`, &dv)
	if dv.Version.Version != 2 {
		t.Errorf("after undrop the latest version is %d, want 2", dv.Version.Version)
	}

	// Dropped again: gc within the retention keeps it, past it purges.
	mustREST(t, s.rest, "/v1/namespace/a/drop", `{"behavior":"Cascade"}`, nil)
	if out := admin(0, "gc"); !strings.Contains(out, "1 drops kept, 0 past the retention purged") {
		t.Errorf("gc within the retention: %q", out)
	}
	admin(2, "gc", "--drop-retention", "-1h")
	if out := admin(0, "gc", "--drop-retention", "0"); !strings.Contains(out, "1 drops kept, 1 past the retention purged, 1 table locations deleted") {
		t.Errorf("gc past the retention: %q", out)
	}
	if _, err := os.Stat(finalPath(loc, 2)); !os.IsNotExist(err) {
		t.Errorf("gc left a purged table's data: %v", err)
	}
	admin(1, "undrop", "--namespace", "a")
	if out := admin(0, "dropped"); strings.TrimSpace(out) != "" {
		t.Errorf("admin dropped after the purge: %q", out)
	}
	s.stop()
}

// A retention (of drops, of the change feed's history) is a duration, and
// not a negative one.
func TestDropRetentionIsChecked(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"serve", "--drop-retention", "-1h"}, 1, "must not be negative"},
		{[]string{"serve", "--drop-retention", "a week"}, 2, "invalid value"},
		{[]string{"admin", "gc", "--drop-retention", "1x"}, 2, "invalid value"},
		{[]string{"serve", "--event-history", "-1h"}, 1, "the change feed's history (--event-history) must not be negative"},
	} {
		code, _, stderr := runCLI(t, work, c.args...)
		if code != c.code || !strings.Contains(stderr, c.says) {
			t.Errorf("flightns %v: exit %d, stderr %q; want exit %d saying %q", c.args, code, stderr, c.code, c.says)
		}
	}
}

package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// admin cleanup: a dry run says what would go and deletes nothing; a run
// prunes the old versions (LanceDB's own manifests) past the table's
// retention; a table without one is left alone unless --older-than says;
// bad values are refused.
func TestAdminCleanup(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, nil)
	admin := adminCLI(t, work)
	mustREST(t, s.rest, "/v1/namespace/a/create", `{"properties":{"flightns.cleanup.older_than":"1h","flightns.cleanup.retain_versions":"2"}}`, nil)
	loc := declareTable(t, s.rest, "a", "t")
	for v := uint64(1); v <= 4; v++ {
		b, err := os.ReadFile(fmt.Sprintf("../../internal/lancemanifest/testdata/v%d.manifest", v))
		if err != nil {
			t.Fatal(err)
		}
		if code := commitContent(t, s.rest, "a$t", loc, v, string(b)); code != 200 {
			t.Fatalf("commit %d: HTTP %d", v, code)
		}
	}
	// The manifests were written days ago (LanceDB made them for the
	// tests): an hour's retention keeps the last two.
	if out := admin(0, "cleanup", "--dry-run"); !strings.Contains(out, `"a$t": would prune 2 versions (keeping 2)`) {
		t.Errorf("dry run: %q", out)
	}
	if _, err := os.Stat(finalPath(loc, 1)); err != nil {
		t.Fatalf("a dry run deleted: %v", err)
	}
	if out := admin(0, "cleanup", "a.t"); !strings.Contains(out, `"a$t": pruned 2 versions (kept 2), deleted 2 objects`) {
		t.Errorf("cleanup: %q", out)
	}
	for v, want := range map[uint64]bool{1: false, 2: false, 3: true, 4: true} {
		if _, err := os.Stat(finalPath(loc, v)); (err == nil) != want {
			t.Errorf("version %d's manifest: %v", v, err)
		}
	}
	if out := admin(0, "verify"); !strings.Contains(out, "0 drift") {
		t.Errorf("verify after the cleanup: %q", out)
	}
	admin(1, "cleanup", "--older-than", "-1h", "a.t")
	admin(1, "cleanup", "--older-than", "1h", "--retain-versions", "-1", "a.t")
	admin(1, "cleanup", "a.nope")
	s.stop()
}

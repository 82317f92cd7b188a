package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// maintenanceAnswer is GET /api/table/maintenance's answer.
type maintenanceAnswer struct {
	Branches []struct {
		Branch          string
		Versions        int
		SmallFragments  *int    `json:"small_fragments"`
		DeletedRows     *int    `json:"deleted_rows"`
		LastCleanupAt   *string `json:"last_cleanup_at"`
		NeedsCompaction *bool   `json:"needs_compaction"`
	}
	Thresholds struct {
		SmallFragments int `json:"small_fragments"`
	}
}

// dueAnswer is GET /api/maintenance's answer.
type dueAnswer struct {
	Tables []struct {
		ID             []string
		SmallFragments int `json:"small_fragments"`
	}
	More bool
}

func (d dueAnswer) ids() string {
	var out []string
	for _, t := range d.Tables {
		out = append(out, strings.Join(t.ID, "$"))
	}
	return strings.Join(out, ",")
}

// The console's maintenance calls: a table's signals (from the real
// manifest LanceDB wrote after deleting a fifth of twelve small
// fragments' rows), the last cleanup after versions are deleted through
// REST, the tables under a namespace that need a compaction; a
// grant-limited caller sees only its tables, and a hidden one answers as
// a missing one.
func TestConsoleShowsMaintenanceAsTheCallerMaySee(t *testing.T) {
	srv, root := startConsoleServer(t)
	must := okFrom(t, root)
	worn, err := os.ReadFile("../manifesttable/testdata/compaction/v13.manifest") // 12 small fragments, 24 of 120 rows deleted
	if err != nil {
		t.Fatal(err)
	}
	compacted, err := os.ReadFile("../manifesttable/testdata/compaction/v15.manifest") // 1 fragment
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"a", "a$deep", "b"} {
		must("/v1/namespace/"+ns+"/create", `{}`)
	}
	commit := func(id string, manifests ...[]byte) {
		t.Helper()
		var d struct{ Location string }
		if err := json.Unmarshal([]byte(must("/v1/table/"+id+"/declare", `{}`)), &d); err != nil {
			t.Fatal(err)
		}
		for i, m := range manifests {
			v := uint64(i + 1)
			dir := strings.TrimPrefix(d.Location, "file://")
			p := filepath.Join(dir, "_versions", fmt.Sprintf("%020d.manifest-%s", uint64(math.MaxUint64)-v, uuid.NewString()))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, m, 0o644); err != nil {
				t.Fatal(err)
			}
			must("/v1/table/"+id+"/version/create", fmt.Sprintf(`{"version": %d, "manifest_path": %q, "manifest_size": %d}`, v, "file://"+p, len(m)))
		}
	}
	commit("a$deep$worn", compacted, worn)
	commit("a$fine", worn, compacted)
	commit("b$hidden", worn)

	u := newConsoleUser(t, srv)
	u.login(`{"user": "rob", "password": "rob-pw"}`)
	var m maintenanceAnswer
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		u.json(http.MethodGet, "/api/table/maintenance?id=a&id=deep&id=worn", "", &m)
		if len(m.Branches) == 1 && m.Branches[0].NeedsCompaction != nil || time.Now().After(deadline) {
			break
		}
	}
	if b := m.Branches; len(b) != 1 || b[0].Branch != "" || b[0].Versions != 2 || b[0].SmallFragments == nil || *b[0].SmallFragments != 12 ||
		*b[0].DeletedRows != 24 || !*b[0].NeedsCompaction || b[0].LastCleanupAt != nil || m.Thresholds.SmallFragments != 10 {
		t.Fatalf("a$deep$worn's maintenance: %+v", m)
	}
	var due dueAnswer
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		u.json(http.MethodGet, "/api/maintenance", "", &due)
		if due.ids() == "a$deep$worn,b$hidden" || time.Now().After(deadline) {
			break
		}
	}
	if due.ids() != "a$deep$worn,b$hidden" || due.More || due.Tables[0].SmallFragments != 12 {
		t.Fatalf("due at the root: %+v", due)
	}
	u.json(http.MethodGet, "/api/maintenance?id=a&limit=1", "", &due)
	if due.ids() != "a$deep$worn" {
		t.Fatalf("due under a: %+v", due)
	}

	// Lance prunes version 1 of a$deep$worn: the panel names the cleanup.
	must("/v1/table/a$deep$worn/version/delete", `{"ranges": [{"start_version": 1, "end_version": 2}]}`)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		u.json(http.MethodGet, "/api/table/maintenance?id=a&id=deep&id=worn", "", &m)
		if m.Branches[0].LastCleanupAt != nil || time.Now().After(deadline) {
			break
		}
	}
	if b := m.Branches[0]; b.LastCleanupAt == nil || b.Versions != 1 {
		t.Fatalf("after a cleanup: %+v", b)
	}
	if at, err := time.Parse(time.RFC3339, strings.Replace(*m.Branches[0].LastCleanupAt, " ", "T", 1)); err != nil || time.Since(at) > time.Minute {
		t.Errorf("last cleanup %q: %v", *m.Branches[0].LastCleanupAt, err)
	}

	// A reader of a alone, by grant.
	must("/v1/namespace/a/grants/create", `{"principal": "lim", "role": "read"}`)
	l := newConsoleUser(t, srv)
	l.login(`{"user": "lim", "password": "lim-pw"}`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, _ := l.call(http.MethodGet, "/api/table/maintenance?id=a&id=fine", "", nil); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the grant did not reach the server")
		}
	}
	l.json(http.MethodGet, "/api/maintenance", "", &due)
	if due.ids() != "a$deep$worn" {
		t.Fatalf("lim's due tables: %+v", due)
	}
	for hidden, missing := range map[string]string{
		"/api/table/maintenance?id=b&id=hidden": "/api/table/maintenance?id=b&id=nope",
		"/api/maintenance?id=b":                 "/api/maintenance?id=nope",
	} {
		hc, hraw := l.call(http.MethodGet, hidden, "", nil)
		mc, mraw := u.call(http.MethodGet, missing, "", nil)
		he, me := errOf(hraw), errOf(mraw)
		if hc != mc || hc != http.StatusNotFound || he.Error.Code != me.Error.Code {
			t.Errorf("%s: %d %s; a missing one: %d %s", hidden, hc, hraw, mc, mraw)
		}
	}
}

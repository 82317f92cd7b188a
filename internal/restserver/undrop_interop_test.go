package restserver

import (
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
)

// TestLanceDBReadsAnUndroppedTable: LanceDB makes a table with branches,
// tags and versions through flightns; the table is dropped (kept for the
// retention) and undropped by REST; LanceDB then reads exactly what it
// read before the drop: every branch, every tag, the rows of each.
func TestLanceDBReadsAnUndroppedTable(t *testing.T) {
	s := startServer(t, withConfig(func(c *namespace.Config) { c.DropRetention = time.Hour }))
	var before branchesReport
	node(t, nil, &before, "branches.mjs", "rest", s.url())
	if !before.OK || !strings.Contains(string(before.Final), `"dev"`) || !strings.Contains(string(before.Final), `"two"`) {
		t.Fatalf("the branch scenario: %v", before.Failures)
	}
	ok(t, "drop", s.post("/v1/table/items/drop", nil))
	wantError(t, "describing the dropped table", s.post("/v1/table/items/describe", nil), 4, 404)
	var undone api.UndropResponse
	ok(t, "undrop", s.post("/v1/table/items/undrop", nil)).decode(t, &undone)
	if len(undone.Tables) != 1 || undone.Tables[0] != "items" {
		t.Fatalf("undrop answered %+v", undone)
	}
	var after branchesReport
	node(t, nil, &after, "branches.mjs", "read", s.url())
	if !after.OK || !jsonEqual(t, after.Final, before.Final) {
		t.Fatalf("LanceDB after undrop (%v):\n%s\nbefore the drop:\n%s", after.Failures, after.Final, before.Final)
	}
	wantError(t, "undoing the drop twice", s.post("/v1/table/items/undrop", nil), 4, 404)
}

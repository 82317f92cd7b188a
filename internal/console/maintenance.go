package console

import (
	"net/http"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// Maintenance signals (manifesttable/maintenance.go), read from the view
// table_maintenance through the SQL gate, so a caller sees the tables
// its grants reach and no other.

// thresholds are the rule of needs_compaction, for the pages to say.
type thresholds struct {
	SmallFragmentRows int     `json:"small_fragment_rows"`
	SmallFragments    int     `json:"small_fragments"`
	DeletedRatio      float64 `json:"deleted_ratio"`
}

var rule = thresholds{SmallFragmentRows: manifesttable.SmallFragmentRows,
	SmallFragments: manifesttable.CompactSmallFragments, DeletedRatio: manifesttable.CompactDeletedRatio}

// maintenanceRow is one row of table_maintenance as the pages get it
// (branch "": main).
type maintenanceRow struct {
	Branch                any `json:"branch"`
	Versions              any `json:"versions"`
	OldestVersion         any `json:"oldest_version"`
	LatestVersion         any `json:"latest_version"`
	LatestCommittedAt     any `json:"latest_committed_at"`
	Rows                  any `json:"rows"`
	Fragments             any `json:"fragments"`
	SmallFragments        any `json:"small_fragments"`
	DeletedRows           any `json:"deleted_rows"`
	Bytes                 any `json:"bytes"`
	LastCleanupAt         any `json:"last_cleanup_at"`
	LastCompactionVersion any `json:"last_compaction_version"`
	LastCompactionAt      any `json:"last_compaction_at"`
	NeedsCompaction       any `json:"needs_compaction"`
}

// maintenanceSelect lists table_maintenance's columns in maintenanceRow's
// order, after the table's id.
const maintenanceSelect = `SELECT table_id, coalesce(branch, '') AS branch, versions, oldest_version, latest_version,
	latest_committed_at, num_rows, num_fragments, small_fragments, deleted_rows, data_bytes, last_cleanup_at,
	last_compaction_version, last_compaction_at, needs_compaction FROM table_maintenance`

func maintenanceOf(row []any) maintenanceRow {
	return maintenanceRow{row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9], row[10], row[11], row[12], row[13], row[14]}
}

// tableMaintenance is the table page's Maintenance panel: the table's
// rows of table_maintenance, main first, then each branch.
func (c *console) tableMaintenance(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), idOf(r)
	if _, err := c.describe(ctx, id, false); err != nil { // the table exists, and the caller may read it
		writeError(w, c.log, err)
		return
	}
	rows, _, err := c.rows(ctx, maintenanceSelect+` WHERE table_id = ? ORDER BY branch NULLS FIRST`, id.String())
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	out := struct {
		Branches   []maintenanceRow `json:"branches"`
		Thresholds thresholds       `json:"thresholds"`
	}{Branches: []maintenanceRow{}, Thresholds: rule}
	for _, row := range rows {
		out.Branches = append(out.Branches, maintenanceOf(row))
	}
	writeJSON(w, http.StatusOK, out)
}

// compactionDue lists the tables (and branches) under a namespace, at
// any depth, whose latest version needs a compaction: the most small
// fragments first, at most limit.
func (c *console) compactionDue(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), idOf(r)
	limit, err := intParam(r, "limit", 100, 1, 1000)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	if !id.IsRoot() {
		if _, err := call[*api.DescribeNamespaceResponse](ctx, c, api.OpDescribeNamespace, api.DescribeNamespaceRequest{ID: id}); err != nil {
			writeError(w, c.log, err)
			return
		}
	}
	if c.cfg.SQL == nil {
		writeError(w, c.log, nserror.New(nserror.ServiceUnavailable, "SQL is off (no Flight SQL surface): maintenance is read through it"))
		return
	}
	prefix := ""
	if !id.IsRoot() {
		prefix = id.String() + api.Delimiter
	}
	_, rows, more, err := c.page(ctx, 0, limit, maintenanceSelect+` WHERE needs_compaction AND starts_with(table_id, ?)
		ORDER BY small_fragments DESC, deleted_rows DESC, table_id, branch NULLS FIRST`, prefix)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	type due struct {
		ID api.ID `json:"id"`
		maintenanceRow
	}
	out := struct {
		Tables     []due      `json:"tables"`
		More       bool       `json:"more"`
		Thresholds thresholds `json:"thresholds"`
	}{Tables: []due{}, More: more, Thresholds: rule}
	for _, row := range rows {
		tid, _ := row[0].(string)
		out.Tables = append(out.Tables, due{ID: api.ID(strings.Split(tid, api.Delimiter)), maintenanceRow: maintenanceOf(row)})
	}
	writeJSON(w, http.StatusOK, out)
}

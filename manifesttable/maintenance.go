package manifesttable

import "strconv"

// Maintenance signals. Each table version's statistics (stats.go) carry
// what its manifest says of the table's upkeep: how many of its
// fragments are small, how many rows are deleted, and which operation
// its Lance transaction was (a compaction is a Rewrite, transaction.go).
// A cleanup — a catalog change that removed version records of a table
// (delete_versions, delete_version_ranges) — stamps the table's row with
// its time (last_cleanup_at; the materializer's clock when it translates
// the change, which it does in the group commit that makes the change
// durable). From these, per table and per Lance branch, the view
// table_maintenance (and table_maintenance_at(n) for time travel) shows
// the version records, the latest version's fragments, the last cleanup
// and compaction and whether the table needs a compaction; metrics read
// the same rule's totals from the index (Table.MaintenanceTotals).

// SmallFragmentRows is the physical row count under which a fragment is
// small: LanceDB's own bound for Table.stats()'s num_small_fragments
// (and flightns's GetTableStats), a tenth of Lance's compaction target
// (CompactionOptions.target_rows_per_fragment, 1,048,576).
const SmallFragmentRows = 100_000

// CompactSmallFragments is how many small fragments make the latest
// version need a compaction: ten small fragments hold fewer rows than
// one fragment of Lance's target size, so from ten on a compaction
// folds at least ten fragments' files (and their metadata, which every
// scan reads) into one; fewer are a table's ordinary tail of recent
// appends.
const CompactSmallFragments = 10

// CompactDeletedRatio is the deleted share of the latest version's
// physical rows above which it needs a compaction: Lance's own default
// (CompactionOptions.materialize_deletions_threshold, 0.1). Lance
// applies it to each fragment; over the whole table a share above it
// means at least one fragment is above it too, so a table flagged for
// this always has deletions a compaction would materialize.
const CompactDeletedRatio = 0.1

// NeedsCompaction is the rule of table_maintenance.needs_compaction for
// a version with small fragments, rows (deletions excluded) and
// deleted rows.
func NeedsCompaction(small, rows, deleted uint64) bool {
	return small >= CompactSmallFragments || float64(deleted) > CompactDeletedRatio*(float64(rows)+float64(deleted))
}

// maintenanceQuery is the table_maintenance query over tables (object_id,
// last_cleanup_at of the table rows) and versions (the version rows): one
// row per table for main (also for a table without versions: versions 0,
// the rest NULL) and one per Lance branch with version records.
// needs_compaction is NULL while the latest version's statistics are
// unread.
func maintenanceQuery(tables, versions string) string {
	ratio := strconv.FormatFloat(CompactDeletedRatio, 'g', -1, 64)
	// The newest version's columns travel as one struct through one
	// arg_max_null (NULLs kept: an unread newest version is unknown, not
	// an older one's numbers): about a third of the time of an aggregate
	// per column.
	return `WITH v AS (SELECT object_id, branch, count(*) AS versions, min(table_version) AS oldest_version,
		max(table_version) AS latest_version,
		arg_max_null(struct_pack(committed_at, num_rows, num_fragments, small_fragments, deleted_rows, data_bytes), table_version) AS l,
		arg_max(struct_pack(table_version, committed_at), table_version) FILTER (WHERE operation = '` + OpRewrite + `') AS c
		FROM ` + versions + ` GROUP BY object_id, branch)
	SELECT t.object_id AS table_id, v.branch, coalesce(v.versions, 0) AS versions, v.oldest_version, v.latest_version,
		v.l.committed_at AS latest_committed_at, v.l.num_rows AS num_rows, v.l.num_fragments AS num_fragments,
		v.l.small_fragments AS small_fragments, v.l.deleted_rows AS deleted_rows, v.l.data_bytes AS data_bytes,
		t.last_cleanup_at, v.c.table_version AS last_compaction_version, v.c.committed_at AS last_compaction_at,
		(v.l.small_fragments >= ` + strconv.Itoa(CompactSmallFragments) + ` OR
		 v.l.deleted_rows::DOUBLE > ` + ratio + ` * (v.l.num_rows::DOUBLE + v.l.deleted_rows::DOUBLE)) AS needs_compaction
	FROM ` + tables + ` t LEFT JOIN v ON v.object_id = t.object_id`
}

// MaintenanceTotals sums the maintenance signals over the latest version
// of every version chain (main and each Lance branch) of every table, as
// table_maintenance's rows would: the metrics' aggregate gauges.
type MaintenanceTotals struct {
	// Chains is the version chains with at least one version record.
	Chains int
	// Versions is their version records.
	Versions int
	// SmallFragments and DeletedRows sum over the latest versions whose
	// fragments were read.
	SmallFragments, DeletedRows uint64
	// NeedingCompaction is the chains whose latest version needs a
	// compaction (NeedsCompaction).
	NeedingCompaction int
	// Unread is the chains whose latest version's fragments are not read
	// (yet, or from before flightns kept them).
	Unread int
}

// MaintenanceTotals computes the totals from the index, in
// O(version chains): it reads each chain's newest row only.
func (t *Table) MaintenanceTotals() MaintenanceTotals {
	t.idx.RLock()
	defer t.idx.RUnlock()
	var m MaintenanceTotals
	for k, vs := range t.idx.rows.vers {
		id, _ := splitVerKey(k)
		if _, ok := t.idx.rows.objects[Key{Type: TypeTable, ID: id}]; !ok || len(vs) == 0 {
			continue // the versions of a directory that is no table's
		}
		m.Chains++
		m.Versions += len(vs)
		small, deleted, rows, ok := vs[len(vs)-1].fragmentStats()
		if !ok {
			m.Unread++
			continue
		}
		m.SmallFragments += small
		m.DeletedRows += deleted
		if NeedsCompaction(small, rows, deleted) {
			m.NeedingCompaction++
		}
	}
	return m
}

// fragmentStats is what a version row says of its fragments: small ones,
// deleted rows and rows, when they were read.
func (vr verRow) fragmentStats() (small, deleted, rows uint64, ok bool) {
	switch {
	case vr.full != nil:
		r := vr.full
		return r.SmallFragments, r.DeletedRows, r.NumRows, r.HasFragmentStats
	case vr.st != nil:
		return vr.st.small, vr.st.deleted, vr.st.rows, vr.st.hasFrag
	}
	return 0, 0, 0, false
}

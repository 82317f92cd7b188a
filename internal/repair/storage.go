package repair

import (
	"context"
	"fmt"
	"time"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// RepairOptions configures Repair.
type RepairOptions struct {
	Objects *objstore.Store
	Redis   redisstate.Client
	Catalog string
	// DryRun says what would be done and changes nothing.
	DryRun bool
	// Now names the quarantine directory.
	Now time.Time
	// Open opens the catalog once its files form a readable chain again.
	Open func(ctx context.Context) (*namespace.Service, error)
	// Progress follows the quarantine, then the verification.
	Progress Progress
}

// QuarantinedFile is one file a repair took out of __manifest's history.
type QuarantinedFile struct {
	Key    string `json:"key"`
	To     string `json:"to,omitempty"` // empty in a dry run
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// RepairReport says what Repair found and did, and what it could not
// recover.
type RepairReport struct {
	DryRun bool `json:"dry_run"`
	// Snapshot and Seq: the readable chain kept (its snapshot, 0 for none,
	// and the sequence it reaches).
	Snapshot uint64 `json:"snapshot"`
	Seq      uint64 `json:"seq"`
	// Quarantined lists the files taken out, and where they went.
	Quarantined []QuarantinedFile `json:"quarantined"`
	// LostFirst..LostLast: sequences that were durable but are past the
	// chain kept (0, 0: none).
	LostFirst uint64 `json:"lost_first,omitempty"`
	LostLast  uint64 `json:"lost_last,omitempty"`
	// FromLog: the first of them that Redis's commit log still holds (0:
	// none); from there on they are re-materialized exactly.
	FromLog uint64 `json:"from_log,omitempty"`
	// Restored: objects whose rows were lost, brought back from Redis's
	// object index (ids, types and locations; not properties).
	Restored []string `json:"restored,omitempty"`
	// Adopted: tables rebuilt from their directories (no readable chain
	// and no object index: storage alone).
	Adopted []namespace.AdoptedTable `json:"adopted,omitempty"`
	// Verify is the verification (with repair) that closes the run.
	Verify *VerifyReport `json:"verify,omitempty"`
	// Snapshotted is the snapshot written at the end (0: none).
	Snapshotted uint64 `json:"snapshotted,omitempty"`
	// Unrecovered says, one sentence each, what could not be recovered.
	Unrecovered []string `json:"unrecovered"`
}

// Repair makes a catalog whose __manifest files are damaged (a truncated
// snapshot, garbage in a segment, a segment deleted or emptied) whole
// again, as far as storage and Redis can prove it:
//
//  1. it keeps the newest snapshot that reads whole and the segments that
//     continue it, and moves every other file of the history into a
//     quarantine directory (copied, never deleted);
//  2. it opens the catalog from that chain: the sequences after it come
//     back from Redis's commit log when the log still holds them, and
//     table versions past what the log holds are re-derived from storage;
//  3. it restores the rows of namespaces and tables that Redis's object
//     index still records; when no readable chain and no index exist, it
//     registers the table directories that storage proves;
//  4. it verifies every table with repair, and writes a snapshot.
//
// It refuses while a server materializes the catalog. With DryRun it only
// plans (step 1) and reports.
func Repair(ctx context.Context, o RepairOptions) (RepairReport, error) {
	rep := RepairReport{DryRun: o.DryRun, Unrecovered: []string{}}
	plan, err := manifesttable.PlanStorageRepair(ctx, o.Objects, o.Redis, o.Catalog)
	if err != nil {
		return rep, err
	}
	rep.Snapshot, rep.Seq = plan.State.Snapshot, plan.State.Seq
	for _, fp := range plan.Remove {
		rep.Quarantined = append(rep.Quarantined, QuarantinedFile{Key: fp.Key, Kind: string(fp.Kind), Detail: fp.Detail})
	}
	if plan.LostLast > 0 {
		rep.LostFirst, rep.LostLast = plan.State.Seq+1, plan.LostLast
		if plan.LogFirst > 0 && plan.LogFirst <= plan.LostLast {
			rep.FromLog = plan.LogFirst
		}
	}
	if o.DryRun {
		if plan.Holder != "" {
			rep.Unrecovered = append(rep.Unrecovered, "a server materializes this catalog: repair refuses to run until every server of it is stopped")
		}
		rep.Unrecovered = append(rep.Unrecovered, rep.lostSentences()...)
		return rep, nil
	}
	if len(plan.Remove) > 0 {
		dir := manifesttable.QuarantineDir(o.Now)
		to, err := plan.Quarantine(ctx, o.Objects, o.Redis, dir, o.Progress.report)
		for i := range to {
			rep.Quarantined[i].To = to[i]
		}
		if err != nil {
			return rep, err
		}
	}

	svc, err := o.Open(ctx)
	if err != nil {
		return rep, fmt.Errorf("opening the catalog from the chain kept: %w", err)
	}
	defer func() { _ = svc.Close() }()
	cat := CatalogOf(svc)
	tb := cat.Table
	if err := tb.WaitCaughtUp(ctx); err != nil {
		return rep, fmt.Errorf("re-materializing Redis's commit log: %w", err)
	}
	if rep.Restored, err = svc.Index().RestoreIndexedRows(ctx); err != nil {
		return rep, fmt.Errorf("restoring rows from Redis's object index: %w", err)
	}
	if plan.State.Snapshot == 0 && plan.State.Applied == 0 && len(tb.Objects()) == 0 {
		adopted, skipped, err := svc.Index().AdoptTableDirectories(ctx)
		rep.Adopted = adopted
		rep.Unrecovered = append(rep.Unrecovered, "no readable __manifest file and no object index in Redis: only tables with a final manifest in a directory named <hash8>_<object_id> are proven by storage; "+
			"namespaces without tables, tables at other locations, and every property are lost")
		for _, s := range skipped {
			rep.Unrecovered = append(rep.Unrecovered, "directory "+s+": not adopted")
		}
		if err != nil {
			return rep, fmt.Errorf("rebuilding tables from their directories: %w", err)
		}
	}
	vr, err := Verify(ctx, cat, true, o.Progress)
	if err != nil {
		return rep, err
	}
	rep.Verify = &vr
	if err := tb.Compact(ctx); err != nil {
		return rep, fmt.Errorf("writing the repaired snapshot: %w", err)
	}
	rep.Snapshotted = tb.Visible()
	rep.Unrecovered = append(rep.Unrecovered, rep.lostSentences()...)
	if n := vr.Unrepaired(); n > 0 {
		rep.Unrecovered = append(rep.Unrecovered, fmt.Sprintf("%d drift(s) that verify could not repair (listed under verify)", n))
	}
	return rep, nil
}

// lostSentences says what the lost sequences cost.
func (r *RepairReport) lostSentences() []string {
	if r.LostFirst == 0 {
		return nil
	}
	last := r.LostLast
	if r.FromLog > 0 {
		last = r.FromLog - 1
	}
	if last < r.LostFirst {
		return nil // the log holds them all
	}
	var out []string
	out = append(out, fmt.Sprintf("catalog sequences %d..%d are in no readable file and no longer in Redis's commit log: their table versions are re-derived from storage, "+
		"their namespaces and tables from Redis's object index (without properties); any other change they held (properties, renames, drops, partition metadata) is lost", r.LostFirst, last))
	if len(r.Restored) > 0 {
		out = append(out, fmt.Sprintf("%d object(s) restored without their properties: %v", len(r.Restored), r.Restored))
	}
	if len(r.Adopted) > 0 {
		out = append(out, fmt.Sprintf("%d table(s) rebuilt from their directories without properties (a deregistered table comes back too)", len(r.Adopted)))
	}
	return out
}

// String is the report as text, one fact per line.
func (r RepairReport) String() string {
	var b []byte
	add := func(format string, args ...any) { b = fmt.Appendf(b, format+"\n", args...) }
	verb := "quarantined"
	if r.DryRun {
		verb = "would quarantine"
	}
	for _, q := range r.Quarantined {
		if q.To != "" {
			add("%s %s -> %s (%s: %s)", verb, q.Key, q.To, q.Kind, q.Detail)
		} else {
			add("%s %s (%s: %s)", verb, q.Key, q.Kind, q.Detail)
		}
	}
	if r.Snapshot > 0 {
		add("chain kept: snapshot %d, up to catalog sequence %d", r.Snapshot, r.Seq)
	} else {
		add("chain kept: no snapshot, up to catalog sequence %d", r.Seq)
	}
	if r.LostFirst > 0 {
		switch {
		case r.FromLog == r.LostFirst:
			add("sequences %d..%d: re-materialized from Redis's commit log", r.LostFirst, r.LostLast)
		case r.FromLog > 0:
			add("sequences %d..%d: re-materialized from Redis's commit log", r.FromLog, r.LostLast)
		}
	}
	for _, id := range r.Restored {
		add("restored from Redis's object index: %s", id)
	}
	for _, a := range r.Adopted {
		add("rebuilt from its directory: table %s at %s", a.ID, a.Location)
	}
	if r.Verify != nil {
		add("verified %d tables, %d version records: %d drift, %d left", r.Verify.Tables, r.Verify.Versions, len(r.Verify.Drift), r.Verify.Unrepaired())
	}
	if r.Snapshotted > 0 {
		add("wrote snapshot %d", r.Snapshotted)
	}
	for _, u := range r.Unrecovered {
		add("not recovered: %s", u)
	}
	if len(r.Unrecovered) == 0 && !r.DryRun {
		add("nothing was lost")
	}
	return string(b)
}

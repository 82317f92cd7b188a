package repair

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// caughtUpWait bounds how long Verify waits for the commit log to reach a
// segment before it reads __manifest from storage.
const caughtUpWait = time.Minute

// appendChunk is how many re-derived rows one commit-log append carries.
const appendChunk = 500

// manifestCheck checks __manifest as storage holds it (Verify's second
// step, and all of VerifyStorage).
type manifestCheck struct {
	objs    *objstore.Store
	catalog string
	// claims and table are nil for a check of storage alone: no version
	// records are compared and nothing is repaired.
	claims *redisclaim.Store
	table  *manifesttable.Table
	repair bool
}

// VerifyStorage checks the __manifest table in storage alone, without
// Redis and without opening the catalog: for a catalog that does not open
// (a server refuses to load a segment or snapshot), it says which files
// are wrong and checks the rows that the readable files hold against the
// tables' directories. It repairs nothing; version records are not
// compared (no MissingRow, and VerifyReport.Tables and Versions stay 0).
func VerifyStorage(ctx context.Context, objs *objstore.Store, catalog string, progress Progress) (VerifyReport, error) {
	var rep VerifyReport
	c := manifestCheck{objs: objs, catalog: catalog}
	return rep, c.run(ctx, &rep, progress)
}

// verifyManifest is Verify's second step.
func verifyManifest(ctx context.Context, cat Catalog, repair bool, rep *VerifyReport, progress Progress) error {
	c := manifestCheck{objs: cat.Claims.Objects(), catalog: cat.Claims.Catalog(), claims: cat.Claims, table: cat.Table, repair: repair}
	// Version rows linger before the materializer writes them: wait until
	// everything logged so far is in a durable segment. WaitDurable, not
	// WaitCaughtUp: what counts is storage, not what the SQL engine shows.
	wctx, cancel := context.WithTimeout(ctx, caughtUpWait)
	head, err := c.table.Head(wctx)
	if err == nil && head > 0 {
		err = c.table.WaitDurable(wctx, head)
	}
	cancel()
	if err != nil {
		return fmt.Errorf("repair: waiting for the commit log to reach __manifest's segments: %w", err)
	}
	return c.run(ctx, rep, progress)
}

func (c *manifestCheck) run(ctx context.Context, rep *VerifyReport, progress Progress) error {
	st, err := manifesttable.LoadState(ctx, c.objs, c.catalog)
	if err != nil {
		return fmt.Errorf("repair: reading __manifest from storage: %w", err)
	}
	rep.Manifest = ManifestStats{Seq: st.Seq, Snapshot: st.Snapshot, Snapshots: st.Snapshots, Segments: st.Segments, Rows: st.Rows()}
	for _, p := range st.Problems {
		kind := UnreadableManifestFile
		switch p.Kind {
		case manifesttable.ProblemForeign:
			kind = ForeignManifestFile
		case manifesttable.ProblemGap:
			kind = SegmentGap
		}
		rep.Drift = append(rep.Drift, Drift{Kind: kind, Path: p.Key, Detail: p.Detail})
	}

	// Namespace and table rows: valid ids, valid rows, usable locations.
	var tables []Table
	for _, r := range st.Objects() {
		if err := checkObjectID(r.ObjectType, r.ObjectID); err != nil {
			rep.Drift = append(rep.Drift, Drift{Kind: InvalidObjectID, Table: r.ObjectID, Object: r.ObjectType, Detail: err.Error()})
		}
		if err := r.Validate(); err != nil {
			rep.Drift = append(rep.Drift, Drift{Kind: InvalidRow, Table: r.ObjectID, Object: r.ObjectType, Detail: err.Error()})
			continue
		}
		if r.ObjectType != manifesttable.TypeTable || r.Location == "" {
			continue
		}
		if err := checkLocation(r.Location); err != nil {
			rep.Drift = append(rep.Drift, Drift{Kind: InvalidRow, Table: r.ObjectID, Object: r.ObjectType,
				Detail: fmt.Sprintf("location %q is not a table directory: %v", r.Location, err)})
			continue
		}
		tables = append(tables, Table{ID: r.ObjectID, Location: r.Location})
	}

	// Each table's version rows against its directory and its records.
	progress.report(0, len(tables))
	for i, t := range tables {
		branches, err := c.branchesOf(ctx, st, t)
		if err != nil {
			return fmt.Errorf("repair: the branches of table %s: %w", t.ID, err)
		}
		for _, b := range append([]string{""}, branches...) {
			if err := c.tableRows(ctx, st, t, b, rep); err != nil {
				return fmt.Errorf("repair: __manifest rows of table %s (branch %q): %w", t.ID, b, err)
			}
		}
		progress.report(i+1, len(tables))
	}

	// Version rows of ids that no table row has.
	for _, id := range st.VersionTables() {
		if _, ok := st.Object(manifesttable.TypeTable, id); ok {
			continue
		}
		if err := checkObjectID(manifesttable.TypeTableVersion, id); err != nil {
			rep.Drift = append(rep.Drift, Drift{Kind: InvalidObjectID, Table: id, Object: manifesttable.TypeTableVersion, Detail: err.Error()})
		}
		for _, r := range st.VersionRows(id) {
			rep.Drift = append(rep.Drift, Drift{Kind: RowWithoutTable, Table: id, Version: r.TableVersion, Path: r.ManifestPath,
				Object: manifesttable.TypeTableVersion, Detail: "no table row has this object_id"})
		}
	}
	return nil
}

// branchesOf lists a table's Lance branches: those with version rows and
// those Lance records in _refs/branches/.
func (c *manifestCheck) branchesOf(ctx context.Context, st *manifesttable.State, t Table) ([]string, error) {
	seen := map[string]bool{}
	for _, b := range st.Branches(t.ID) {
		seen[b] = true
	}
	if err := refBranches(ctx, c.objs, t.Location, seen); err != nil {
		return nil, err
	}
	return sortedKeys(seen), nil
}

// tableRows checks the version rows of one table's branch ("" is main)
// and its final version records against each other and against the
// branch's _versions directory (the table's own for main, tree/<branch>/
// for another).
func (c *manifestCheck) tableRows(ctx context.Context, st *manifesttable.State, t Table, branch string, rep *VerifyReport) error {
	objs := c.objs
	dir := lancemanifest.Chain{Table: lancemanifest.Dir(t.Location), Branch: branch}.Dir()
	chain := string(dir)
	if branch != "" && objstore.ValidateKey(chain) != nil {
		rep.Drift = append(rep.Drift, Drift{Kind: InvalidRow, Table: t.ID, Branch: branch, Object: manifesttable.TypeTableVersion,
			Detail: "the branch's name makes no usable directory"})
		return nil
	}
	// The records first: listing them finishes every commit still staged
	// (helping), so a row claimed before the state was read names a
	// manifest that is final by the time the directory is listed below.
	var records []redisclaim.Location
	if c.claims != nil {
		var err error
		if records, err = c.claims.AllVersions(ctx, chain); err != nil {
			return err
		}
	}
	stored := map[string]objstore.Attrs{} // every object in _versions, by key
	list, err := objs.ListAll(ctx, dir.Versions())
	if err != nil {
		return err
	}
	for _, a := range list {
		stored[a.Key] = a
	}
	// lookup finds a final manifest: in the listing, else by a HEAD (an
	// object written after the listing).
	lookup := func(key string) (objstore.Attrs, bool, error) {
		if a, ok := stored[key]; ok {
			return a, true, nil
		}
		a, err := objs.Head(ctx, key)
		if errors.Is(err, objstore.ErrNotFound) {
			return objstore.Attrs{}, false, nil
		}
		return a, err == nil, err
	}

	for _, r := range st.BranchVersionRows(t.ID, branch) {
		d := Drift{Table: t.ID, Branch: branch, Version: r.TableVersion, Path: r.ManifestPath, Object: manifesttable.TypeTableVersion}
		if err := r.Validate(); err != nil {
			d.Kind, d.Detail = InvalidRow, err.Error()
			rep.Drift = append(rep.Drift, d)
			continue
		}
		if why := outsideTable(r, chain); why != "" {
			d.Kind, d.Detail = RowOutsideTable, why
			rep.Drift = append(rep.Drift, d)
			continue
		}
		a, ok, err := lookup(r.ManifestPath)
		if err != nil {
			return err
		}
		switch {
		case !ok:
			d.Kind, d.Detail = RowMissingManifest, "the final manifest does not exist"
			rep.Drift = append(rep.Drift, d)
		case r.ManifestSize > 0 && uint64(a.Size) != r.ManifestSize:
			d.Kind, d.Detail = RowSizeMismatch, fmt.Sprintf("row says %d bytes, storage holds %d", r.ManifestSize, a.Size)
			rep.Drift = append(rep.Drift, d)
		}
	}

	// Final versions recorded at a sequence the segments cover, without a
	// row. Versions found in storage (seeded, no sequence) never had a
	// commit-log entry and are not expected to have rows; versions claimed
	// after the segments read are not there yet.
	var missing []manifesttable.Change
	var missingAt []int // their drift's index in rep.Drift
	for _, l := range records {
		if l.Seq == 0 || l.Seq > st.Seq || st.HasBranchVersion(t.ID, branch, l.Version) {
			continue
		}
		d := Drift{Kind: MissingRow, Table: t.ID, Branch: branch, Version: l.Version, Path: l.Path,
			Detail: fmt.Sprintf("recorded final at catalog sequence %d, which the segments cover (up to %d)", l.Seq, st.Seq)}
		a, ok, err := lookup(l.Path)
		if err != nil {
			return err
		}
		inside := outsideTable(manifesttable.Row{TableVersion: l.Version, ManifestPath: l.Path}, chain) == ""
		if c.repair && ok && inside {
			missing = append(missing, manifesttable.Change{Row: manifesttable.Row{ObjectType: manifesttable.TypeTableVersion,
				ObjectID: t.ID, Branch: branch, TableVersion: l.Version, ManifestPath: a.Key, ManifestSize: uint64(a.Size),
				CommittedAt: l.CommittedAt.UTC().Truncate(time.Microsecond), TxnID: l.TxnID}})
			missingAt = append(missingAt, len(rep.Drift))
		} else if c.repair {
			d.Detail += "; not re-derived: its final manifest is not in the table's directory"
		}
		rep.Drift = append(rep.Drift, d)
	}
	// Re-derived rows go through the commit log, so they reach a new
	// segment as every other change does.
	for start := 0; start < len(missing); start += appendChunk {
		end := min(start+appendChunk, len(missing))
		seq, err := c.table.Append(ctx, missing[start:end])
		if err == nil {
			wctx, cancel := context.WithTimeout(ctx, caughtUpWait)
			err = c.table.WaitDurable(wctx, seq)
			cancel()
		}
		for _, i := range missingAt[start:end] {
			if err != nil {
				rep.Drift[i].Detail += "; re-deriving the row failed: " + err.Error()
			} else {
				rep.Drift[i].Repaired = true
			}
		}
	}
	return nil
}

// outsideTable says why a version row's manifest_path is not the final
// manifest of its version inside the table directory loc ("" when it
// is).
func outsideTable(r manifesttable.Row, loc string) string {
	if r.ManifestPath == "" {
		return "the row names no manifest"
	}
	if err := objstore.ValidateKey(r.ManifestPath); err != nil {
		return fmt.Sprintf("not a key inside the root: %v", err)
	}
	dir, m, err := lancemanifest.ParseManifestPath(r.ManifestPath)
	switch {
	case err != nil || string(dir) != loc:
		return fmt.Sprintf("not inside the table's directory %s", lancemanifest.Dir(loc).Versions())
	case m.Staging:
		return "names a staging manifest, not a final one"
	case m.Detached:
		return "names a detached manifest"
	case m.Version != r.TableVersion:
		return fmt.Sprintf("names the manifest of version %d", m.Version)
	}
	return ""
}

// checkObjectID checks a row's object_id: a valid id, and the root (the
// empty id) only for a namespace.
func checkObjectID(typ, id string) error {
	if id == "" {
		if typ == manifesttable.TypeNamespace {
			return nil
		}
		return errors.New("empty object_id")
	}
	_, err := api.ParseID(id, api.Delimiter)
	return err
}

// checkLocation checks a table location as the claim store does: a key
// inside the root, outside __manifest, with no _versions directory in it.
func checkLocation(loc string) error {
	if err := objstore.ValidateKey(loc); err != nil {
		return err
	}
	if loc == strings.TrimSuffix(manifesttable.Prefix, "/") || strings.HasPrefix(loc, manifesttable.Prefix) {
		return errors.New("inside the catalog's own __manifest")
	}
	if strings.Contains("/"+loc+"/", "/_versions/") {
		return errors.New("contains a _versions directory")
	}
	if path.Clean(loc) != loc {
		return errors.New("not a clean path")
	}
	return nil
}

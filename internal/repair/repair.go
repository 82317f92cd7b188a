package repair

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// Progress is told how much of a long operation is done: done of total
// units (tables); total is 0 while unknown. It may be nil.
type Progress func(done, total int)

func (p Progress) report(done, total int) {
	if p != nil {
		p(done, total)
	}
}

// Recover rebuilds the catalog's Redis state from object storage. With
// force it first closes the epoch (redisclaim.Store.CloseEpoch), so the
// rebuild happens even though Redis seems whole (a running server's next
// commit waits for it, as after a Redis restart without data); without
// force it only runs when Redis lost the state.
func Recover(ctx context.Context, c Catalog, force bool) (redisclaim.RecoveryStats, error) {
	if force {
		if err := c.Claims.CloseEpoch(ctx); err != nil {
			return redisclaim.RecoveryStats{}, fmt.Errorf("repair: clearing the epoch: %w", err)
		}
	}
	return c.Claims.RecoverWithStats(ctx)
}

// Compact writes a __manifest snapshot at the newest durable sequence now.
func Compact(ctx context.Context, c Catalog) error {
	if err := c.Table.WaitCaughtUp(ctx); err != nil {
		return err
	}
	return c.Table.Compact(ctx)
}

// Catalog is the catalog repair works on: the claim store and the
// __manifest table as such (repair reads and repairs them), and the
// object index's reservations of table directories. CatalogOf hands over
// a namespace service's.
type Catalog struct {
	Claims *redisclaim.Store
	Table  *manifesttable.Table
	Index  Index
}

// Index is what gc asks of the object index before it deletes under a
// dropped table's directory: what it must spare, and the release of the
// directory once emptied. namespace.Index is one.
type Index interface {
	Sparing(ctx context.Context, loc string, kept []string) (namespace.Sparing, error)
	ReleaseLocation(ctx context.Context, loc string) error
}

// CatalogOf is the catalog a namespace service serves: its claim store,
// its __manifest table and its object index.
func CatalogOf(svc *namespace.Service) Catalog {
	return Catalog{Claims: svc.Claims(), Table: svc.Table(), Index: svc.Index()}
}

// Table is a table of the catalog: its id and its directory (the claim
// store's table key).
type Table struct {
	ID, Location string
}

// Tables lists every table of the catalog, by id. A table row whose
// location is not a usable table directory (see checkLocation) is left
// out: nothing is read or written under it, and Verify reports it as
// invalid-row.
func Tables(ctx context.Context, c Catalog) ([]Table, error) {
	if err := c.Table.Sync(ctx); err != nil {
		return nil, err
	}
	var out []Table
	for _, r := range c.Table.Objects() {
		if r.ObjectType == manifesttable.TypeTable && r.Location != "" && checkLocation(r.Location) == nil {
			out = append(out, Table{ID: r.ObjectID, Location: r.Location})
		}
	}
	slices.SortFunc(out, func(a, b Table) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// DriftKind names a disagreement between a version record, a __manifest
// row or file, and storage.
type DriftKind string

// The kinds of drift between the claim store's version records and the
// final manifests in storage.
const (
	// MissingManifest: a version is recorded, its final manifest is gone
	// (deleted behind the catalog's back, e.g. by Lance's cleanup).
	// Repair forgets the record.
	MissingManifest DriftKind = "missing-manifest"
	// PrunedVersion: a version is recorded and Lance's cleanup deleted its
	// manifest (it is below the oldest kept version; see
	// redisclaim.ClassifyPrunes). Not drift: its record leaves the
	// catalog, with or without repair.
	PrunedVersion DriftKind = "pruned-version"
	// UnrecordedManifest: a final manifest above the recorded head exists
	// in storage (written around the catalog). Repair records it, so the
	// head moves up to it.
	UnrecordedManifest DriftKind = "unrecorded-manifest"
	// SizeMismatch: the final manifest's size differs from the record's.
	// Reported only: which one is right needs a person.
	SizeMismatch DriftKind = "size-mismatch"
)

// The kinds of drift of the __manifest table as storage holds it (its
// snapshots and log segments, read without the SQL engine; see
// manifesttable.LoadState). Segments and snapshots are create-only
// history: repair never rewrites them, so all of these are reported only,
// except MissingRow.
const (
	// UnreadableManifestFile: a segment or snapshot under __manifest/
	// does not parse, its metadata is malformed or disagrees with its
	// name, or its name is not <seq:020>.parquet.
	UnreadableManifestFile DriftKind = "unreadable-manifest-file"
	// ForeignManifestFile: a segment or snapshot says it belongs to
	// another catalog.
	ForeignManifestFile DriftKind = "foreign-manifest-file"
	// SegmentGap: the log segments after the newest snapshot do not
	// continue it sequence by sequence (a hole or an overlap); a server
	// refuses to load such a table.
	SegmentGap DriftKind = "segment-gap"
	// InvalidObjectID: a row's object_id is not a valid id (empty names,
	// the delimiter inside a name, control characters, too deep or long;
	// the empty id is valid only for the root namespace).
	InvalidObjectID DriftKind = "invalid-object-id"
	// InvalidRow: a row is not one the catalog writes (an unknown
	// object_type, version 0, metadata that is not JSON), or a table row's
	// location is not a usable table directory (outside the root, inside
	// __manifest, or containing _versions).
	InvalidRow DriftKind = "invalid-row"
	// RowOutsideTable: a table_version row's manifest_path is not the
	// final manifest of its version inside its table's _versions/
	// directory (e.g. etc/passwd, or another table's directory).
	RowOutsideTable DriftKind = "row-outside-table"
	// RowMissingManifest: a table_version row names a final manifest that
	// does not exist in storage.
	RowMissingManifest DriftKind = "row-missing-manifest"
	// RowSizeMismatch: a table_version row's manifest_size differs from
	// the size of its final manifest in storage.
	RowSizeMismatch DriftKind = "row-size-mismatch"
	// RowWithoutTable: a table_version row's object_id has no table row.
	RowWithoutTable DriftKind = "row-without-table"
	// MissingRow: the claim store records a final version, claimed at a
	// catalog sequence the segments already cover, and __manifest has no
	// row of it. Repair re-derives the row from the record and the final
	// manifest in storage and appends it to the commit log, so it reaches
	// a new segment (only when the manifest exists in the table's
	// directory; otherwise missing-manifest covers it).
	MissingRow DriftKind = "missing-row"
)

// Drift is one disagreement.
type Drift struct {
	Kind DriftKind `json:"kind"`
	// Table is the table id; for __manifest rows, the row's object_id.
	Table string `json:"table,omitempty"`
	// Branch is the Lance branch of a version row or record ("" for main).
	Branch  string `json:"branch,omitempty"`
	Version uint64 `json:"version,omitempty"`
	// Path is the final manifest key (a row's manifest_path); for
	// __manifest files, the file's key.
	Path string `json:"path,omitempty"`
	// Object is the object_type of the __manifest row the drift is about
	// ("" for version records and files).
	Object   string `json:"object_type,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Repaired bool   `json:"repaired"`
}

func (d Drift) String() string {
	var s string
	switch {
	case d.Object != "" && d.Object != manifesttable.TypeTableVersion:
		s = fmt.Sprintf("%s: %s %s", d.Kind, d.Object, quoted(d.Table))
	case d.Object == manifesttable.TypeTableVersion && d.Version == 0:
		s = fmt.Sprintf("%s: table_version rows of %s", d.Kind, quoted(d.Table))
	case d.Table == "" && d.Version == 0:
		s = fmt.Sprintf("%s: %s", d.Kind, d.Path)
	case d.Branch != "":
		s = fmt.Sprintf("%s: table %s branch %s version %d (%s)", d.Kind, printable(d.Table), printable(d.Branch), d.Version, printable(d.Path))
	default:
		s = fmt.Sprintf("%s: table %s version %d (%s)", d.Kind, printable(d.Table), d.Version, printable(d.Path))
	}
	if d.Detail != "" {
		s += ": " + d.Detail
	}
	if d.Repaired {
		s += " — repaired"
	}
	return s
}

// quoted is s in double quotes, escaped.
func quoted(s string) string { return strconv.Quote(s) }

// printable is s as it is when it prints as one plain line, else quoted.
func printable(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Tables   int `json:"tables"`
	Versions int `json:"version_records"` // version records checked
	// Manifest is what was read of __manifest in storage.
	Manifest ManifestStats `json:"manifest"`
	Drift    []Drift       `json:"drift"`
	// Pruned are the versions Lance's cleanup pruned (their manifests
	// gone, below the oldest kept version): not drift. Verify follows the
	// cleanup as every request does, and their records leave the catalog.
	Pruned []Drift `json:"pruned"`
}

// ManifestStats describes the __manifest table that Verify read from
// storage.
type ManifestStats struct {
	// Seq is the catalog sequence the snapshot and the segments that
	// continue it reach; Snapshot is that snapshot's sequence (0: none).
	Seq      uint64 `json:"seq"`
	Snapshot uint64 `json:"snapshot"`
	// Snapshots and Segments count the files checked; Rows the rows of
	// the state they make.
	Snapshots int `json:"snapshots"`
	Segments  int `json:"segments"`
	Rows      int `json:"rows"`
}

// Unrepaired counts the drift left as it was.
func (r VerifyReport) Unrepaired() int {
	n := 0
	for _, d := range r.Drift {
		if !d.Repaired {
			n++
		}
	}
	return n
}

// Verify checks the catalog against object storage, and with repair set
// fixes what it can (see DriftKind):
//
//  0. no two table directories (live tables', and dropped tables' kept for
//     undrop) meet (OverlappingLocation; the tables concerned are not
//     repaired in step 1);
//  1. every table's version records in the claim store against the final
//     manifests in its _versions directory;
//  2. the __manifest table as storage holds it — the newest snapshot and
//     every later log segment, read from the files alone, never from the
//     SQL engine or this process's index — once every change logged
//     before this step is in a segment: every segment and snapshot parses,
//     belongs to this catalog and continues the sequence; every row's id is
//     valid; every table_version row names the final manifest of its
//     version inside its own table's directory, which exists with the
//     row's size; every such row has a table row; and every final version
//     the claim store records (at a sequence the segments cover) has a row.
//
// Progress counts tables: those of step 1, then those of step 2.
func Verify(ctx context.Context, c Catalog, repair bool, progress Progress) (VerifyReport, error) {
	var rep VerifyReport
	tables, err := Tables(ctx, c)
	if err != nil {
		return rep, err
	}
	progress.report(0, 2*len(tables))
	involved, err := overlaps(ctx, c, tables, &rep)
	if err != nil {
		return rep, err
	}
	recorded, err := recordedBranches(ctx, c.Claims, tables)
	if err != nil {
		return rep, err
	}
	for i, t := range tables {
		// A table whose directory meets another's is reported, not
		// repaired: its records may be the other table's files.
		fix := repair && !involved[t.ID]
		follow := !involved[t.ID]
		if err := verifyTable(ctx, c.Claims, t, "", fix, follow, &rep); err != nil {
			return rep, fmt.Errorf("repair: table %s: %w", t.ID, err)
		}
		branches, err := liveBranches(ctx, c, t, recorded[t.Location])
		if err != nil {
			return rep, fmt.Errorf("repair: the branches of table %s: %w", t.ID, err)
		}
		for _, b := range branches {
			if err := verifyTable(ctx, c.Claims, t, b, fix, follow, &rep); err != nil {
				return rep, fmt.Errorf("repair: table %s branch %s: %w", t.ID, b, err)
			}
		}
		rep.Tables++
		progress.report(i+1, 2*len(tables))
	}
	if err := verifyManifest(ctx, c, repair, &rep, func(done, total int) { progress.report(len(tables)+done, len(tables)+total) }); err != nil {
		return rep, err
	}
	return rep, nil
}

// recordedBranches maps each table's location to the branches whose
// chains the claim store holds.
func recordedBranches(ctx context.Context, claims *redisclaim.Store, tables []Table) (map[string][]string, error) {
	locs := map[string]bool{}
	for _, t := range tables {
		locs[t.Location] = true
	}
	chains, err := claims.Chains(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, c := range chains {
		if ch := lancemanifest.ParseChain(c, func(l string) bool { return locs[l] }); ch.Branch != "" && locs[string(ch.Table)] {
			out[string(ch.Table)] = append(out[string(ch.Table)], ch.Branch)
		}
	}
	return out, nil
}

// liveBranches lists a table's Lance branches: those the claim store
// holds (recorded), those with __manifest rows and those Lance records in
// _refs/branches/.
func liveBranches(ctx context.Context, c Catalog, t Table, recorded []string) ([]string, error) {
	seen := map[string]bool{}
	for _, b := range recorded {
		seen[b] = true
	}
	for _, b := range c.Table.Branches(t.ID) {
		seen[b] = true
	}
	if err := refBranches(ctx, c.Claims.Objects(), t.Location, seen); err != nil {
		return nil, err
	}
	return sortedKeys(seen), nil
}

// refBranches adds the branches Lance records under a table's
// _refs/branches/ to seen.
func refBranches(ctx context.Context, objs *objstore.Store, loc string, seen map[string]bool) error {
	prefix := lancemanifest.Dir(loc).BranchRefs()
	list, err := objs.ListAll(ctx, prefix)
	if err != nil {
		return err
	}
	for _, a := range list {
		if b, ok := lancemanifest.BranchOfRef(a.Key[len(prefix):]); ok {
			seen[b] = true
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// verifyTable checks the version records of one table's branch ("" is
// main) against the branch's _versions directory. A branch whose
// manifests are all gone (Lance deleted it) is forgotten whole on repair,
// its __manifest rows with it. With follow, the versions Lance's cleanup
// pruned leave the catalog first (reported in rep.Pruned).
func verifyTable(ctx context.Context, claims *redisclaim.Store, t Table, branch string, repair, follow bool, rep *VerifyReport) error {
	objs := claims.Objects()
	dir := lancemanifest.Chain{Table: lancemanifest.Dir(t.Location), Branch: branch}.Dir()
	chain := string(dir)
	if objstore.ValidateKey(chain) != nil {
		return nil // verifyManifest reports the branch's name
	}
	stored := map[uint64]objstore.Attrs{} // final manifests in storage
	list, err := objs.ListAll(ctx, dir.Versions())
	if err != nil {
		return err
	}
	if branch != "" && repair && len(list) == 0 {
		return forgetGoneBranch(ctx, claims, t, branch, chain, rep)
	}
	if follow {
		if err := followPrunes(ctx, claims, t, branch, rep); err != nil {
			return err
		}
	}
	for _, a := range list {
		m, err := lancemanifest.ParseManifestName(path.Base(a.Key))
		if err != nil || m.Staging || m.Detached {
			continue
		}
		stored[m.Version] = a
	}
	records, err := claims.AllVersions(ctx, chain)
	if err != nil {
		return err
	}
	var head uint64
	for _, l := range records {
		rep.Versions++
		head = max(head, l.Version)
		a, ok := stored[l.Version]
		switch {
		case !ok:
			d := Drift{Kind: MissingManifest, Table: t.ID, Branch: branch, Version: l.Version, Path: l.Path}
			if _, err := objs.Head(ctx, l.Path); err == nil {
				continue // listed under another name scheme
			} else if !errors.Is(err, objstore.ErrNotFound) {
				return err
			}
			if repair {
				if _, err := claims.DeleteVersions(ctx, chain, []redisclaim.Range{{Start: l.Version, End: l.Version + 1}}); err != nil {
					return err
				}
				d.Repaired = true
			}
			rep.Drift = append(rep.Drift, d)
		case l.Size > 0 && a.Size != l.Size:
			rep.Drift = append(rep.Drift, Drift{Kind: SizeMismatch, Table: t.ID, Branch: branch, Version: l.Version, Path: l.Path,
				Detail: fmt.Sprintf("recorded %d bytes, storage holds %d", l.Size, a.Size)})
		}
	}
	// Final manifests above the head that no record names, in order.
	var above []uint64
	for v := range stored {
		if v > head {
			above = append(above, v)
		}
	}
	slices.Sort(above)
	for _, v := range above {
		a := stored[v]
		d := Drift{Kind: UnrecordedManifest, Table: t.ID, Branch: branch, Version: v, Path: a.Key}
		if repair {
			if err := claims.PutIfNotExists(ctx, chain, v, a.Key, a.Size, a.ETag); err != nil {
				d.Detail = err.Error()
			} else {
				d.Repaired = true
			}
		}
		rep.Drift = append(rep.Drift, d)
	}
	return nil
}

// forgetGoneBranch reports every record of a branch whose manifests are
// all gone (Lance deleted it) as missing-manifest, and forgets the chain.
func forgetGoneBranch(ctx context.Context, claims *redisclaim.Store, t Table, branch, chain string, rep *VerifyReport) error {
	// Lance deleted the branch: every record of it is missing-manifest.
	records, err := claims.AllVersions(ctx, chain)
	if err != nil {
		return err
	}
	var gone []Drift
	for _, l := range records {
		rep.Versions++
		gone = append(gone, Drift{Kind: MissingManifest, Table: t.ID, Branch: branch, Version: l.Version, Path: l.Path,
			Detail: "the branch's manifests are all gone (Lance deleted it)"})
	}
	if len(gone) > 0 {
		forgot, err := claims.ForgetGone(ctx, chain)
		if nserror.CodeOf(err) == nserror.ConcurrentModification {
			err = nil // a commit of the branch is in flight: not gone
		}
		if err != nil {
			return err
		}
		for i := range gone {
			gone[i].Repaired = forgot
		}
		rep.Drift = append(rep.Drift, gone...)
	}
	return nil
}

// followPrunes has the versions Lance's cleanup pruned of one table's
// branch leave the catalog, and reports them in rep.Pruned.
func followPrunes(ctx context.Context, claims *redisclaim.Store, t Table, branch string, rep *VerifyReport) error {
	p, err := claims.FollowPrunes(ctx, t.Location, branch)
	if err != nil {
		return err
	}
	for _, v := range p.Pruned {
		rep.Pruned = append(rep.Pruned, Drift{Kind: PrunedVersion, Table: t.ID, Branch: branch, Version: v, Repaired: true,
			Detail: fmt.Sprintf("below the oldest kept version %d", p.Oldest)})
	}
	return nil
}

// GCReport is what GC found and did.
type GCReport struct {
	Tables   int
	Staging  int      // staging objects seen
	Orphaned []string // keys older than the window and claimed by no record
	Deleted  int
	// Dropped counts the locations of dropped tables checked; Leftovers
	// lists the files written there after the drop (by a writer that
	// still held the location) and older than the window; Cleared counts
	// the locations that are empty now and forgotten.
	Dropped   int
	Leftovers []string
	Cleared   int
}

// GC deletes the staging manifests of every table that are older than
// window and that no version record points at (with dryRun it only lists
// them). Staging objects of losers, of crashed writers, and of commits
// that were never claimed end up here.
func GC(ctx context.Context, c Catalog, window time.Duration, dryRun bool, now time.Time, progress Progress) (GCReport, error) {
	var rep GCReport
	if window <= 0 {
		return rep, errors.New("repair: the gc safety window must be positive")
	}
	tables, err := Tables(ctx, c)
	if err != nil {
		return rep, err
	}
	claims := c.Claims
	objs := claims.Objects()
	progress.report(0, len(tables))
	for i, t := range tables {
		list, err := objs.ListAll(ctx, lancemanifest.Dir(t.Location).Versions())
		if err != nil {
			return rep, err
		}
		var candidates []objstore.Attrs
		for _, a := range list {
			m, err := lancemanifest.ParseManifestName(path.Base(a.Key))
			if err != nil || !m.Staging {
				continue
			}
			rep.Staging++
			if now.Sub(a.ModTime) > window {
				candidates = append(candidates, a)
			}
		}
		if len(candidates) > 0 {
			inUse, err := stagingInUse(ctx, claims, t.Location)
			if err != nil {
				return rep, err
			}
			for _, a := range candidates {
				if inUse[a.Key] {
					continue
				}
				rep.Orphaned = append(rep.Orphaned, a.Key)
				if dryRun {
					continue
				}
				if err := objs.Delete(ctx, a.Key); err != nil {
					return rep, err
				}
				rep.Deleted++
			}
		}
		rep.Tables++
		progress.report(i+1, len(tables))
	}
	return rep, collectDropped(ctx, c, objs, window, dryRun, now, &rep)
}

// collectDropped deletes what was written under a dropped table's location
// after its drop (files older than window; younger ones may belong to a
// writer still at work, and wait for the next run), and forgets the
// location once it is empty and its drop is older than window, releasing
// its reservation. What another table holds is left alone
// (namespace.Index.Sparing): a location a live table owns, a location
// inside a reserved directory or a kept drop's, and the reserved
// directories inside it; a location left alone whole is forgotten.
func collectDropped(ctx context.Context, c Catalog, objs *objstore.Store, window time.Duration, dryRun bool, now time.Time, rep *GCReport) error {
	dropped, err := namespace.DroppedTables(ctx, objs)
	if err != nil || len(dropped) == 0 {
		return err
	}
	keptTables, err := namespace.KeptTables(ctx, objs)
	if err != nil {
		return err
	}
	kept := make([]string, len(keptTables))
	for i, k := range keptTables {
		kept[i] = k.Location
	}
	for _, d := range dropped {
		rep.Dropped++
		sp, err := c.Index.Sparing(ctx, d.Location, kept)
		if err != nil {
			return err
		}
		owned := sp.All || slices.Contains(kept, d.Location)
		left := 0
		if !owned {
			for a, err := range objs.List(ctx, d.Location+"/") {
				if err != nil {
					return err
				}
				if slices.ContainsFunc(sp.Dirs, func(dir string) bool { return strings.HasPrefix(a.Key, dir) }) {
					continue // another table's
				}
				if now.Sub(a.ModTime) <= window {
					left++
					continue
				}
				rep.Leftovers = append(rep.Leftovers, a.Key)
				if dryRun {
					left++
					continue
				}
				if err := objs.Delete(ctx, a.Key); err != nil {
					return err
				}
			}
		}
		if dryRun || left > 0 || (!owned && now.Sub(d.DroppedAt) <= window) {
			continue
		}
		if err := objs.Delete(ctx, d.Key); err != nil {
			return err
		}
		rep.Cleared++
		if !owned {
			if err := c.Index.ReleaseLocation(ctx, d.Location); err != nil {
				return err
			}
		}
	}
	return nil
}

// stagingInUse is the set of staging keys the table's version records
// name.
func stagingInUse(ctx context.Context, claims *redisclaim.Store, table string) (map[string]bool, error) {
	in := map[string]bool{}
	for after := uint64(0); ; {
		page, next, err := claims.ListVersions(ctx, table, redisclaim.ListOptions{After: after})
		if err != nil {
			return nil, err
		}
		for _, l := range page {
			if l.StagingPath != "" {
				in[l.StagingPath] = true
			}
		}
		if next == 0 {
			return in, nil
		}
		after = next
	}
}

// VerifyTable is step 1 of Verify for one table, without repairing: its
// version records, on main and on every branch __manifest or Lance's
// _refs/branches/ knows, against the final manifests in storage (the web
// console's table page). Unlike Verify it does not read every chain the
// claim store holds (one command over the whole catalog), so a branch
// recorded in Redis alone is left to Verify.
func VerifyTable(ctx context.Context, c Catalog, t Table) (VerifyReport, error) {
	var rep VerifyReport
	if err := checkLocation(t.Location); err != nil {
		rep.Drift = append(rep.Drift, Drift{Kind: InvalidRow, Table: t.ID, Object: manifesttable.TypeTable, Detail: err.Error()})
		return rep, nil
	}
	branches, err := liveBranches(ctx, c, t, nil)
	if err != nil {
		return rep, err
	}
	for _, b := range append([]string{""}, branches...) {
		if err := verifyTable(ctx, c.Claims, t, b, false, true, &rep); err != nil {
			return rep, fmt.Errorf("repair: table %s branch %q: %w", t.ID, b, err)
		}
	}
	rep.Tables = 1
	return rep, nil
}

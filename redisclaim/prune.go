package redisclaim

import (
	"context"
	"slices"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// Pruned versions. Lance's cleanup (LanceDB's optimize with
// cleanupOlderThan, Lance's cleanup_old_versions) deletes the manifests of
// old versions straight from storage and tells no catalog. What it
// deletes has a shape: every version older than a cutoff, except the
// latest, the tagged ones and those a branch was forked from. So a chain
// whose records name missing manifests is read against that shape:
//
//   - the oldest kept version is the lowest version whose manifest exists
//     and that no ref (tag or branch base) keeps;
//   - a recorded version below it whose manifest is gone was pruned: its
//     record leaves the catalog (one catalog change, a delete_versions log
//     entry, so its __manifest row goes too);
//   - a recorded version at or above it whose manifest is gone was not
//     pruned by anything Lance does: that is drift, kept and reported
//     (admin verify), never answered as a path;
//   - when the latest version's manifest is gone, nothing is pruned (Lance
//     never deletes the latest).
//
// A ref deleted after the cleanup and before the catalog looked can make a
// pruned version look like drift (its survivor, once tagged, is then the
// oldest kept); the reverse cannot happen, so the mistake is a report,
// never a lost record.

// Prunes is what a chain's records and its manifests in storage say.
type Prunes struct {
	// Pruned are the recorded versions whose manifests Lance pruned.
	Pruned []uint64
	// Missing are the recorded versions whose manifests are gone although
	// no cleanup would delete them: drift.
	Missing []Location
	// Oldest is the oldest kept version (0 when the chain has none, or its
	// latest manifest is gone).
	Oldest uint64
}

// ClassifyPrunes compares the version records of branch ("" for main) of
// the table at table with the manifests in storage, and changes nothing.
func (s *Store) ClassifyPrunes(ctx context.Context, table, branch string) (Prunes, error) {
	chain := lancemanifest.Chain{Table: lancemanifest.Dir(table), Branch: branch}.Key()
	if err := checkTable(chain); err != nil {
		return Prunes{}, err
	}
	// Records first: a listing finishes every commit it meets, so each
	// record read names a manifest that was in storage before the scan.
	records, err := s.AllVersions(ctx, chain)
	if err != nil || len(records) == 0 {
		return Prunes{}, err
	}
	found, err := s.scanVersions(ctx, chain)
	if err != nil {
		return Prunes{}, err
	}
	stored := make(map[uint64]bool, len(found))
	for _, f := range found {
		stored[f.version] = true
	}
	var missing []Location
	for _, l := range records {
		if !stored[l.Version] {
			missing = append(missing, l)
		}
	}
	head := records[len(records)-1].Version
	if len(missing) == 0 {
		return Prunes{Oldest: records[0].Version}, nil
	}
	if !stored[head] {
		return Prunes{Missing: missing}, nil
	}
	refs, err := lancemanifest.ReadRefs(ctx, s.objs, lancemanifest.Dir(table))
	if nserror.CodeOf(err) == nserror.Internal {
		// A ref file that is not Lance's may keep any version: nothing is
		// taken for pruned, the missing ones are reported as drift.
		return Prunes{Missing: missing}, nil
	}
	if err != nil {
		return Prunes{}, err
	}
	kept := refs.Kept(branch)
	oldest := head
	for v := range stored {
		if v < oldest && !kept[v] {
			oldest = v
		}
	}
	p := Prunes{Oldest: oldest}
	for _, l := range missing {
		if l.Version < oldest {
			p.Pruned = append(p.Pruned, l.Version)
		} else {
			p.Missing = append(p.Missing, l)
		}
	}
	return p, nil
}

// FollowPrunes is ClassifyPrunes, and the records of the pruned versions
// leave the catalog in one catalog change.
func (s *Store) FollowPrunes(ctx context.Context, table, branch string) (Prunes, error) {
	p, err := s.ClassifyPrunes(ctx, table, branch)
	if err != nil || len(p.Pruned) == 0 {
		return p, err
	}
	if err := s.ForgetVersions(ctx, lancemanifest.Chain{Table: lancemanifest.Dir(table), Branch: branch}.Key(), p.Pruned); err != nil {
		return Prunes{}, err
	}
	return p, nil
}

// ForgetVersions forgets the records of versions of a chain (the ones it
// has; forgetting again is a no-op), in as few catalog changes as the
// deletion's bound on ranges allows (one for up to 1000 runs of
// consecutive versions).
func (s *Store) ForgetVersions(ctx context.Context, chain string, versions []uint64) error {
	ranges := runs(versions)
	for len(ranges) > 0 {
		n := min(len(ranges), 1000)
		if _, err := s.DeleteVersions(ctx, chain, ranges[:n]); err != nil {
			return err
		}
		ranges = ranges[n:]
	}
	return nil
}

// runs folds versions into ranges of consecutive ones.
func runs(versions []uint64) []Range {
	vs := slices.Sorted(slices.Values(versions))
	var out []Range
	for _, v := range vs {
		if n := len(out); n > 0 && out[n-1].End == v {
			out[n-1].End = v + 1
			continue
		}
		out = append(out, Range{Start: v, End: v + 1})
	}
	return out
}

// AllVersions lists every version record of a chain, in version order.
func (s *Store) AllVersions(ctx context.Context, chain string) ([]Location, error) {
	var out []Location
	for after := uint64(0); ; {
		page, next, err := s.ListVersions(ctx, chain, ListOptions{After: after})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == 0 {
			return out, nil
		}
		after = next
	}
}

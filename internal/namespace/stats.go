package namespace

import (
	"context"
	"errors"
	"slices"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// Table statistics and detailed metadata come from the version's Lance
// manifest, read from storage when asked: a read of an immutable file,
// which shares nothing with the commit path.

// smallFragment is the row count under which LanceDB counts a fragment
// as small (not compacted yet).
const smallFragment = 100_000

// GetTableStats reads the statistics of the latest version of a table's
// branch from its manifest, as LanceDB's Table.stats computes them:
// fragment lengths are physical rows, total_bytes the data files' sizes.
func (vs Versions) GetTableStats(ctx context.Context, req api.GetTableStatsRequest) (*api.GetTableStatsResponse, error) {
	s := vs.s
	chain, err := s.branchChain(ctx, req.ID, req.Branch)
	if err != nil {
		return nil, err
	}
	m, err := s.manifestAt(ctx, req.ID, chain, req.Branch, 0)
	if err != nil {
		return nil, err
	}
	lengths := make([]int64, len(m.Fragments))
	resp := &api.GetTableStatsResponse{TotalBytes: int64(m.DataBytes()), NumRows: int64(m.Rows()), NumIndices: int64(m.Indices)}
	var sum int64
	for i, f := range m.Fragments {
		lengths[i] = int64(f.PhysicalRows)
		sum += lengths[i]
		if f.PhysicalRows < smallFragment {
			resp.FragmentStats.NumSmallFragments++
		}
	}
	slices.Sort(lengths)
	n := len(lengths)
	resp.FragmentStats.NumFragments = int64(n)
	if n > 0 {
		resp.FragmentStats.Lengths = api.FragmentSummary{Min: lengths[0], Max: lengths[n-1], Mean: sum / int64(n),
			P25: lengths[n/4], P50: lengths[n/2], P75: lengths[n*3/4], P99: lengths[n*99/100]}
	}
	return resp, nil
}

// manifestAt reads the manifest of version v (0: the latest) of a chain.
func (s *Service) manifestAt(ctx context.Context, id api.ID, chain, branch string, v int64) (*lancemanifest.Manifest, error) {
	if v == 0 {
		latest, ok, err := s.latestVersion(ctx, id, chain)
		if err != nil {
			return nil, err
		}
		if !ok {
			if !onMain(branch) {
				return nil, noBranch(id, branch)
			}
			return nil, nserror.New(nserror.TableVersionNotFound, "table %q is declared only: it has no version yet", id.String())
		}
		v = latest
	}
	tv, err := s.versionOf(ctx, id, chain, v)
	if err != nil {
		return nil, s.orBranchNotFound(ctx, id, chain, branch, err)
	}
	key, err := s.root.toKey(tv.ManifestPath, "manifest_path")
	if err != nil {
		return nil, err
	}
	var size int64
	if tv.ManifestSize != nil {
		size = *tv.ManifestSize
	}
	m, err := lancemanifest.Fetch(ctx, s.objs, key, size)
	if errors.Is(err, lancemanifest.ErrNotManifest) {
		return nil, nserror.New(nserror.Internal, "the manifest of version %d of table %q: %v", v, id.String(), err)
	}
	return m, err
}

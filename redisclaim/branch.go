package redisclaim

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// Chains lists every chain Redis holds a head for: tables' and their
// branches' (see lancemanifest.ParseChain).
func (s *Store) Chains(ctx context.Context) ([]string, error) {
	heads, err := s.Heads(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Collect(maps.Keys(heads)), nil
}

// Heads maps every chain Redis holds a head for to its head.
func (s *Store) Heads(ctx context.Context) (map[string]uint64, error) {
	return s.rs.AllHeads(ctx)
}

// Fork prepares a branch's chain for a commit of version, the branch's
// first when the chain has none: Lance starts a branch at the version it
// forks from, so the chain's head becomes version - 1. A chain with
// versions in Redis whose manifests are all gone from storage (Lance
// removed the branch) is forgotten first, so the branch can be made
// again; a chain with versions in storage is left alone, and the claim
// decides (ConcurrentModification for a version taken).
func (s *Store) Fork(ctx context.Context, chain string, version uint64) error {
	if err := checkTable(chain); err != nil {
		return err
	}
	if err := checkVersion(version); err != nil {
		return err
	}
	head, _, ok, err := s.GetLatestVersion(ctx, chain)
	if err != nil || ok && head+1 == version {
		return err // the branch's next commit: the claim decides
	}
	gone := false
	if ok {
		if gone, err = s.gone(ctx, chain); err != nil || !gone {
			return err
		}
	}
	return s.runFork(ctx, chain, version, gone)
}

// ForgetGone forgets a branch's chain whose versions Redis knows but whose
// final manifests are all gone from storage: Lance deleted the branch
// (its tree/<branch>/ directory) without telling the catalog. It reports
// whether it did. A chain with a commit in flight is kept.
func (s *Store) ForgetGone(ctx context.Context, chain string) (bool, error) {
	if err := checkTable(chain); err != nil {
		return false, err
	}
	loc, ok, err := s.GetLatestManifestLocation(ctx, chain)
	if err != nil || !ok {
		return false, err
	}
	// The latest manifest in storage is the common answer: one HEAD.
	if _, err := s.objs.Head(ctx, loc.Path); err == nil || !errors.Is(err, objstore.ErrNotFound) {
		return false, err
	}
	gone, err := s.gone(ctx, chain)
	if err != nil || !gone {
		return false, err
	}
	return true, s.runFork(ctx, chain, 0, true)
}

// ForgetChain forgets a branch's chain whole (its head, records and
// index), with a drop_table log entry: the branch was deleted, and a
// branch made later with its name starts a chain of its own. A chain
// with a commit in flight is ConcurrentModification.
func (s *Store) ForgetChain(ctx context.Context, chain string) error {
	if err := checkTable(chain); err != nil {
		return err
	}
	return s.runFork(ctx, chain, 0, true)
}

// gone reports whether storage holds no final manifest of the chain.
func (s *Store) gone(ctx context.Context, chain string) (bool, error) {
	found, err := s.scanVersions(ctx, chain)
	return len(found) == 0, err
}

// runFork runs fork.lua: with reset the chain is forgotten first; with a
// version > 0 an empty chain starts at it.
func (s *Store) runFork(ctx context.Context, chain string, version uint64, reset bool) error {
	var r redisstate.ForkReply
	err := s.withEpoch(ctx, func() (redisstate.Status, error) {
		var err error
		r, err = s.rs.Fork(ctx, chain, version, reset)
		return r.Status, err
	})
	if err != nil {
		return err
	}
	if r.Status == redisstate.Busy {
		return nserror.New(nserror.ConcurrentModification, "branch chain %s has a commit in flight", chain)
	}
	return nil
}

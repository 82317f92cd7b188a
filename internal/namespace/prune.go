package namespace

import (
	"context"
	"errors"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// Following Lance's cleanup. Lance prunes old versions by deleting their
// manifests, without a request (LanceDB 0.39), or tells the catalog with
// BatchDeleteTableVersions after it deleted them (a newer Lance's
// namespace-backed store). The catalog follows both: a request that
// meets a recorded version whose manifest is gone reads the chain against
// storage (redisclaim.FollowPrunes) and the pruned versions' records
// leave the catalog before the answer; the maintainer does the same for
// every chain that changed, so SQL and the console follow without a
// request. A lookup never answers a manifest path that does not exist.

// splitChain is the table and branch ("" for main) of chain, a chain of
// the table at table.
func splitChain(table, chain string) (string, string) {
	if chain == table {
		return table, ""
	}
	return table, strings.TrimPrefix(chain, lancemanifest.Dir(table).Tree())
}

// followPrunes follows Lance's cleanup on the chain of table id.
func (s *Service) followPrunes(ctx context.Context, id api.ID, chain string) (redisclaim.Prunes, error) {
	table, err := s.tableLoc(ctx, id)
	if err != nil {
		return redisclaim.Prunes{}, err
	}
	t, branch := splitChain(table, chain)
	return s.claims.FollowPrunes(ctx, t, branch)
}

// liveVersion is the record of version v of a chain, once its manifest is
// known to be in storage (one HEAD, which also gives a size the record
// lacks). A version whose manifest is gone is TableVersionNotFound when
// Lance pruned it (its record leaves the catalog first), and Internal
// when nothing Lance does would have deleted it (drift: admin verify).
func (s *Service) liveVersion(ctx context.Context, id api.ID, chain string, v uint64) (redisclaim.Location, error) {
	l, err := s.claims.GetManifestLocation(ctx, chain, v)
	if err != nil {
		return l, err
	}
	a, err := s.objs.Head(ctx, l.Path)
	if err == nil {
		if l.Size <= 0 {
			l.Size = a.Size
		}
		return l, nil
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return l, err
	}
	p, err := s.followPrunes(ctx, id, chain)
	if err != nil {
		return redisclaim.Location{}, err
	}
	for _, m := range p.Missing {
		if m.Version == v {
			return redisclaim.Location{}, nserror.New(nserror.Internal,
				"version %d of table %q is recorded but its manifest is missing from storage, and no cleanup deletes it: drift (run flightns admin verify)", v, id.String())
		}
	}
	return redisclaim.Location{}, nserror.New(nserror.TableVersionNotFound, "version %d of table %q was pruned: its manifest is gone", v, id.String())
}

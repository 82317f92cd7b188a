package namespace

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// Restore, and the creation of branches (branchwrite.go), write what
// Lance writes when it does them itself (Dataset::restore,
// Dataset::create_branch in lance-format/lance), and commit the version
// they make as every version is committed: a staged manifest, claimed
// (CreateTableVersion: version == latest + 1, or ConcurrentModification)
// and copied create-only to its final path. A writer racing them
// conflicts exactly as with any other commit. The files, in Lance's order:
//
//  1. the transaction, <dataset>/_transactions/<read version>-<uuid>.txn
//     (the dataset: the table, or its tree/<branch>);
//  2. the manifest (lancemanifest.Restored, lancemanifest.Cloned), with
//     the same transaction inline, staged then committed;
//  3. after the commit, <dataset>/_versions/latest_version_hint.json,
//     {"version":N}, the hint Lance's readers check (best effort, as in
//     Lance: a stale hint is only slower).

// stage writes a version's transaction and its manifest's staging object
// under dataset, whose final manifests are named by scheme, and returns
// the staging key and the manifest. The manifest is made first: a source
// it cannot read leaves nothing behind.
func (s *Service) stage(ctx context.Context, dataset string, scheme lancemanifest.NamingScheme, version, readVersion uint64, id string, txn []byte, manifest func(txnFile string) ([]byte, error)) (string, []byte, error) {
	txnFile := lancemanifest.TransactionFile(readVersion, id)
	b, err := manifest(txnFile)
	if errors.Is(err, lancemanifest.ErrNotManifest) {
		return "", nil, nserror.New(nserror.Internal, "%s: %v", dataset, err)
	}
	if err != nil {
		return "", nil, err
	}
	dir := lancemanifest.Dir(dataset)
	if err := s.objs.Put(ctx, dir.Transactions()+txnFile, txn); err != nil {
		return "", nil, err
	}
	staging := lancemanifest.StagingPath(dir.Manifest(scheme, version))
	return staging, b, s.objs.Put(ctx, staging, b)
}

// commitStaged commits a staged manifest as version of the table's branch
// through CreateTableVersion. A loser (ConcurrentModification) deletes its
// staging object, as the protocol has every loser do; any other failure
// leaves it, since the claim may have been taken (a reader finishes it).
func (s *Service) commitStaged(ctx context.Context, id api.ID, branch string, version uint64, staging string, size int, scheme lancemanifest.NamingScheme) (*api.CreateTableVersionResponse, error) {
	n := int64(size)
	resp, err := s.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id, Version: int64(version), Branch: branch,
		ManifestPath: s.root.objectPath(staging), ManifestSize: &n, NamingScheme: scheme.String()})
	if nserror.CodeOf(err) == nserror.ConcurrentModification {
		_ = s.objs.Delete(ctx, staging)
	}
	return resp, err
}

// hintVersion writes Lance's latest-version hint of dataset after a
// commit; failing to is not the commit's failure.
func (s *Service) hintVersion(ctx context.Context, dataset string, version uint64) {
	_ = s.objs.Put(ctx, lancemanifest.Dir(dataset).VersionHint(), fmt.Appendf(nil, `{"version":%d}`, version))
}

// manifestOf reads the manifest file of version v of a chain, with its
// key.
func (s *Service) manifestOf(ctx context.Context, id api.ID, chain, branch string, v int64) (string, []byte, error) {
	tv, err := s.versionOf(ctx, id, chain, v)
	if nserror.CodeOf(err) == nserror.TableVersionNotFound && s.managed() {
		// A version whose record was deleted (BatchDeleteTableVersions)
		// and whose manifest is still in storage is a source as in Lance,
		// which reads storage; a pruned one is gone from both.
		if stv, serr := s.storageVersion(ctx, id, chain, v); serr == nil {
			tv, err = stv, nil
		}
	}
	if err != nil {
		return "", nil, s.orBranchNotFound(ctx, id, chain, branch, err)
	}
	key, err := s.root.toKey(tv.ManifestPath, "manifest_path")
	if err != nil {
		return "", nil, err
	}
	b, err := s.objs.Get(ctx, key)
	return key, b, err
}

// schemeOf is the naming scheme of a final manifest key (V2 if it names
// none flightns knows).
func schemeOf(key string) lancemanifest.NamingScheme {
	if _, m, err := lancemanifest.ParseManifestPath(key); err == nil {
		return m.Scheme
	}
	return lancemanifest.V2
}

// RestoreTable makes version req.Version of a table's branch its newest:
// Lance's restore, the version's manifest committed as latest + 1 with a
// Restore transaction. A version that does not exist is
// TableVersionNotFound; a branch that does not, TableBranchNotFound; a
// commit that lands first, ConcurrentModification (Lance's restore
// conflicts with every concurrent commit).
func (br Branches) RestoreTable(ctx context.Context, req api.RestoreTableRequest) (*api.RestoreTableResponse, error) {
	s := br.s
	chain, err := s.branchChain(ctx, req.ID, req.Branch)
	if err != nil {
		return nil, err
	}
	if req.Version <= 0 {
		return nil, nserror.New(nserror.InvalidInput, "version %d is not a table version", req.Version)
	}
	latest, ok, err := s.latestVersion(ctx, req.ID, chain)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, s.orBranchNotFound(ctx, req.ID, chain, req.Branch,
			nserror.New(nserror.TableVersionNotFound, "table %q has no version %d", req.ID.String(), req.Version))
	}
	_, old, err := s.manifestOf(ctx, req.ID, chain, req.Branch, req.Version)
	if err != nil {
		return nil, err
	}
	curKey, cur, err := s.manifestOf(ctx, req.ID, chain, req.Branch, latest)
	if err != nil {
		return nil, err
	}
	version, scheme, txnID := uint64(latest)+1, schemeOf(curKey), uuid.NewString()
	txn := lancemanifest.RestoreTransaction(uint64(latest), txnID, uint64(req.Version))
	staging, b, err := s.stage(ctx, chain, scheme, version, uint64(latest), txnID, txn, func(txnFile string) ([]byte, error) {
		return lancemanifest.Restored(old, cur, version, s.now(), txn, txnFile)
	})
	if err != nil {
		return nil, err
	}
	// The restore is made when its version is: its final manifest holds
	// these bytes.
	ev := api.Event{Type: api.EventTableRestored, ID: req.ID, Branch: req.Branch, Version: version, FromVersion: uint64(req.Version)}
	p, err := s.intend(ctx, ev, lancemanifest.Dir(chain).Manifest(scheme, version), b, chain, version)
	if err != nil {
		return nil, err
	}
	resp, err := s.commitStaged(ctx, req.ID, req.Branch, version, staging, len(b), scheme)
	if err := p.settle(ctx, err, func(err error) bool { return nserror.CodeOf(err) == nserror.ConcurrentModification }); err != nil {
		return nil, err
	}
	s.hintVersion(ctx, chain, version)
	return &api.RestoreTableResponse{TransactionID: resp.TransactionID}, nil
}

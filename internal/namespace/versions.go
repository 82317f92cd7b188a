package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/redisclaim"
)

// tableVersion is the protocol's view of a committed version: its final
// manifest as an object-store path.
func (s *Service) tableVersion(loc redisclaim.Location) api.TableVersion {
	tv := api.TableVersion{Version: int64(loc.Version), ManifestPath: s.root.objectPath(loc.Path), ETag: loc.ETag}
	if loc.Size > 0 {
		size := loc.Size
		tv.ManifestSize = &size
	}
	if !loc.CommittedAt.IsZero() {
		ms := loc.CommittedAt.UnixMilli()
		tv.TimestampMillis = &ms
	}
	return tv
}

// Branches. Lance names a branch in every version request (absent or
// "main": main). Each branch of a table has a version chain of its own,
// keyed as Lance lays it out: the table's tree/<branch>/ directory, whose
// _versions/ holds the branch's manifests (lancemanifest.Chain). A
// request on one branch reads and writes that chain only.

// onMain reports whether branch names main.
func onMain(branch string) bool { return branch == "" || branch == "main" }

// chainOf is the version chain of a table's branch: the table's own
// location for main, its tree/<branch> directory for another branch,
// whose name must follow Lance's rules (InvalidInput otherwise).
func chainOf(loc, branch string) (string, error) {
	if onMain(branch) {
		return loc, nil
	}
	if err := checkBranchName(branch); err != nil {
		return "", err
	}
	return lancemanifest.Chain{Table: lancemanifest.Dir(loc), Branch: branch}.Key(), nil
}

// checkBranchName applies Lance's rules for a branch's name: segments
// separated by single '/', each of letters, digits, '.', '-' and '_'; no
// "..", no ".lock" ending.
func checkBranchName(branch string) error {
	bad := func(why string) error { return nserror.New(nserror.InvalidInput, "branch %q: %s", branch, why) }
	switch {
	case strings.Contains(branch, ".."):
		return bad(`a branch name cannot contain ".."`)
	case strings.HasSuffix(branch, ".lock"):
		return bad(`a branch name cannot end with ".lock"`)
	case len(branch) > 200:
		return bad("a branch name is at most 200 characters")
	case len(branchRefName(branch))+len(refSuffix) > objstore.MaxSegmentLen:
		return bad(fmt.Sprintf("a branch name is at most %d bytes once each '/' is written %%2F (its ref file's name)", objstore.MaxSegmentLen-len(refSuffix)))
	}
	for _, seg := range strings.Split(branch, "/") {
		if seg == "" {
			return bad("a branch name has no empty segment, and no '/' at its start or end")
		}
		if strings.IndexFunc(seg, notRefChar) >= 0 {
			return bad("a branch name has letters, digits, '.', '-', '_' and '/' only")
		}
	}
	return nil
}

// branchChain resolves a table and one of its branches to the branch's
// chain, for a request that reads it. Storage is the truth for branches:
// a chain whose manifests Lance removed (it deleted the branch, which
// makes no request) is forgotten here, so the branch reads as one that
// does not exist.
func (s *Service) branchChain(ctx context.Context, id api.ID, branch string) (string, error) {
	loc, err := s.tableLoc(ctx, id)
	if err != nil {
		return "", err
	}
	chain, err := chainOf(loc, branch)
	if err != nil || onMain(branch) || !s.managed() {
		return chain, err
	}
	_, err = s.claims.ForgetGone(ctx, chain)
	return chain, err
}

// orBranchNotFound turns a version's TableVersionNotFound on a branch
// that does not exist into TableBranchNotFound.
func (s *Service) orBranchNotFound(ctx context.Context, id api.ID, chain, branch string, err error) error {
	if onMain(branch) || nserror.CodeOf(err) != nserror.TableVersionNotFound {
		return err
	}
	if ok, berr := s.branchExists(ctx, id, chain, branch); berr != nil || ok {
		return err
	}
	return noBranch(id, branch)
}

// branchExists reports whether a branch of table id exists: Lance's ref
// file records it, or the catalog has versions of it (Lance commits a
// branch's first version before it writes the ref file). Main always
// exists.
func (s *Service) branchExists(ctx context.Context, id api.ID, chain, branch string) (bool, error) {
	if onMain(branch) {
		return true, nil
	}
	if _, ok, err := s.latestVersion(ctx, id, chain); err != nil || ok {
		return ok, err
	}
	table, err := s.tableLoc(ctx, id)
	if err != nil {
		return false, err
	}
	if _, err := s.objs.Head(ctx, branchRefKey(table, branch)); err == nil {
		return true, nil
	} else if !errors.Is(err, objstore.ErrNotFound) {
		return false, err
	}
	return false, nil
}

// noBranch is TableBranchNotFound for a branch of table id.
func noBranch(id api.ID, branch string) error {
	return nserror.New(nserror.TableBranchNotFound, "table %q has no branch %q", id.String(), branch)
}

// forked prepares a branch's chain for a commit of version (its first, at
// the version the branch forks from); main needs nothing.
func (s *Service) forked(ctx context.Context, e redisclaim.Entry, branch string) error {
	if onMain(branch) {
		return nil
	}
	return s.claims.Fork(ctx, e.Table, e.Version)
}

// stagedEntry validates one CreateTableVersion entry and resolves its table
// and its staging manifest to keys.
func (s *Service) stagedEntry(ctx context.Context, id api.ID, branch string, version int64, manifestPath string, size *int64, etag, naming string) (redisclaim.Entry, error) {
	loc, err := s.tableLoc(ctx, id)
	if err != nil {
		return redisclaim.Entry{}, err
	}
	return s.entryIn(loc, branch, version, manifestPath, size, etag, naming)
}

// entryIn is entryAt on the chain of branch of the table at loc.
func (s *Service) entryIn(loc, branch string, version int64, manifestPath string, size *int64, etag, naming string) (redisclaim.Entry, error) {
	chain, err := chainOf(loc, branch)
	if err != nil {
		return redisclaim.Entry{}, err
	}
	return s.entryAt(chain, version, manifestPath, size, etag, naming)
}

// entryAt validates a CreateTableVersion entry of the table at loc and
// resolves its staging manifest to a key.
func (s *Service) entryAt(loc string, version int64, manifestPath string, size *int64, etag, naming string) (redisclaim.Entry, error) {
	if version <= 0 {
		return redisclaim.Entry{}, nserror.New(nserror.InvalidInput, "version %d is not a table version (they start at 1)", version)
	}
	staging, err := s.root.toKey(manifestPath, "manifest_path")
	if err != nil {
		return redisclaim.Entry{}, err
	}
	if t, _, err := lancemanifest.ParseManifestPath(staging); err == nil && string(t) != loc {
		return redisclaim.Entry{}, nserror.New(nserror.InvalidInput, "staging manifest %q is not inside table %q", manifestPath, loc)
	}
	if naming != "" {
		want, err := lancemanifest.ParseNamingScheme(naming)
		if err != nil {
			return redisclaim.Entry{}, err
		}
		if _, m, err := lancemanifest.ParseManifestPath(staging); err == nil && m.Scheme != want {
			return redisclaim.Entry{}, nserror.New(nserror.InvalidInput, "manifest_path %q is named %s, not %s", manifestPath, m.Scheme, want)
		}
	}
	e := redisclaim.Entry{Table: loc, Version: uint64(version), StagingPath: staging, ETag: etag}
	if size != nil {
		if *size <= 0 {
			return redisclaim.Entry{}, nserror.New(nserror.InvalidInput, "manifest_size %d: a manifest has bytes (give its size, or none)", *size)
		}
		e.Size = *size
	}
	return e, nil
}

// CreateTableVersion commits a staged manifest as a version of a table:
// the version must be the table's latest + 1; the staged manifest is
// copied create-only to its final path before the reply, which carries
// that path. A version already taken is ConcurrentModification; repeating
// a successful request returns the same version.
//
// The table's location comes from a cache when it holds the table, and
// the claim script checks, with the claim, that the catalog's index still
// gives the table that location (one Redis round trip fewer than reading
// it first; a table dropped or re-created meanwhile fails the check, and
// the location is read again).
func (vs Versions) CreateTableVersion(ctx context.Context, req api.CreateTableVersionRequest) (*api.CreateTableVersionResponse, error) {
	s := vs.s
	if err := tableID(req.ID); err != nil {
		return nil, err
	}
	id := req.ID.String()
	var loc redisclaim.Location
	err := s.claims.WithEpoch(ctx, "namespace: committing a table version", 0, func() (redisstate.Status, error) {
		tloc, cached := s.locs.get(id)
		if !cached {
			var err error
			if tloc, err = s.tableLoc(ctx, req.ID); err != nil {
				return "", err
			}
			s.locs.put(id, tloc)
		}
		e, err := s.entryIn(tloc, req.Branch, req.Version, req.ManifestPath, req.ManifestSize, req.ETag, req.NamingScheme)
		if err != nil && cached {
			// The cached location may be that of a table of this id since
			// dropped (the id declared again elsewhere): a staging path
			// in the table's directory now is refused only once the
			// location is read again.
			s.locs.drop(id)
			if tloc, err = s.tableLoc(ctx, req.ID); err != nil {
				return "", err
			}
			s.locs.put(id, tloc)
			e, err = s.entryIn(tloc, req.Branch, req.Version, req.ManifestPath, req.ManifestSize, req.ETag, req.NamingScheme)
		}
		if err != nil {
			return "", err
		}
		if err := s.forked(ctx, e, req.Branch); err != nil {
			return "", err
		}
		loc, err = s.claims.PutGuarded(ctx, e.Table, e.Version, e.StagingPath, e.Size, e.ETag,
			[]redisstate.Guard{redisstate.GuardEq(s.k.Loc(), id, tloc)})
		var ge *redisclaim.GuardError
		if errors.As(err, &ge) {
			s.locs.drop(id) // the table moved, or is gone: read it again
			return redisstate.GuardFailed, nil
		}
		return redisstate.OK, err
	}, againOnGuard(func() error {
		return nserror.New(nserror.ConcurrentModification, "table %q kept changing while version %d was committed: retry", id, req.Version)
	}))
	if err != nil {
		return nil, err
	}
	if loc.Manifest != nil {
		s.table.NoteManifest(loc.Path, loc.Manifest) // its row's statistics, without reading it again
	}
	tv := s.tableVersion(loc)
	return &api.CreateTableVersionResponse{TransactionID: loc.TxnID, Version: &tv}, nil
}

// DescribeTableVersion describes a version (the latest when none is
// given).
func (vs Versions) DescribeTableVersion(ctx context.Context, req api.DescribeTableVersionRequest) (*api.DescribeTableVersionResponse, error) {
	s := vs.s
	loc, err := s.branchChain(ctx, req.ID, req.Branch)
	if err != nil {
		return nil, err
	}
	if req.Version != nil && *req.Version <= 0 {
		return nil, nserror.New(nserror.InvalidInput, "version %d is not a table version", *req.Version)
	}
	if !s.managed() {
		var v int64
		if req.Version != nil {
			v = *req.Version
		}
		tv, err := s.storageVersion(ctx, req.ID, loc, v)
		if err != nil {
			return nil, s.orBranchNotFound(ctx, req.ID, loc, req.Branch, err)
		}
		return &api.DescribeTableVersionResponse{Version: &tv}, nil
	}
	var l redisclaim.Location
	if req.Version == nil {
		var ok bool
		if l, ok, err = s.claims.GetLatestManifestLocation(ctx, loc); err == nil && !ok {
			err = nserror.New(nserror.TableVersionNotFound, "table %q has no versions", req.ID.String())
		}
	} else {
		l, err = s.liveVersion(ctx, req.ID, loc, uint64(*req.Version))
	}
	if err != nil {
		return nil, s.orBranchNotFound(ctx, req.ID, loc, req.Branch, err)
	}
	tv := s.tableVersion(l)
	return &api.DescribeTableVersionResponse{Version: &tv}, nil
}

// ListTableVersions lists a table's versions, ascending or (descending)
// newest first, a page at a time: page_token is the last version of the
// previous page. Without a limit, all of them. Versions Lance pruned are
// not listed: the chain is read against storage first (followPrunes).
//
// A branch without versions (one that does not exist, or not yet: Lance
// lists a branch's versions before it commits the branch's first) is
// TableBranchNotFound, as every branch operation answers, and what
// Lance's managed commit store reads as "no versions yet" (it takes
// TableNotFound and TableBranchNotFound alike).
func (vs Versions) ListTableVersions(ctx context.Context, req api.ListTableVersionsRequest) (*api.ListTableVersionsResponse, error) {
	s := vs.s
	loc, err := s.branchChain(ctx, req.ID, req.Branch)
	if err != nil {
		return nil, err
	}
	var missing []redisclaim.Location
	if s.managed() && req.PageToken == "" {
		p, err := s.followPrunes(ctx, req.ID, loc)
		if err != nil {
			return nil, err
		}
		missing = p.Missing
	}
	resp, err := s.listVersions(ctx, loc, req)
	if err == nil && len(missing) > 0 {
		// Drift (admin verify reports it): never answered as a path.
		resp.Versions = slices.DeleteFunc(resp.Versions, func(tv api.TableVersion) bool {
			return slices.ContainsFunc(missing, func(l redisclaim.Location) bool { return int64(l.Version) == tv.Version })
		})
	}
	if err == nil && len(resp.Versions) == 0 && req.PageToken == "" {
		if ok, err := s.branchExists(ctx, req.ID, loc, req.Branch); err != nil {
			return nil, err
		} else if !ok {
			return nil, noBranch(req.ID, req.Branch)
		}
	}
	return resp, err
}

// listVersions is ListTableVersions of the chain at loc.
func (s *Service) listVersions(ctx context.Context, loc string, req api.ListTableVersionsRequest) (*api.ListTableVersionsResponse, error) {
	var err error
	opts := redisclaim.ListOptions{Descending: req.Descending != nil && *req.Descending}
	if req.PageToken != "" {
		if opts.After, err = strconv.ParseUint(req.PageToken, 10, 64); err != nil {
			return nil, nserror.New(nserror.InvalidInput, "page_token %q is not one this server gave", req.PageToken)
		}
	}
	if req.Limit != nil && *req.Limit < 0 {
		return nil, nserror.New(nserror.InvalidInput, "limit %d is negative", *req.Limit)
	}
	if !s.managed() {
		return s.storageVersionPage(ctx, loc, req)
	}
	want := 0
	if req.Limit != nil {
		want = *req.Limit
	}
	resp := &api.ListTableVersionsResponse{Versions: []api.TableVersion{}}
	for {
		opts.Limit = 1000
		if want > 0 {
			opts.Limit = min(1000, want-len(resp.Versions))
		}
		locs, next, err := s.claims.ListVersions(ctx, loc, opts)
		if err != nil {
			return nil, err
		}
		for _, l := range locs {
			resp.Versions = append(resp.Versions, s.tableVersion(l))
		}
		if next == 0 {
			return resp, nil
		}
		if want > 0 && len(resp.Versions) >= want {
			resp.PageToken = strconv.FormatUint(next, 10)
			return resp, nil
		}
		opts.After = next
	}
}

// BatchDeleteTableVersions forgets the records of versions in ranges
// (start inclusive, end exclusive; end -1: no end; {0, -1}: all). The data
// stays: Lance deletes its own files.
//
// On a branch without versions it is TableBranchNotFound.
func (vs Versions) BatchDeleteTableVersions(ctx context.Context, req api.BatchDeleteTableVersionsRequest) (*api.BatchDeleteTableVersionsResponse, error) {
	s := vs.s
	loc, err := s.branchChain(ctx, req.ID, req.Branch)
	if err != nil {
		return nil, err
	}
	if ok, err := s.branchExists(ctx, req.ID, loc, req.Branch); err != nil {
		return nil, err
	} else if !ok {
		return nil, noBranch(req.ID, req.Branch)
	}
	ranges, err := versionRanges(req.Ranges)
	if err != nil {
		return nil, err
	}
	if same, err := s.sameIdentity(ctx, loc, req.Context, ranges); err != nil || !same {
		return &api.BatchDeleteTableVersionsResponse{}, err
	}
	n, err := s.claims.DeleteVersions(ctx, loc, ranges)
	if err != nil {
		return nil, err
	}
	return &api.BatchDeleteTableVersionsResponse{DeletedCount: int64(n)}, nil
}

// sameIdentity reports whether a deletion of one version that names the
// version's manifest in its context (a newer Lance's cleanup tells the
// catalog so, after it deleted the manifest: the context's
// table-version identity) still names the version's record: a version
// made again at another path since is not the one Lance pruned, and
// stays. A deletion without such a context is not checked.
func (s *Service) sameIdentity(ctx context.Context, chain string, reqContext map[string]string, ranges []redisclaim.Range) (bool, error) {
	if len(ranges) != 1 || ranges[0].End != ranges[0].Start+1 {
		return true, nil
	}
	for _, v := range reqContext {
		key, err := s.root.toKey(v, "context")
		if err != nil {
			continue
		}
		if t, m, err := lancemanifest.ParseManifestPath(key); err != nil || string(t) != chain || m.Version != ranges[0].Start || m.Staging {
			continue
		}
		l, err := s.claims.GetManifestLocation(ctx, chain, ranges[0].Start)
		if nserror.CodeOf(err) == nserror.TableVersionNotFound {
			return true, nil // nothing to keep
		}
		if err != nil {
			return false, err
		}
		return l.Path == key, nil
	}
	return true, nil
}

func versionRanges(in []api.VersionRange) ([]redisclaim.Range, error) {
	if len(in) == 0 {
		return nil, nserror.New(nserror.InvalidInput, "no version ranges given")
	}
	out := make([]redisclaim.Range, 0, len(in))
	for _, r := range in {
		switch {
		case r.StartVersion < 0:
			return nil, nserror.New(nserror.InvalidInput, "start_version %d is negative", r.StartVersion)
		case r.EndVersion == -1:
			out = append(out, redisclaim.Range{Start: uint64(r.StartVersion)})
		case r.EndVersion <= r.StartVersion:
			return nil, nserror.New(nserror.InvalidInput, "version range [%d, %d) is empty or reversed", r.StartVersion, r.EndVersion)
		default:
			out = append(out, redisclaim.Range{Start: uint64(r.StartVersion), End: uint64(r.EndVersion)})
		}
	}
	return out, nil
}

// BatchCreateTableVersions commits one version of each of several tables,
// all or nothing.
func (vs Versions) BatchCreateTableVersions(ctx context.Context, req api.BatchCreateTableVersionsRequest) (*api.BatchCreateTableVersionsResponse, error) {
	s := vs.s
	if len(req.Entries) == 0 {
		return nil, nserror.New(nserror.InvalidInput, "no entries given")
	}
	entries := make([]redisclaim.Entry, len(req.Entries))
	for i, in := range req.Entries {
		e, err := s.stagedEntry(ctx, in.ID, in.Branch, in.Version, in.ManifestPath, in.ManifestSize, in.ETag, in.NamingScheme)
		if err != nil {
			return nil, err
		}
		if err := s.forked(ctx, e, in.Branch); err != nil {
			return nil, err
		}
		entries[i] = e
	}
	b, err := s.claims.BatchPut(ctx, entries)
	if err != nil {
		return nil, err
	}
	resp := &api.BatchCreateTableVersionsResponse{TransactionID: b.TxnID}
	for _, l := range b.Locations {
		resp.Versions = append(resp.Versions, s.tableVersion(l))
	}
	return resp, nil
}

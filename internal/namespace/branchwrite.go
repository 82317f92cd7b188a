package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// Creating and deleting branches, as Lance's Dataset::create_branch and
// Branches::delete (lance-format/lance rust/lance/src/dataset.rs,
// dataset/refs.rs) do:
//
//   - create: the branch's first manifest, a shallow clone of the source
//     version (the same version number, see restoretable.go for the files
//     and the commit), then its ref file _refs/branches/<name>.json,
//     written create-only; Lance holds the ref file as the branch's truth.
//   - delete: refused while a branch forks from it or a tag points into
//     it (Lance: "Branch x is referenced by …, can not delete"), then the
//     ref file, then the branch's tree/<name>/ (but what other branches
//     keep under it).

// branchRef is Lance's branch file as Lance 12 writes it (serde,
// camelCase, two-space indented), fields in its order. Identifier is the
// branch's lineage: its parent's version_mapping followed by [the
// version it forks from, a fresh id].
type branchRef struct {
	ParentBranch  *string           `json:"parentBranch"`
	Identifier    branchIdentifier  `json:"identifier"`
	ParentVersion int64             `json:"parentVersion"`
	CreateAt      int64             `json:"createAt"`
	ManifestSize  int64             `json:"manifestSize"`
	Metadata      map[string]string `json:"metadata"`
}

type branchIdentifier struct {
	VersionMapping []json.RawMessage `json:"version_mapping"`
}

// branchRefKey is the key of a branch's ref file: Lance escapes the '/'
// of a hierarchical name (team/x is team%2Fx.json).
func branchRefKey(table, branch string) string {
	return lancemanifest.Dir(table).BranchRefs() + branchRefName(branch) + refSuffix
}

// branchRefName is a branch's name as its ref file spells it.
func branchRefName(branch string) string { return strings.ReplaceAll(branch, "/", "%2F") }

// checkNewBranchName is checkBranchName, and main is Lance's own.
func checkNewBranchName(name string) error {
	if name == "" || name == "main" {
		return nserror.New(nserror.InvalidInput, "branch %q: a branch needs a name, and main is the table's own", name)
	}
	return checkBranchName(name)
}

// readBranchRef reads a branch's ref file; a missing one is
// TableBranchNotFound.
func (s *Service) readBranchRef(ctx context.Context, id api.ID, table, branch string) (branchRef, []byte, error) {
	var r branchRef
	b, err := s.objs.Get(ctx, branchRefKey(table, branch))
	if errors.Is(err, objstore.ErrNotFound) {
		return r, nil, noBranch(id, branch)
	}
	if err != nil {
		return r, nil, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, nil, nserror.New(nserror.Internal, "the file of branch %q of table %q is not a Lance branch: %v", branch, id.String(), err)
	}
	return r, b, nil
}

// CreateTableBranch makes branch req.Name of a table from version
// req.FromVersion (its latest when none) of branch req.FromBranch (main
// when none). A name taken (a ref file, or versions left under its
// tree/) is TableBranchAlreadyExists; a missing source branch
// TableBranchNotFound; a missing source version TableVersionNotFound.
func (br Branches) CreateTableBranch(ctx context.Context, req api.CreateTableBranchRequest) (*api.CreateTableBranchResponse, error) {
	s := br.s
	table, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if err := checkNewBranchName(req.Name); err != nil {
		return nil, err
	}
	src, err := s.branchChain(ctx, req.ID, req.FromBranch)
	if err != nil {
		return nil, err
	}
	var lineage []json.RawMessage
	refName := ""
	if !onMain(req.FromBranch) {
		parent, _, err := s.readBranchRef(ctx, req.ID, table, req.FromBranch)
		if err != nil {
			return nil, err
		}
		lineage, refName = parent.Identifier.VersionMapping, req.FromBranch
	}
	from, err := s.sourceVersion(ctx, req, src)
	if err != nil {
		return nil, err
	}
	taken := func() error {
		return nserror.New(nserror.TableBranchAlreadyExists, "table %q already has a branch %q", req.ID.String(), req.Name)
	}
	if _, err := s.objs.Head(ctx, branchRefKey(table, req.Name)); err == nil {
		return nil, taken()
	} else if !errors.Is(err, objstore.ErrNotFound) {
		return nil, err
	}
	chain, err := s.branchChain(ctx, req.ID, req.Name)
	if err != nil {
		return nil, err
	}
	if _, ok, err := s.latestVersion(ctx, req.ID, chain); err != nil {
		return nil, err
	} else if ok {
		return nil, nserror.New(nserror.TableBranchAlreadyExists, "table %q has versions of a branch %q that Lance has no record of (a creation that stopped half-way): delete the branch first", req.ID.String(), req.Name)
	}
	srcKey, srcManifest, err := s.manifestOf(ctx, req.ID, src, req.FromBranch, from)
	if err != nil {
		return nil, err
	}

	version, scheme, txnID, refPath := uint64(from), schemeOf(srcKey), uuid.NewString(), s.root.uri(src)
	txn := lancemanifest.CloneTransaction(version, txnID, refName, refPath, req.Name)
	staging, b, err := s.stage(ctx, chain, scheme, version, version, txnID, txn, func(txnFile string) ([]byte, error) {
		return lancemanifest.Cloned(srcManifest, lancemanifest.Clone{Branch: req.Name, RefName: refName, RefPath: refPath, Now: s.now(), Txn: txn, TxnFile: txnFile})
	})
	if err != nil {
		return nil, err
	}
	resp, err := s.commitStaged(ctx, req.ID, req.Name, version, staging, len(b), scheme)
	if nserror.CodeOf(err) == nserror.ConcurrentModification {
		return nil, taken() // another creation of the branch won
	}
	if err != nil {
		return nil, err
	}
	ref := branchRef{Identifier: branchIdentifier{VersionMapping: append(lineage[:len(lineage):len(lineage)],
		json.RawMessage(`[`+jsonInt(from)+`,"`+strings.ReplaceAll(uuid.NewString(), "-", "")+`"]`))},
		ParentVersion: from, CreateAt: s.now().Unix(), ManifestSize: int64(len(srcManifest)), Metadata: map[string]string{}}
	if refName != "" {
		ref.ParentBranch = &refName
	}
	out, err := encodeRef(ref)
	if err != nil {
		return nil, err
	}
	// The ref is the branch's commit point: Lance sees a branch by it.
	refKey := branchRefKey(table, req.Name)
	ev := api.Event{Type: api.EventBranchCreated, ID: req.ID, Branch: req.Name, Version: version, FromBranch: refName, FromVersion: uint64(from)}
	if err := s.inStorage(ctx, ev, refKey, out, isAlreadyExists, func() error {
		return s.objs.PutIfAbsent(ctx, refKey, out)
	}); errors.Is(err, objstore.ErrAlreadyExists) {
		return nil, taken()
	} else if err != nil {
		return nil, err
	}
	s.hintVersion(ctx, chain, version)
	return &api.CreateTableBranchResponse{TransactionID: resp.TransactionID}, nil
}

// sourceVersion is the version a branch forks from: the one asked for, or
// the source's latest.
func (s *Service) sourceVersion(ctx context.Context, req api.CreateTableBranchRequest, src string) (int64, error) {
	if req.FromVersion != nil {
		if *req.FromVersion <= 0 {
			return 0, nserror.New(nserror.InvalidInput, "from_version %d is not a table version", *req.FromVersion)
		}
		return *req.FromVersion, nil
	}
	v, ok, err := s.latestVersion(ctx, req.ID, src)
	if err != nil || ok {
		return v, err
	}
	if ok, err := s.branchExists(ctx, req.ID, src, req.FromBranch); err != nil {
		return 0, err
	} else if !ok {
		return 0, noBranch(req.ID, req.FromBranch)
	}
	// The branch exists but its version records were deleted: as in
	// Lance, its latest is its newest manifest in storage.
	tv, err := s.storageVersion(ctx, req.ID, src, 0)
	return tv.Version, err
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }

// DeleteTableBranch deletes branch req.Name of a table: refused while
// another branch forks from it or a tag points into it; then its ref
// file and its files go, as Lance removes them. A branch without a ref
// file is TableBranchNotFound.
func (br Branches) DeleteTableBranch(ctx context.Context, req api.DeleteTableBranchRequest) (*api.DeleteTableBranchResponse, error) {
	s := br.s
	table, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if err := checkNewBranchName(req.Name); err != nil {
		return nil, err
	}
	if _, _, err := s.readBranchRef(ctx, req.ID, table, req.Name); err != nil {
		return nil, err
	}
	others, err := s.referencing(ctx, req.ID, table, req.Name)
	if err != nil {
		return nil, err
	}
	// Deleting the ref is the deletion's commit point (Lance sees a
	// branch by it); its tree and records follow.
	refKey := branchRefKey(table, req.Name)
	if err := s.inStorage(ctx, api.Event{Type: api.EventBranchDeleted, ID: req.ID, Branch: req.Name}, refKey, nil, isNotFound, func() error {
		return s.objs.Delete(ctx, refKey)
	}); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return nil, err
	}
	// The branch's tree, but what the remaining branches keep under it
	// (team/x under team when team is deleted).
	dir := lancemanifest.Chain{Table: lancemanifest.Dir(table), Branch: req.Name}.Dir()
	var keep []string
	for _, o := range others {
		if strings.HasPrefix(o, req.Name+"/") {
			keep = append(keep, lancemanifest.Chain{Table: lancemanifest.Dir(table), Branch: o}.Key()+"/")
		}
	}
	for a, err := range s.objs.List(ctx, string(dir)+"/") {
		if err != nil {
			return nil, err
		}
		if !slicesHasPrefix(keep, a.Key) {
			if err := s.objs.Delete(ctx, a.Key); err != nil && !errors.Is(err, objstore.ErrNotFound) {
				return nil, err
			}
		}
	}
	if s.managed() {
		// The branch is gone: so are its versions, and its name is free.
		if err := s.claims.ForgetChain(ctx, string(dir)); err != nil {
			return nil, err
		}
	}
	return &api.DeleteTableBranchResponse{}, nil
}

// referencing fails, as Lance does, when another branch forks from
// branch or a tag points into it, and otherwise returns the table's other
// branches.
func (s *Service) referencing(ctx context.Context, id api.ID, table, branch string) ([]string, error) {
	_, names, _, err := s.refPage(ctx, lancemanifest.Dir(table).BranchRefs(), func(stem string) (string, bool) {
		return lancemanifest.BranchOfRef(stem + ".json")
	}, "", nil)
	if err != nil {
		return nil, err
	}
	var others, children []string
	for _, name := range names {
		if name == branch {
			continue
		}
		others = append(others, name)
		r, _, err := s.readBranchRef(ctx, id, table, name)
		if nserror.CodeOf(err) == nserror.TableBranchNotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		if r.ParentBranch != nil && *r.ParentBranch == branch {
			children = append(children, name)
		}
	}
	// Lance refuses with RefConflict (Branches::delete: a branch whose
	// lineage extends this one's, or a tag on this branch at any version),
	// which pylance raises as ValueError; the spec declares no 409 for
	// DeleteTableBranch, so the refusal is InvalidInput (400), the one
	// client error it declares besides a missing table or branch.
	if len(children) > 0 {
		return nil, nserror.New(nserror.InvalidInput, "branch %q of table %q is referenced by the branches %s: it cannot be deleted", branch, id.String(), strings.Join(children, ", "))
	}
	_, tags, _, err := s.refPage(ctx, lancemanifest.Dir(table).Tags(), func(file string) (string, bool) {
		return file, checkTagName(file) == nil
	}, "", nil)
	if err != nil {
		return nil, err
	}
	var tagged []string
	for _, tag := range tags {
		t, err := s.readTag(ctx, id, table, tag)
		if nserror.CodeOf(err) == nserror.TableTagNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if t.Branch != nil && *t.Branch == branch {
			tagged = append(tagged, tag)
		}
	}
	if len(tagged) > 0 {
		sort.Strings(tagged)
		return nil, nserror.New(nserror.InvalidInput, "branch %q of table %q is referenced by the tags %s: it cannot be deleted", branch, id.String(), strings.Join(tagged, ", "))
	}
	return others, nil
}

// slicesHasPrefix reports whether key is under one of the prefixes.
func slicesHasPrefix(prefixes []string, key string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

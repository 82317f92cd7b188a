package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// Branches are Lance's: Lance writes _refs/branches/<name>.json (the name
// path-escaped: "team/x" is team%2Fx.json) after a branch's first commit,
// and keeps the branch's versions under tree/<name>/. On an unmanaged
// catalog LanceDB makes and removes them without asking the catalog; on a
// managed one each branch's versions are a chain of their own (see
// chainOf). ListTableBranches reads the files, as Lance does.

// branchFile is the part of Lance's branch file the catalog reads.
type branchFile struct {
	ParentBranch  *string           `json:"parentBranch"`
	ParentVersion int64             `json:"parentVersion"`
	CreateAt      int64             `json:"createAt"`
	ManifestSize  int64             `json:"manifestSize"`
	Metadata      map[string]string `json:"metadata"`
}

// refPage lists the ref files (<name>.json) directly under prefix, by name
// (nameOf turns a file's base name into the ref's, or refuses it), and
// returns one page of names, with each one's key.
func (s *Service) refPage(ctx context.Context, prefix string, nameOf func(string) (string, bool), token string, limit *int) (map[string]string, []string, string, error) {
	keys := map[string]string{}
	var names []string
	for a, err := range s.objs.List(ctx, prefix) {
		if err != nil {
			return nil, nil, "", err
		}
		file, ok := strings.CutSuffix(a.Key[len(prefix):], ".json")
		if !ok || strings.Contains(file, "/") {
			continue
		}
		if name, ok := nameOf(file); ok {
			keys[name] = a.Key
			names = append(names, name)
		}
	}
	sort.Strings(names)
	names, next, err := page(names, token, limit)
	return keys, names, next, err
}

// ListTableBranches lists the branches Lance recorded for a table, by name,
// a page at a time (page_token: the last name of the previous page).
func (br Branches) ListTableBranches(ctx context.Context, req api.ListTableBranchesRequest) (*api.ListTableBranchesResponse, error) {
	s := br.s
	loc, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	keys, names, token, err := s.refPage(ctx, lancemanifest.Dir(loc).BranchRefs(), func(stem string) (string, bool) {
		return lancemanifest.BranchOfRef(stem + ".json")
	}, req.PageToken, req.Limit)
	if err != nil {
		return nil, err
	}
	resp := &api.ListTableBranchesResponse{Branches: make(map[string]api.BranchContents, len(names)), PageToken: token}
	for _, name := range names {
		b, err := s.objs.Get(ctx, keys[name])
		if errors.Is(err, objstore.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		var f branchFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, nserror.New(nserror.Internal, "the file of branch %q of table %q is not a Lance branch: %v", name, req.ID.String(), err)
		}
		c := api.BranchContents{ParentVersion: f.ParentVersion, CreateAt: f.CreateAt, ManifestSize: f.ManifestSize, Metadata: f.Metadata}
		if f.ParentBranch != nil {
			c.ParentBranch = *f.ParentBranch
		}
		resp.Branches[name] = c
	}
	return resp, nil
}

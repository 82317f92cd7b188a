package lancemanifest

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"

	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// Refs are what a table's _refs/ files keep alive: the version each tag
// points to, and the version each branch was forked from. Lance's cleanup
// never prunes a tagged version, and keeps the version a branch forks
// from while the branch needs it; flightns keeps both, always.
type Refs struct {
	// Tags maps a tag to its branch ("" for main) and version.
	Tags map[string]Ref
	// Bases maps a branch to its parent branch ("" for main) and the
	// parent's version it was forked from.
	Bases map[string]Ref
}

// Ref is a version of a branch ("" for main).
type Ref struct {
	Branch  string
	Version uint64
}

// refFile holds the fields flightns reads of Lance's tag files
// ({"branch", "version", …}) and branch files ({"parentBranch",
// "parentVersion", …}); a null or absent branch is main.
type refFile struct {
	Branch        *string `json:"branch"`
	Version       *uint64 `json:"version"`
	ParentBranch  *string `json:"parentBranch"`
	ParentVersion *uint64 `json:"parentVersion"`
}

// ReadRefs reads every tag and branch file of the table at table. A file
// that does not parse as Lance's is an error: a caller deciding what to
// delete then deletes nothing.
func ReadRefs(ctx context.Context, objs *objstore.Store, table string) (Refs, error) {
	refs := Refs{Tags: map[string]Ref{}, Bases: map[string]Ref{}}
	read := func(prefix string, name func(file string) (string, bool), branchOf func(refFile) (*string, *uint64), into map[string]Ref) error {
		for a, err := range objs.List(ctx, prefix) {
			if err != nil {
				return err
			}
			n, ok := name(path.Base(a.Key))
			if !ok || path.Dir(a.Key)+"/" != prefix {
				continue
			}
			b, err := objs.Get(ctx, a.Key)
			if errors.Is(err, objstore.ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return err
			}
			var f refFile
			if err := json.Unmarshal(b, &f); err != nil {
				return nserror.New(nserror.Internal, "%s is not a Lance ref file: %v", a.Key, err)
			}
			br, v := branchOf(f)
			if v == nil {
				return nserror.New(nserror.Internal, "%s is not a Lance ref file: it names no version", a.Key)
			}
			r := Ref{Version: *v}
			if br != nil && *br != "main" {
				r.Branch = *br
			}
			into[n] = r
		}
		return nil
	}
	tagName := func(file string) (string, bool) {
		stem, ok := strings.CutSuffix(file, ".json")
		return stem, ok && stem != ""
	}
	if err := read(TagsPrefix(table), tagName, func(f refFile) (*string, *uint64) { return f.Branch, f.Version }, refs.Tags); err != nil {
		return Refs{}, err
	}
	if err := read(BranchRefsPrefix(table), BranchOfRef, func(f refFile) (*string, *uint64) { return f.ParentBranch, f.ParentVersion }, refs.Bases); err != nil {
		return Refs{}, err
	}
	return refs, nil
}

// Kept returns the versions of branch ("" for main) that the refs keep:
// those a tag points to and those another branch was forked from.
func (r Refs) Kept(branch string) map[uint64]bool {
	out := map[uint64]bool{}
	for _, t := range r.Tags {
		if t.Branch == branch {
			out[t.Version] = true
		}
	}
	for _, b := range r.Bases {
		if b.Branch == branch {
			out[b.Version] = true
		}
	}
	return out
}

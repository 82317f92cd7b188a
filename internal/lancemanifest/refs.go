package lancemanifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// ParseTagRef reads a Lance tag file ({"branch", "version", …}): the
// branch ("" for main, which Lance writes null) and version it points to.
func ParseTagRef(b []byte) (Ref, error) {
	var f struct {
		Branch  *string `json:"branch"`
		Version *uint64 `json:"version"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return Ref{}, err
	}
	return refOf(f.Branch, f.Version, "version")
}

// ParseBranchRef reads a Lance branch file ({"parentBranch",
// "parentVersion", …}): the parent branch ("" for main) and the version of
// it the branch was forked from.
func ParseBranchRef(b []byte) (Ref, error) {
	var f struct {
		ParentBranch  *string `json:"parentBranch"`
		ParentVersion *uint64 `json:"parentVersion"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return Ref{}, err
	}
	return refOf(f.ParentBranch, f.ParentVersion, "parentVersion")
}

// refOf is the Ref of a branch (nil, "" and "main" are main) and a
// version, which must be there.
func refOf(branch *string, version *uint64, field string) (Ref, error) {
	if version == nil {
		return Ref{}, fmt.Errorf("no %s", field)
	}
	r := Ref{Version: *version}
	if branch != nil && *branch != "main" {
		r.Branch = *branch
	}
	return r, nil
}

// ReadRefs reads every tag and branch file of the table at table. A file
// that does not parse as Lance's is an error: a caller deciding what to
// delete then deletes nothing.
func ReadRefs(ctx context.Context, objs *objstore.Store, table Dir) (Refs, error) {
	refs := Refs{Tags: map[string]Ref{}, Bases: map[string]Ref{}}
	read := func(prefix string, name func(file string) (string, bool), parse func([]byte) (Ref, error), into map[string]Ref) error {
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
			r, err := parse(b)
			if err != nil {
				return nserror.New(nserror.Internal, "%s is not a Lance ref file: %v", a.Key, err)
			}
			into[n] = r
		}
		return nil
	}
	if err := read(table.Tags(), TagOfRef, ParseTagRef, refs.Tags); err != nil {
		return Refs{}, err
	}
	if err := read(table.BranchRefs(), BranchOfRef, ParseBranchRef, refs.Bases); err != nil {
		return Refs{}, err
	}
	return refs, nil
}

// TagOfRef is the tag a file under TagsPrefix records (its name relative
// to the prefix); ok is false for any other file.
func TagOfRef(file string) (tag string, ok bool) {
	stem, found := strings.CutSuffix(file, ".json")
	return stem, found && stem != "" && !strings.Contains(stem, "/")
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

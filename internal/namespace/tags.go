package namespace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// Tags are Lance's own: one JSON file per tag under the table's
// _refs/tags/, written and read by Lance itself (LanceDB's tags()) and,
// through these operations, by the catalog, in the same format, so that
// every reader agrees. Storage is their only truth: nothing about them is
// kept in Redis or __manifest.

// tagFile is a tag file as Lance writes it (serde, camelCase, two-space
// indented): the fields in Lance's order.
type tagFile struct {
	Branch       *string         `json:"branch"`
	Version      int64           `json:"version"`
	CreatedAt    string          `json:"createdAt,omitempty"`
	UpdatedAt    string          `json:"updatedAt,omitempty"`
	ManifestSize int64           `json:"manifestSize"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
}

// event is the change feed's event of a tag of table id, as it points.
func (t tagFile) event(typ string, id api.ID, tag string) api.Event {
	ev := api.Event{Type: typ, ID: id, Tag: tag, Version: uint64(max(t.Version, 0))}
	if t.Branch != nil {
		ev.Branch = *t.Branch
	}
	return ev
}

// checkTagName applies Lance's rules for a tag's name: not empty; letters,
// digits, '.', '-' and '_' only; no leading or trailing dot, no "..", no
// ".lock" ending. A name that breaks them is InvalidInput.
func checkTagName(tag string) error {
	bad := func(why string) error { return nserror.New(nserror.InvalidInput, "tag %q: %s", tag, why) }
	switch {
	case tag == "":
		return bad("a tag's name cannot be empty")
	case strings.IndexFunc(tag, notRefChar) >= 0:
		return bad("a tag's name is made of letters, digits, '.', '-' and '_'")
	case strings.HasPrefix(tag, "."), strings.HasSuffix(tag, "."):
		return bad("a tag's name cannot begin or end with a dot")
	case strings.HasSuffix(tag, ".lock"):
		return bad("a tag's name cannot end with .lock")
	case strings.Contains(tag, ".."):
		return bad("a tag's name cannot hold two consecutive dots")
	case len(tag)+len(refSuffix) > objstore.MaxSegmentLen:
		return bad(fmt.Sprintf("a tag's name is at most %d bytes (its file is %s%s)", objstore.MaxSegmentLen-len(refSuffix), "<name>", refSuffix))
	}
	return nil
}

// refSuffix ends the name of a tag's or a branch's ref file.
const refSuffix = ".json"

// notRefChar reports a character Lance refuses in a tag's name and in a
// segment of a branch's: anything but letters, digits, '.', '-' and '_'.
func notRefChar(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '.' && r != '-' && r != '_'
}

// readTag reads a tag's file; a missing one is TableTagNotFound.
func (s *Service) readTag(ctx context.Context, id api.ID, loc, tag string) (tagFile, error) {
	var t tagFile
	if err := checkTagName(tag); err != nil {
		return t, err
	}
	b, err := s.objs.Get(ctx, lancemanifest.Dir(loc).Tag(tag))
	if errors.Is(err, objstore.ErrNotFound) {
		return t, nserror.New(nserror.TableTagNotFound, "table %q has no tag %q", id.String(), tag)
	}
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, nserror.New(nserror.Internal, "the file of tag %q of table %q is not a Lance tag: %v", tag, id.String(), err)
	}
	return t, nil
}

// tagged builds the file of a tag pointing to version, checking that the
// version exists on the branch (main when none is named).
func (s *Service) tagged(ctx context.Context, id api.ID, loc string, version int64, branch string) (tagFile, error) {
	chain, err := chainOf(loc, branch)
	if err != nil {
		return tagFile{}, err
	}
	if version <= 0 {
		return tagFile{}, nserror.New(nserror.InvalidInput, "version %d is not a table version", version)
	}
	tv, err := s.versionOf(ctx, id, chain, version)
	if err != nil {
		return tagFile{}, s.orBranchNotFound(ctx, id, chain, branch, err)
	}
	t := tagFile{Version: version, Metadata: json.RawMessage("{}")}
	if !onMain(branch) {
		t.Branch = &branch
	}
	if tv.ManifestSize != nil {
		t.ManifestSize = *tv.ManifestSize
	}
	return t, nil
}

// encodeRef is a ref file (a tag's, a branch's) as Lance writes it:
// serde_json's pretty printer (two spaces, each array element on a line
// of its own), HTML characters as they are, no final newline.
func encodeRef(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// tagTime is a tag's timestamp as Lance writes it (RFC 3339, UTC,
// nanoseconds).
func (s *Service) tagTime() string { return s.now().UTC().Format(time.RFC3339Nano) }

// ListTableTags lists a table's tags by name, a page at a time
// (page_token: the last name of the previous page).
func (br Branches) ListTableTags(ctx context.Context, req api.ListTableTagsRequest) (*api.ListTableTagsResponse, error) {
	s := br.s
	loc, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	_, names, token, err := s.refPage(ctx, lancemanifest.Dir(loc).Tags(), func(file string) (string, bool) {
		return file, checkTagName(file) == nil
	}, req.PageToken, req.Limit)
	if err != nil {
		return nil, err
	}
	resp := &api.ListTableTagsResponse{Tags: make(map[string]api.TagContents, len(names)), PageToken: token}
	for _, name := range names {
		t, err := s.readTag(ctx, req.ID, loc, name)
		if nserror.CodeOf(err) == nserror.TableTagNotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		c := api.TagContents{Version: t.Version, ManifestSize: t.ManifestSize}
		if t.Branch != nil {
			c.Branch = *t.Branch
		}
		resp.Tags[name] = c
	}
	return resp, nil
}

// GetTableTagVersion answers the version a tag points to.
func (br Branches) GetTableTagVersion(ctx context.Context, req api.GetTableTagVersionRequest) (*api.GetTableTagVersionResponse, error) {
	s := br.s
	loc, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	t, err := s.readTag(ctx, req.ID, loc, req.Tag)
	if err != nil {
		return nil, err
	}
	resp := &api.GetTableTagVersionResponse{Version: t.Version}
	if t.Branch != nil {
		resp.Branch = *t.Branch
	}
	return resp, nil
}

// CreateTableTag makes a tag point to an existing version of main; the
// file is written create-only, as Lance does: a tag that exists is
// TableTagAlreadyExists.
func (br Branches) CreateTableTag(ctx context.Context, req api.CreateTableTagRequest) (*api.TableTagResponse, error) {
	s := br.s
	loc, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if err := checkTagName(req.Tag); err != nil {
		return nil, err
	}
	t, err := s.tagged(ctx, req.ID, loc, req.Version, req.Branch)
	if err != nil {
		return nil, err
	}
	t.CreatedAt = s.tagTime()
	t.UpdatedAt = t.CreatedAt
	b, err := encodeRef(t)
	if err != nil {
		return nil, err
	}
	key := lancemanifest.Dir(loc).Tag(req.Tag)
	err = s.inStorage(ctx, t.event(api.EventTagCreated, req.ID, req.Tag), key, b, isAlreadyExists, func() error {
		return s.objs.PutIfAbsent(ctx, key, b)
	})
	if errors.Is(err, objstore.ErrAlreadyExists) {
		return nil, nserror.New(nserror.TableTagAlreadyExists, "table %q already has a tag %q", req.ID.String(), req.Tag)
	}
	if err != nil {
		return nil, err
	}
	return &api.TableTagResponse{}, nil
}

// UpdateTableTag makes an existing tag point to another version of main;
// it keeps its creation time.
func (br Branches) UpdateTableTag(ctx context.Context, req api.CreateTableTagRequest) (*api.TableTagResponse, error) {
	s := br.s
	loc, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	old, err := s.readTag(ctx, req.ID, loc, req.Tag)
	if err != nil {
		return nil, err
	}
	t, err := s.tagged(ctx, req.ID, loc, req.Version, req.Branch)
	if err != nil {
		return nil, err
	}
	t.CreatedAt, t.UpdatedAt = old.CreatedAt, s.tagTime()
	if len(old.Metadata) > 0 {
		t.Metadata = old.Metadata
	}
	b, err := encodeRef(t)
	if err != nil {
		return nil, err
	}
	key := lancemanifest.Dir(loc).Tag(req.Tag)
	if err := s.inStorage(ctx, t.event(api.EventTagUpdated, req.ID, req.Tag), key, b, nil, func() error {
		return s.objs.Put(ctx, key, b)
	}); err != nil {
		return nil, err
	}
	return &api.TableTagResponse{}, nil
}

// DeleteTableTag deletes a tag's file; a missing tag is TableTagNotFound.
func (br Branches) DeleteTableTag(ctx context.Context, req api.DeleteTableTagRequest) (*api.TableTagResponse, error) {
	s := br.s
	loc, err := s.tableLoc(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	t, err := s.readTag(ctx, req.ID, loc, req.Tag)
	if err != nil {
		return nil, err
	}
	key := lancemanifest.Dir(loc).Tag(req.Tag)
	if err := s.inStorage(ctx, t.event(api.EventTagDeleted, req.ID, req.Tag), key, nil, isNotFound, func() error {
		return s.objs.Delete(ctx, key)
	}); err != nil {
		return nil, err
	}
	return &api.TableTagResponse{}, nil
}

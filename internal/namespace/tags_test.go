package namespace

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// A tag file as Lance 12 (LanceDB 0.39's tags().create) writes it.
const lanceTag = `{
  "branch": null,
  "version": 1,
  "createdAt": "2026-12-02T00:40:00.939715444Z",
  "updatedAt": "2026-12-02T00:40:00.939715444Z",
  "manifestSize": 373,
  "metadata": {}
}`

// Tags are Lance's files under _refs/tags/: what Lance wrote is listed
// and resolved, what the catalog writes is in Lance's format, create is
// create-only, names follow Lance's rules, and a tag only points to a
// version of main that exists.
func TestTagsAreLancesOwnFiles(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		s := e.s
		tid := id("t")
		loc := e.withVersions(tid, 3)
		if err := e.objs.Put(ctx, loc+"/_refs/tags/lance-made.json", []byte(lanceTag)); err != nil {
			t.Fatal(err)
		}

		must(s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "v2.0-rc_1", Version: 2}))
		_, err := s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "v2.0-rc_1", Version: 3})
		wantCode(t, "creating a tag twice", err, nserror.TableTagAlreadyExists)
		for _, bad := range []string{"", "a/b", ".a", "a.", "a..b", "a.lock", "a b", "../x"} {
			_, err := s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: bad, Version: 1})
			wantCode(t, "tag "+bad, err, nserror.InvalidInput)
		}
		_, err = s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "x", Version: 9})
		wantCode(t, "a tag of a missing version", err, nserror.TableVersionNotFound)
		_, err = s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "x", Version: 1, Branch: "dev"})
		wantCode(t, "a tag on a branch", err, nserror.TableBranchNotFound)
		_, err = s.Branches().CreateTableTag(ctx, api.CreateTableTagRequest{ID: id("nope"), Tag: "x", Version: 1})
		wantCode(t, "a tag of a missing table", err, nserror.TableNotFound)

		// The file the catalog wrote is Lance's: its fields, in its order.
		b, err := e.objs.Get(ctx, loc+"/_refs/tags/v2.0-rc_1.json")
		if err != nil {
			t.Fatal(err)
		}
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if f["branch"] != nil || f["version"] != float64(2) || f["manifestSize"] != float64(2) || f["createdAt"] == "" || f["createdAt"] != f["updatedAt"] {
			t.Fatalf("the tag file:\n%s", b)
		}
		if keys := []string{`"branch"`, `"version"`, `"createdAt"`, `"updatedAt"`, `"manifestSize"`, `"metadata"`}; !inOrder(string(b), keys) || !strings.HasPrefix(string(b), "{\n  \"branch\": null,\n") {
			t.Fatalf("the tag file is not laid out as Lance's:\n%s", b)
		}

		list := must(s.Branches().ListTableTags(ctx, api.ListTableTagsRequest{ID: tid}))
		if len(list.Tags) != 2 || list.Tags["lance-made"] != (api.TagContents{Version: 1, ManifestSize: 373}) ||
			list.Tags["v2.0-rc_1"] != (api.TagContents{Version: 2, ManifestSize: 2}) {
			t.Fatalf("tags: %+v", list.Tags)
		}
		page := must(s.Branches().ListTableTags(ctx, api.ListTableTagsRequest{ID: tid, Limit: ptr(1)}))
		if len(page.Tags) != 1 || page.PageToken != "lance-made" {
			t.Fatalf("first page: %+v", page)
		}
		if v := must(s.Branches().GetTableTagVersion(ctx, api.GetTableTagVersionRequest{ID: tid, Tag: "lance-made"})); v.Version != 1 {
			t.Fatalf("lance-made points to %d", v.Version)
		}
		_, err = s.Branches().GetTableTagVersion(ctx, api.GetTableTagVersionRequest{ID: tid, Tag: "nope"})
		wantCode(t, "a missing tag", err, nserror.TableTagNotFound)
		if d := must(s.DescribeTable(ctx, api.DescribeTableRequest{ID: tid, Tag: "v2.0-rc_1"})); d.Version == nil || *d.Version != 2 {
			t.Fatalf("describe at a tag: %+v", d)
		}
		_, err = s.DescribeTable(ctx, api.DescribeTableRequest{ID: tid, Tag: "nope"})
		wantCode(t, "describe at a missing tag", err, nserror.TableTagNotFound)

		// Update keeps the creation time; delete removes the file.
		must(s.Branches().UpdateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "lance-made", Version: 3}))
		b, _ = e.objs.Get(ctx, loc+"/_refs/tags/lance-made.json")
		if err := json.Unmarshal(b, &f); err != nil || f["version"] != float64(3) || f["manifestSize"] != float64(3) ||
			f["createdAt"] != "2026-12-02T00:40:00.939715444Z" || f["updatedAt"] == f["createdAt"] {
			t.Fatalf("the updated tag file:\n%s", b)
		}
		_, err = s.Branches().UpdateTableTag(ctx, api.CreateTableTagRequest{ID: tid, Tag: "nope", Version: 1})
		wantCode(t, "updating a missing tag", err, nserror.TableTagNotFound)
		must(s.Branches().DeleteTableTag(ctx, api.DeleteTableTagRequest{ID: tid, Tag: "lance-made"}))
		_, err = s.Branches().DeleteTableTag(ctx, api.DeleteTableTagRequest{ID: tid, Tag: "lance-made"})
		wantCode(t, "deleting a deleted tag", err, nserror.TableTagNotFound)
		if list := must(s.Branches().ListTableTags(ctx, api.ListTableTagsRequest{ID: tid})); len(list.Tags) != 1 {
			t.Fatalf("tags after the delete: %+v", list.Tags)
		}
	})
}

// inOrder reports whether the strings occur in s in that order.
func inOrder(s string, subs []string) bool {
	at := 0
	for _, sub := range subs {
		i := strings.Index(s[at:], sub)
		if i < 0 {
			return false
		}
		at += i + len(sub)
	}
	return true
}

// Branches are listed from Lance's own files, names unescaped ("team/x"
// is team%2Fx.json), with their parents.
func TestBranchesAreListedFromLancesFiles(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		e := newTenvOn(t, backend)
		tid := id("t")
		loc := e.withVersions(tid, 2)
		files := map[string]string{
			"dev.json": `{"parentBranch": null, "identifier": {"version_mapping": [[2, "cf0f"]]},
				"parentVersion": 2, "createAt": 1796172517, "manifestSize": 425, "metadata": {}}`,
			"team%2Fx.json": `{"parentBranch": "dev", "identifier": {"version_mapping": [[2, "cf0f"], [3, "6346"]]},
				"parentVersion": 3, "createAt": 1796172518, "manifestSize": 542, "metadata": {"k": "v"}}`,
			"notes.txt": `not a branch`,
		}
		for name, body := range files {
			if err := e.objs.Put(ctx, loc+"/_refs/branches/"+name, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}
		got := must(e.s.Branches().ListTableBranches(ctx, api.ListTableBranchesRequest{ID: tid}))
		dev, x := got.Branches["dev"], got.Branches["team/x"]
		if len(got.Branches) != 2 || dev.ParentBranch != "" || dev.ParentVersion != 2 || dev.CreateAt != 1796172517 || dev.ManifestSize != 425 ||
			x.ParentBranch != "dev" || x.ParentVersion != 3 || x.Metadata["k"] != "v" {
			t.Fatalf("branches: %+v", got.Branches)
		}
		page := must(e.s.Branches().ListTableBranches(ctx, api.ListTableBranchesRequest{ID: tid, Limit: ptr(1)}))
		if len(page.Branches) != 1 || page.PageToken != "dev" {
			t.Fatalf("first page: %+v", page)
		}
		if next := must(e.s.Branches().ListTableBranches(ctx, api.ListTableBranchesRequest{ID: tid, PageToken: "dev"})); len(next.Branches) != 1 || next.Branches["team/x"].ParentVersion != 3 {
			t.Fatalf("second page: %+v", next)
		}
	})
}

package namespace

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
)

// Every operation's Authorize (what an idempotent retry asks before it
// is answered) decides as its Run does and runs nothing: for a caller
// that may make the request it answers nil and leaves the catalog as it
// was, even for drops, renames and commits; for one that may not, it
// answers the very error Run answers (PermissionDenied, or the NotFound
// that hides what the caller may not read).
func TestAuthorizeDecidesAsRunDoesAndRunsNothing(t *testing.T) {
	e := newTenv(t)
	bg := context.Background()
	for _, ns := range []api.ID{id("a"), id("b"), id("z")} {
		must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: ns}))
	}
	e.withVersions(id("a", "t"), 2)
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Read}))
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"z"}, Principal: "zed", Role: auth.Admin}))
	admin := auth.WithPrincipal(bg, auth.Principal{Name: "root", Role: auth.Admin})
	ana := auth.WithPrincipal(bg, auth.Principal{Name: "ana", Role: auth.None})    // reads a
	zed := auth.WithPrincipal(bg, auth.Principal{Name: "zed", Role: auth.None})    // all of z, nothing of a
	nobody := auth.WithPrincipal(bg, auth.Principal{Name: "nob", Role: auth.None}) // no grant at all

	// catalog is what the operations could change, as the admin reads it.
	catalog := func() string {
		t.Helper()
		var b strings.Builder
		for _, r := range []struct {
			name string
			body any
		}{
			{"ListNamespaces", map[string]any{"id": []string{}}},
			{"ListAllTables", map[string]any{"include_declared": true}},
			{"ListTableVersions", map[string]any{"id": id("a", "t")}},
			{"ListTableTags", map[string]any{"id": id("a", "t")}},
			{"ListTableBranches", map[string]any{"id": id("a", "t")}},
			{"ListNamespaceGrants", map[string]any{"id": []string{}}},
			{"DescribeTable", map[string]any{"id": id("a", "t")}},
		} {
			out, err := op(admin, e.s, r.name, r.body)
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			j, _ := json.Marshal(out)
			fmt.Fprintf(&b, "%s %s\n", r.name, j)
		}
		return b.String()
	}
	before := catalog()
	// A compaction job of a$t, leased to worker w, for the operations on
	// a job.
	job := "0193a5c0-0000-7000-8000-000000000001"
	rec, _ := json.Marshal(api.CompactionJob{JobID: job, ID: id("a", "t"), Location: e.locOf(id("a", "t")), Worker: "w", Attempt: 1})
	must(0, e.rdb.HSet(bg, string(e.s.k.CompactionJobs()), e.locOf(id("a", "t")), string(rec)).Err())

	for _, o := range Ops {
		// The request: on a$t (table routes), on a (namespace routes), or
		// naming a$t in its body (the batches).
		rest, body := &REST{Query: noQuery{}}, `{}`
		switch {
		case strings.HasPrefix(o.Path, "table/{id}/"):
			rest.ID = id("a", "t")
		case strings.HasPrefix(o.Path, "namespace/{id}/"):
			rest.ID = id("a")
		}
		switch o.Name {
		case "CreateNamespace":
			rest.ID = id("a", "new")
		case "DeclareTable", "CreateEmptyTable", "RegisterTable":
			rest.ID = id("a", "new")
		case "RenameTable":
			body = `{"new_table_name": "u"}`
		case "CreateTableVersion":
			body = `{"version": 3, "manifest_path": "x"}`
		case "BatchCreateTableVersions":
			body = `{"entries": [{"id": ["a", "t"], "version": 3, "manifest_path": "x"}]}`
		case "BatchCommitTables":
			body = `{"operations": [{"deregister_table": {"id": ["a", "t"]}}]}`
		case "CreateNamespaceGrant":
			body = `{"principal": "eve", "role": "admin"}`
		case "DeleteNamespaceGrant":
			body = `{"principal": "ana"}`
		case "DropNamespace":
			body = `{"behavior": "Cascade"}`
		case "ClaimCompaction":
			body = `{"worker": "w", "namespace": ["a"]}`
		case "HeartbeatCompaction", "CompleteCompaction", "FailCompaction":
			body = `{"job_id": "` + job + `", "worker": "w"}`
		}
		if err := o.Authorize(admin, e.s, []byte(body), rest); err != nil {
			t.Errorf("%s: the admin's Authorize: %v", o.Name, err)
		}
		for who, ctx := range map[string]context.Context{"ana (reads a)": ana, "zed (of z only)": zed, "nobody": nobody} {
			got := o.Authorize(ctx, e.s, []byte(body), rest)
			if (o.Write || o.Admin) && got == nil {
				t.Errorf("%s by %s: Authorize allowed a change of a", o.Name, who)
				continue // Run would make it
			}
			if got != nil { // Run refuses before it runs anything
				if _, want := o.Run(ctx, e.s, []byte(body), rest); want == nil || got.Error() != want.Error() {
					t.Errorf("%s by %s: Authorize %v, Run %v: want the same refusal", o.Name, who, got, want)
				}
			}
			if who == "ana (reads a)" && !o.Write && !o.Admin && got != nil {
				t.Errorf("%s by %s: Authorize %v, want nil (a read of what it reads)", o.Name, who, got)
			}
		}
	}
	if after := catalog(); after != before {
		t.Fatalf("authorizing changed the catalog:\n%s\n→\n%s", before, after)
	}
}

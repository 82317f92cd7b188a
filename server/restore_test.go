package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/client"
	"github.com/flightns/flightns/server"
)

// docs/deploy.md's backup and restore: object storage is the system of
// record, so a copy of the catalog's root, served by a new server with a
// fresh, empty Redis (another directory, another private redis-server),
// serves every table at its versions, with their manifests and tags; and
// it commits the next version.
func TestACatalogRestoredFromACopyOfItsRootIntoAFreshRedisServesEveryTable(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	srv, err := server.Start(ctx, config(t, src))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	c := restClient(t, srv)
	tables := []struct {
		id       api.ID
		versions []int64
	}{{api.ID{"sales", "orders"}, []int64{1, 2, 3}}, {api.ID{"sales", "eu", "returns"}, []int64{1, 2}}, {api.ID{"ops", "empty"}, nil}}
	for _, ns := range []api.ID{{"sales"}, {"sales", "eu"}, {"ops"}} {
		if _, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: ns}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range tables {
		d, err := c.DeclareTable(ctx, api.DeclareTableRequest{ID: tb.id})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range tb.versions {
			if _, err := c.CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: tb.id, Version: v,
				ManifestPath: stageManifest(t, d.Location, uint64(v))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.CreateTableTag(ctx, api.CreateTableTagRequest{ID: api.ID{"sales", "orders"}, Tag: "release", Version: 2}); err != nil {
		t.Fatal(err)
	}
	before := catalogState(t, c, filepath.Join(src, "root"))

	// The backup: a copy of the root, taken while the server runs with no
	// commit in flight. The restore: a new data directory holding the
	// copy, and a new server there (its own Redis, empty).
	dst := t.TempDir()
	if err := os.CopyFS(filepath.Join(dst, "root"), os.DirFS(filepath.Join(src, "root"))); err != nil {
		t.Fatal(err)
	}
	restored, err := server.Start(ctx, config(t, dst))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = restored.Close() }()
	rc := restClient(t, restored)
	after := catalogState(t, rc, filepath.Join(dst, "root"))
	if strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("the restored catalog serves\n%s\nthe original served\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	d, err := rc.DescribeTable(ctx, api.DescribeTableRequest{ID: api.ID{"sales", "orders"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"sales", "orders"}, Version: 4,
		ManifestPath: stageManifest(t, d.Location, 4)}); err != nil {
		t.Fatalf("the restored catalog's next commit: %v", err)
	}
}

func restClient(t *testing.T, srv *server.Server) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{URL: "http://" + srv.RESTAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// catalogState lists every table a server serves, each with its location,
// its versions with their manifests (paths below root written <root>) and
// its tag, a line each.
func catalogState(t *testing.T, c *client.Client, root string) []string {
	t.Helper()
	ctx := context.Background()
	all, err := c.ListAllTables(ctx, api.ListTablesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range all.Tables {
		id, err := api.ParseID(name, api.Delimiter)
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.DescribeTable(ctx, api.DescribeTableRequest{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		line := name + " at " + d.Location
		vs, err := c.ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs.Versions {
			line += " | v" + strconv.FormatInt(v.Version, 10) + " " + v.ManifestPath
		}
		if tag, err := c.GetTableTagVersion(ctx, api.GetTableTagVersionRequest{ID: id, Tag: "release"}); err == nil {
			line += " | tag release v" + strconv.FormatInt(tag.Version, 10)
		}
		// Paths name the root where they were made: compare them below it.
		out = append(out, strings.ReplaceAll(line, strings.TrimPrefix(root, "/"), "<root>"))
	}
	if len(out) != 3 {
		t.Fatalf("%d tables served, want 3: %q", len(out), out)
	}
	return out
}

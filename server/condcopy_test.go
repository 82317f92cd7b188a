package server_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/testutil/flighttest"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
	"github.com/flightns/flightns/server"
)

// At startup the server probes its store once: on MinIO, which overwrites
// on a conditional copy, promotions stay a GET and a conditional PUT; on
// a store that refuses one (a proxy that honours the condition, as AWS S3
// does), they become one server-side copy. Either way it says so once in
// its log, in /readyz and in flightns_storage_conditional_copy, and a
// table commits; a directory says it is none of these.
func TestTheServerProbesItsStoreForConditionalCopy(t *testing.T) {
	ctx := context.Background()
	minio := s3test.Start(t, "cat")
	honouring := s3test.StartFaultProxy(t, minio.URL)
	honouring.HonourCopyCondition(minioproc.AccessKey, minioproc.SecretKey, minioproc.Region)
	for _, c := range []struct {
		name, root, readyz string
		gauge              float64
	}{
		{"minio", minio.URI("cat", "direct"), "promotions: a GET and a conditional PUT (the store overwrote an existing object on a conditional copy)", 0},
		{"honouring", honouring.URI("cat", "honouring"), "promotions: one server-side conditional CopyObject (the store refused a conditional copy onto an existing object (412))", 1},
		{"directory", "", "promotions: the store's own create-only write (the store is not an s3:// store)", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log syncBuffer
			cfg := config(t, t.TempDir())
			cfg.Store.Root = c.root
			cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
			srv, err := server.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = srv.Close() }()
			code, body := get(t, "http://"+srv.MetricsAddr().String()+"/readyz")
			if code != http.StatusOK || !strings.Contains(body, "\n"+c.readyz+"\n") {
				t.Fatalf("/readyz: %d %q, want the line %q", code, body, c.readyz)
			}
			_, metrics := get(t, "http://"+srv.MetricsAddr().String()+"/metrics")
			if v := metricValue(t, metrics, "flightns_storage_conditional_copy"); v != c.gauge {
				t.Fatalf("flightns_storage_conditional_copy = %v, want %v", v, c.gauge)
			}
			if n := strings.Count(log.String(), "storage: promotions of staging manifests not read"); n != 1 {
				t.Fatalf("logged %d times, want once:\n%s", n, log.String())
			}
			restJSON(t, srv, "/v1/namespace/sales/create", `{}`, func(*http.Request) {}, &map[string]any{})
			var d struct {
				Location string `json:"location"`
			}
			restJSON(t, srv, "/v1/table/sales%24t/declare", `{}`, func(*http.Request) {}, &d)
			if d.Location == "" {
				t.Fatal("the table was declared without a location")
			}
		})
	}
}

// On a store that honours the condition, a commit that gives its
// manifest's size is claimed before its staging manifest is read, and
// the catalog still tells only what committed: a commit naming a staging
// manifest that does not exist is refused (InvalidInput) and leaves no
// version, no event in the change feed and no __manifest row; a writer
// that gave another size has the size storage holds in the feed, the
// version's description and its row.
func TestClaimingFirstShowsOnlyWhatCommitted(t *testing.T) {
	ctx := context.Background()
	minio := s3test.Start(t, "cat")
	honouring := s3test.StartFaultProxy(t, minio.URL)
	honouring.HonourCopyCondition(minioproc.AccessKey, minioproc.SecretKey, minioproc.Region)
	cfg := config(t, t.TempDir())
	cfg.Store.Root = honouring.URI("cat", "first")
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	objs, err := objstore.Open(ctx, honouring.URI("cat", "first"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = objs.Close() }()
	c := restClient(t, srv)
	if _, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"s"}}); err != nil {
		t.Fatal(err)
	}
	id := api.ID{"s", "t"}
	d, err := c.DeclareTable(ctx, api.DeclareTableRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	loc := strings.TrimSuffix(d.Location, "/")
	commit := func(v int64, content string, size int64) error {
		name := fmt.Sprintf("%020d.manifest-%s", uint64(math.MaxUint64)-uint64(v), uuid.NewString())
		if content != "" {
			if err := objs.Put(ctx, path.Base(loc)+"/_versions/"+name, []byte(content)); err != nil {
				t.Fatal(err)
			}
		}
		_, err := c.CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: id, Version: v, ManifestPath: loc + "/_versions/" + name, ManifestSize: &size})
		return err
	}
	if err := commit(1, "manifest one", 12); err != nil {
		t.Fatal(err)
	}
	if err := commit(2, "", 40); !errors.Is(err, nserror.ErrInvalidInput) {
		t.Fatalf("a commit naming a missing staging manifest: %v, want InvalidInput", err)
	}
	if err := commit(2, "manifest two", 999); err != nil {
		t.Fatal(err)
	}
	two := int64(2)
	dv, err := c.DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: id, Version: &two})
	if err != nil || dv.Version.ManifestSize == nil || *dv.Version.ManifestSize != int64(len("manifest two")) {
		t.Fatalf("version 2: %+v %v", dv, err)
	}
	var versions []api.Event
	deadline := time.Now().Add(30 * time.Second)
	for len(versions) < 2 && time.Now().Before(deadline) {
		versions = versions[:0]
		if _, err := c.Changes(ctx, api.ChangesRequest{Table: id, Types: []string{api.EventVersionCreated}}, false, func(e api.Event) error {
			versions = append(versions, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(versions) != 2 || versions[0].Version != 1 || versions[0].ManifestSize != 12 ||
		versions[1].Version != 2 || versions[1].ManifestSize != int64(len("manifest two")) {
		t.Fatalf("the feed's versions: %+v, want 1 (12 bytes) and 2 (%d bytes)", versions, len("manifest two"))
	}
	rows := flighttest.Strings(t, srv.FlightAddr().String(), "SELECT CAST(table_version AS VARCHAR) || ' ' || CAST(manifest_size AS VARCHAR) FROM __manifest WHERE object_type = 'table_version' ORDER BY table_version")
	if len(rows) != 2 || rows[0] != "1 12" || rows[1] != fmt.Sprintf("2 %d", len("manifest two")) {
		t.Fatalf("__manifest's version rows: %q", rows)
	}
}

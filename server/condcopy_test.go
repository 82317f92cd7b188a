package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/testutil/s3test"
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

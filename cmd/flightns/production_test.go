package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
)

// waitReady polls /readyz until it answers want (a generous limit only
// catches hangs).
func waitReady(t *testing.T, s *server, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := httpGet(t, "http://"+s.metrics+"/readyz")
		if code == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz stays %d (%s), want %d", code, body, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Not parallel: s3test sets the AWS credentials in the environment, which
// the server inherits (the standard AWS variables).
func TestServeOnS3WithAnExternalRedisIsNotReadyWhileRedisIsDown(t *testing.T) {
	s3 := s3test.Start(t, "lake")
	r := redistest.Start(t, redistest.WithPersistence(redisproc.AOFAlways))
	work := t.TempDir()
	s := startServer(t, work, nil, "--root", s3.URI("lake", "catalog"), "--redis", r.URL(), "--catalog", "prod", "--log-format", "json")
	if s.redisPid != 0 {
		t.Fatal("a private redis-server started although --redis was given")
	}
	loc := declareTable(t, s.rest, "p", "t")
	if !strings.HasPrefix(loc, "s3://lake/catalog/") {
		t.Fatalf("table location %q is not in the bucket", loc)
	}
	mustREST(t, s.rest, "/v1/namespace/p$q/create", `{}`, nil)
	if names := flightNames(t, s.flight, "SELECT object_id FROM namespaces ORDER BY 1"); strings.Join(names, ",") != "p,p$q" {
		t.Errorf("namespaces over Flight: %v", names)
	}
	// Redis down: not ready; back: ready again, and serving.
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s, http.StatusServiceUnavailable)
	r.Restart()
	waitReady(t, s, http.StatusOK)
	mustREST(t, s.rest, "/v1/namespace/p$r/create", `{}`, nil)
	if !strings.Contains(s.Log(), `"msg":"flightns ready"`) {
		t.Errorf("no JSON log lines:\n%s", s.Log())
	}
	s.stop()
}

func TestServeOnARedisCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, 0)
	work := t.TempDir()
	url := "redis+cluster://" + strings.TrimPrefix(c.URL(), "redis://")
	s := startServer(t, work, nil, "--redis", url, "--catalog", "c1")
	loc := declareTable(t, s.rest, "cl", "t")
	for v := uint64(1); v <= 2; v++ {
		if code := commitVersion(t, s.rest, "cl$t", loc, v); code != http.StatusOK {
			t.Fatalf("commit %d on a cluster: HTTP %d", v, code)
		}
	}
	var d struct{ Version struct{ Version int64 } }
	mustREST(t, s.rest, "/v1/table/cl$t/version/describe", `{}`, &d)
	if d.Version.Version != 2 {
		t.Errorf("latest version on a cluster: %d", d.Version.Version)
	}
	if code, out, errs := runCLI(t, work, "admin", "verify", "--redis", url, "--catalog", "c1"); code != 0 || !strings.Contains(out, "2 version records: 0 drift") {
		t.Errorf("admin verify on a cluster: exit %d, %s %s", code, out, errs)
	}
	s.stop()
}

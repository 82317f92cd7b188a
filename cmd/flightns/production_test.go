package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/uuid"

	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/testutil/flighttest"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
)

// waitReady polls /readyz until it answers want (a generous limit only
// catches hangs).
func waitReady(t *testing.T, s *serverProc, want int) {
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
	// Commits of manifests staged as Lance stages them (no checksum for
	// the store to send back): the S3 client says nothing per request.
	for v := uint64(1); v <= 5; v++ {
		content := fmt.Sprintf("manifest v%d", v)
		key := fmt.Sprintf("%s/_versions/%020d.manifest-%s", strings.TrimPrefix(loc, "s3://lake/"), uint64(math.MaxUint64)-v, uuid.NewString())
		if _, err := s3.Client().PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String(key), Body: strings.NewReader(content)},
			func(o *awss3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"version":%d,"manifest_path":%q,"manifest_size":%d}`, v, "s3://lake/"+key, len(content))
		if code := restCall(t, s.rest, "/v1/table/p$t/version/create", body, nil); code != http.StatusOK {
			t.Fatalf("commit %d on S3: HTTP %d", v, code)
		}
		var d struct{ Version struct{ Version int64 } }
		mustREST(t, s.rest, "/v1/table/p$t/version/describe", fmt.Sprintf(`{"version":%d}`, v), &d)
	}
	if names := flighttest.Strings(t, s.flight, "SELECT object_id FROM namespaces ORDER BY 1"); strings.Join(names, ",") != "p,p$q" {
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
	// Everything the server and its SQL worker printed is the structured
	// log, none of it the AWS SDK's own lines (once per GET, before).
	for _, line := range strings.Split(strings.TrimSpace(s.Log()), "\n") {
		if !json.Valid([]byte(line)) || strings.Contains(line, "checksum") {
			t.Errorf("under --log-format json the server printed %q", line)
		}
	}
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

func TestServeThroughRedisSentinel(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t, redistest.WithPersistence(redisproc.AOFAlways))
	sentinel := redistest.StartSentinel(t, r.Addr())
	work := t.TempDir()
	s := startServer(t, work, nil, "--redis", "redis+sentinel://"+sentinel+"?master_name=mymaster")
	if !strings.Contains(s.Log(), "master mymaster") {
		t.Errorf("the log does not name the Sentinel master")
	}
	loc := declareTable(t, s.rest, "se", "t")
	if code := commitVersion(t, s.rest, "se$t", loc, 1); code != http.StatusOK {
		t.Fatalf("commit through Sentinel: HTTP %d", code)
	}
	// The catalog's keys are on the master Sentinel names.
	if n, err := r.Client().Exists(context.Background(), string(redisstate.KeysOf("flightns").Epoch())).Result(); err != nil || n != 1 {
		t.Errorf("epoch on the master: %d, %v", n, err)
	}
	s.stop()
}

//go:build deploy

package deploy

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/apache/arrow-go/v18/arrow/flight/flightsql/driver" // database/sql driver "flightsql"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/client"
)

// imageConfig is what podman image inspect says of the image's config.
type imageConfig struct {
	Config struct {
		User         string
		Env          []string
		Entrypoint   []string
		Cmd          []string
		ExposedPorts map[string]struct{}
		Volumes      map[string]struct{}
		StopSignal   string
		Labels       map[string]string
	}
	Size int64
}

// The image is what the issue asks for: a non-root user, the server as
// its entrypoint serving by default, listening on all interfaces with
// its data on the /data volume, its version and commit stamped; its size
// is reported.
func TestImageIsBuiltAsAsked(t *testing.T) {
	var cfg []imageConfig
	if err := json.Unmarshal([]byte(podman(t, "image", "inspect", image)), &cfg); err != nil || len(cfg) != 1 {
		t.Fatalf("inspect: %v (%d images)", err, len(cfg))
	}
	c := cfg[0].Config
	if c.User != "10001:10001" {
		t.Errorf("user %q, want 10001:10001 (non-root)", c.User)
	}
	if strings.Join(c.Entrypoint, " ") != "/usr/local/bin/flightns" || strings.Join(c.Cmd, " ") != "serve" {
		t.Errorf("entrypoint %q, cmd %q", c.Entrypoint, c.Cmd)
	}
	for _, want := range []string{"FLIGHTNS_DATA=/data", "FLIGHTNS_FLIGHT_ADDR=0.0.0.0:31337", "FLIGHTNS_REST_ADDR=0.0.0.0:31338",
		"FLIGHTNS_METRICS_ADDR=0.0.0.0:31339", "FLIGHTNS_CONSOLE_ADDR=0.0.0.0:31340"} {
		if !slices.Contains(c.Env, want) {
			t.Errorf("env lacks %s: %q", want, c.Env)
		}
	}
	for _, p := range []string{"31337/tcp", "31338/tcp", "31339/tcp", "31340/tcp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("port %s not exposed: %v", p, c.ExposedPorts)
		}
	}
	if _, ok := c.Volumes["/data"]; !ok || c.StopSignal != "SIGTERM" {
		t.Errorf("volumes %v, stop signal %q", c.Volumes, c.StopSignal)
	}
	commit := c.Labels["org.opencontainers.image.revision"]
	if len(commit) != 40 || c.Labels["org.opencontainers.image.version"] == "" {
		t.Errorf("labels %v: want the version and the commit", c.Labels)
	}
	out := podman(t, "run", "--rm", "--read-only", image, "version")
	if !strings.HasPrefix(out, "flightns "+c.Labels["org.opencontainers.image.version"]+" (commit "+commit+", go1.") {
		t.Errorf("flightns version printed %q; want the stamped version and commit %s", out, commit)
	}
	st, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s: %d MB unpacked, OCI archive %d MB", image, cfg[0].Size>>20, st.Size()>>20)
}

// One container, as a user runs it: read-only root filesystem, data on a
// named volume. It becomes ready, serves a REST create and a Flight SQL
// query, exits cleanly (code 0, drained) on stop, and serves the same
// catalog after a restart.
func TestImageServesAndKeepsItsDataAcrossARestart(t *testing.T) {
	ctx := context.Background()
	vol, ctr := name(t, "data"), name(t, "server")
	podman(t, "volume", "create", vol)
	t.Cleanup(func() {
		_, _ = podmanOut(ctx, "rm", "--force", "--time", "0", ctr)
		_, _ = podmanOut(ctx, "volume", "rm", "--force", vol)
	})
	flight, rest, metrics := freePort(t), freePort(t), freePort(t)
	podman(t, "run", "--detach", "--name", ctr, "--read-only", "--volume", vol+":/data",
		"--publish", fmt.Sprintf("127.0.0.1:%d:31337", flight),
		"--publish", fmt.Sprintf("127.0.0.1:%d:31338", rest),
		"--publish", fmt.Sprintf("127.0.0.1:%d:31339", metrics),
		image)
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", metrics)
	waitHTTP(t, ready, 90*time.Second)

	c, err := client.New(client.Config{URL: fmt.Sprintf("http://127.0.0.1:%d", rest)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"sales"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeclareTable(ctx, api.DeclareTableRequest{ID: api.ID{"sales", "orders"}}); err != nil {
		t.Fatal(err)
	}
	query := func() int64 {
		t.Helper()
		db, err := sql.Open("flightsql", fmt.Sprintf("flightsql://127.0.0.1:%d", flight))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		var n int64
		// The table's row is written when __manifest's change is durable:
		// the query sees it once the SQL engine has caught up.
		deadline := time.Now().Add(30 * time.Second)
		for {
			err = db.QueryRowContext(ctx, "SELECT count(*) FROM __manifest WHERE object_type = 'table' AND object_id = 'sales$orders'").Scan(&n)
			if err == nil && n == 1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("Flight SQL: %v", err)
		}
		return n
	}
	if n := query(); n != 1 {
		t.Fatalf("Flight SQL counts %d rows of the table, want 1", n)
	}

	stop := func() {
		t.Helper()
		start := time.Now()
		podman(t, "stop", "--time", "40", ctr)
		code := podman(t, "inspect", "--format", "{{.State.ExitCode}}", ctr)
		logs := podman(t, "logs", ctr)
		if code != "0" || !strings.Contains(logs, "requests drained") || !strings.Contains(logs, `"msg":"flightns stopped"`) {
			t.Fatalf("stop: exit code %s; logs:\n%s", code, tail(logs, 20))
		}
		t.Logf("stopped (SIGTERM, drained) in %v", time.Since(start).Round(time.Millisecond))
	}
	stop()
	podman(t, "start", ctr)
	waitHTTP(t, ready, 90*time.Second)
	if _, err := c.DescribeTable(ctx, api.DescribeTableRequest{ID: api.ID{"sales", "orders"}}); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if n := query(); n != 1 {
		t.Fatalf("after a restart Flight SQL counts %d rows of the table, want 1", n)
	}
	stop()
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

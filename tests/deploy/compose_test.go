//go:build deploy

package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/minioproc"
)

// deploy/compose.yaml as written, with local images for the registry's:
// the image under test for flightns and for Redis (it carries
// redis-server), and MinIO's pinned binary in an image of its own. Both
// replicas become ready on one Redis and one MinIO bucket; LanceDB on
// the host writes a table through replica A and reads it through
// replica B (and back), reaching MinIO at the client endpoint the
// replicas answer; Redis keeps an append-only file and a restart of it
// changes nothing LanceDB reads; the console serves the table; `down -v`
// (and what podman-compose leaves, removed) leaves nothing behind.
func TestComposeServesOneCatalogThroughTwoReplicas(t *testing.T) {
	if _, err := exec.LookPath("podman-compose"); err != nil {
		t.Fatalf("the compose test needs podman-compose (scripts/ensure-podman.sh installs it; Debian: apt-get install -y podman-compose): %v", err)
	}
	lancedb := lanceDBDir(t)
	minio := minioImage(t)
	project := strings.ReplaceAll(name(t, "p"), "-", "")
	ports := map[string]int{}
	for _, v := range []string{"MINIO_PORT", "A_FLIGHT_PORT", "A_REST_PORT", "A_METRICS_PORT", "A_CONSOLE_PORT",
		"B_FLIGHT_PORT", "B_REST_PORT", "B_METRICS_PORT", "B_CONSOLE_PORT"} {
		ports[v] = freePort(t)
	}
	env := []string{"FLIGHTNS_IMAGE=" + image, "REDIS_IMAGE=" + image, "MINIO_IMAGE=" + minio,
		"PUBLISH_ADDR=127.0.0.1", fmt.Sprintf("S3_CLIENT_ENDPOINT=http://127.0.0.1:%d", ports["MINIO_PORT"])}
	for v, p := range ports {
		env = append(env, fmt.Sprintf("%s=%d", v, p))
	}
	compose := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "podman-compose", append([]string{"-p", project, "-f", filepath.Join("deploy", "compose.yaml")}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(podmanEnv(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := compose("down", "-v"); err != nil {
			t.Errorf("podman-compose down -v: %v\n%s", err, out)
		}
		removeProject(t, project)
	})

	start := time.Now()
	if out, err := compose("up", "-d"); err != nil {
		t.Fatalf("podman-compose up -d: %v\n%s", err, out)
	}
	defer func() {
		if t.Failed() {
			for _, svc := range []string{"redis", "minio", "flightns-a", "flightns-b"} {
				out, _ := podmanOut(context.Background(), "logs", "--tail", "30", project+"_"+svc+"_1")
				t.Logf("%s:\n%s", svc, out)
			}
		}
	}()
	// at is replica A's or B's listener of a kind (FLIGHT, REST, METRICS,
	// CONSOLE) on the host.
	at := func(replica, kind string) string {
		return fmt.Sprintf("http://127.0.0.1:%d", ports[replica+"_"+kind+"_PORT"])
	}
	waitHTTP(t, at("A", "METRICS")+"/readyz", 3*time.Minute)
	waitHTTP(t, at("B", "METRICS")+"/readyz", time.Minute)
	t.Logf("compose up to both replicas ready: %v", time.Since(start).Round(100*time.Millisecond))

	// LanceDB takes its S3 keys from the environment: the compose file's
	// MinIO root user.
	s3Keys := []string{"AWS_ACCESS_KEY_ID=flightns", "AWS_SECRET_ACCESS_KEY=flightns-secret"}
	var got struct {
		OK                           bool
		Error                        string
		WroteA, ReadB, WroteB, ReadA tableState
	}
	runLanceDB(t, lancedb, s3Keys, &got, "replicas.mjs", at("A", "REST"), at("B", "REST"), `["shop"]`, "orders")
	if !got.OK {
		t.Fatalf("LanceDB through the replicas: %s", got.Error)
	}
	if !got.ReadB.equal(got.WroteA) {
		t.Errorf("replica B read %+v; replica A wrote %+v", got.ReadB, got.WroteA)
	}
	if !got.ReadA.equal(got.WroteB) || got.WroteB.Version != got.WroteA.Version+1 {
		t.Errorf("replica A read %+v; replica B wrote %+v on version %d", got.ReadA, got.WroteB, got.WroteA.Version)
	}
	if len(got.ReadA.Rows) != 4 {
		t.Errorf("rows %v, want 4", got.ReadA.Rows)
	}

	// Redis keeps its state in an append-only file on its volume; a
	// restarted Redis leaves both replicas serving the table as it was.
	mount := podman(t, "volume", "inspect", "--format", "{{.Mountpoint}}", project+"_redis-data")
	if aof, err := filepath.Glob(filepath.Join(mount, "appendonlydir", "*.aof")); err != nil || len(aof) == 0 {
		t.Errorf("no append-only file in Redis's volume (%s): %v %v", mount, aof, err)
	}
	if out, err := compose("restart", "redis"); err != nil {
		t.Fatalf("podman-compose restart redis: %v\n%s", err, out)
	}
	for _, replica := range []string{"A", "B"} {
		waitHTTP(t, at(replica, "METRICS")+"/readyz", time.Minute)
		var after struct {
			OK    bool
			Error string
			tableState
		}
		runLanceDB(t, lancedb, s3Keys, &after, "read.mjs", at(replica, "REST"), `["shop"]`, "orders")
		if !after.OK || !after.equal(got.ReadA) {
			t.Errorf("after Redis restarted, replica %s read %+v (%s); want %+v", replica, after.tableState, after.Error, got.ReadA)
		}
	}

	// The console of either replica serves the page and the table at the
	// version LanceDB last committed.
	for _, console := range []string{at("A", "CONSOLE"), at("B", "CONSOLE")} {
		if page := getText(t, console+"/", nil); !strings.Contains(page, "<title>flightns</title>") {
			t.Errorf("%s/ is not the console: %.200s", console, page)
		}
		var table struct{ Version int64 }
		body := getText(t, console+"/api/table?id=shop&id=orders", http.Header{"X-Flightns-Console": {"1"}})
		if err := json.Unmarshal([]byte(body), &table); err != nil || table.Version != got.ReadA.Version {
			t.Errorf("%s/api/table: %s (%v); want version %d", console, body, err, got.ReadA.Version)
		}
	}
}

// tableState is a table as one replica answered it to LanceDB.
type tableState struct {
	Version  int64    `json:"version"`
	Versions []int64  `json:"versions"`
	Rows     []string `json:"rows"`
}

func (s tableState) equal(o tableState) bool {
	return s.Version == o.Version && slices.Equal(s.Versions, o.Versions) && slices.Equal(s.Rows, o.Rows)
}

// minioImage builds an image of the pinned MinIO binary (bin/, make
// minio) for the compose file's MinIO service, removed when the test
// ends: FROM scratch, the binary, /bin/sh and /bin/mkdir (the service
// creates its bucket with them, as in MinIO's own image) and the
// libraries the three link, as ldd lists them.
func minioImage(t *testing.T) string {
	t.Helper()
	bin, err := minioproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	mkdir, err := exec.LookPath("mkdir")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"usr/bin/minio": bin, "bin/sh": sh, "bin/mkdir": mkdir}
	for _, b := range []string{bin, sh, mkdir} {
		for _, lib := range sharedLibraries(t, b) {
			files[strings.TrimPrefix(lib, "/")] = lib
		}
	}
	dir := t.TempDir()
	writeRootfs(t, filepath.Join(dir, "rootfs.tar"), files, []string{"tmp", "data"})
	containerfile := "FROM scratch\nADD rootfs.tar /\nENV PATH=/usr/bin:/bin\nENTRYPOINT [\"/usr/bin/minio\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Containerfile"), []byte(containerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("localhost/flightns-test-minio:%s", strings.TrimPrefix(name(t, "minio"), "fns-"))
	podman(t, "build", "--quiet", "--network=none", "-t", tag, "-f", filepath.Join(dir, "Containerfile"), dir)
	t.Cleanup(func() { _, _ = podmanOut(context.Background(), "rmi", "--force", tag) })
	return tag
}

// sharedLibraries lists what ldd says bin links (the loader included).
func sharedLibraries(t *testing.T, bin string) []string {
	t.Helper()
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") {
			return nil
		}
		t.Fatalf("ldd %s: %v\n%s", bin, err, out)
	}
	var libs []string
	for _, m := range regexp.MustCompile(`(/\S+) \(0x[0-9a-f]+\)`).FindAllStringSubmatch(string(out), -1) {
		libs = append(libs, m[1])
	}
	return libs
}

// writeRootfs writes a tar of files (path in the image: path here, its
// content followed through symbolic links) and empty world-writable
// directories dirs, every entry owned by root.
func writeRootfs(t *testing.T, path string, files map[string]string, dirs []string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	made := map[string]bool{}
	mkdirs := func(d string, mode int64) {
		var parts []string
		for _, p := range strings.Split(d, "/") {
			parts = append(parts, p)
			if p := strings.Join(parts, "/"); !made[p] {
				made[p] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, d := range dirs {
		mkdirs(d, 0o1777)
	}
	for _, in := range slices.Sorted(maps.Keys(files)) {
		mkdirs(filepath.Dir(in), 0o755)
		b, err := os.ReadFile(files[in])
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: in, Mode: 0o755, Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// removeProject removes what podman-compose down leaves of a project:
// its network always (podman-compose 1.0.3 removes none), and a container
// or volume a restart raced with.
func removeProject(t *testing.T, project string) {
	t.Helper()
	label := "label=io.podman.compose.project=" + project
	for _, kind := range []string{"container", "volume", "network"} {
		out, err := podmanOut(context.Background(), kind, "ls", "--quiet", "--filter", label)
		if kind == "container" {
			out, err = podmanOut(context.Background(), "ps", "--all", "--quiet", "--filter", label)
		}
		if err != nil {
			t.Errorf("podman %s ls: %v: %s", kind, err, out)
			continue
		}
		for _, id := range strings.Fields(out) {
			if kind != "network" {
				t.Logf("podman-compose down left %s %s", kind, id)
			}
			if out, err := podmanOut(context.Background(), kind, "rm", "--force", id); err != nil {
				t.Errorf("podman %s rm %s: %v: %s", kind, id, err, out)
			}
		}
	}
}

// lanceDBDir is interop/lancedb, failing the test when LanceDB is not
// installed there.
func lanceDBDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repo, "interop", "lancedb")
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("LanceDB's scripts need Node.js (node on PATH): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lancedb", "lancedb", "package.json")); err != nil {
		t.Fatalf("LanceDB is not installed: run `make lancedb`: %v", err)
	}
	return dir
}

// runLanceDB runs a script of dir with env added to the test's and
// decodes the last line it prints into out.
func runLanceDB(t *testing.T, dir string, env []string, out any, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if err != nil || json.Unmarshal([]byte(lines[len(lines)-1]), out) != nil {
		t.Fatalf("node %s %v: %v\nstdout: %s\nstderr: %s", script, args, err, stdout, stderr.String())
	}
}

// getText GETs url with header and returns the body of a 200.
func getText(t *testing.T, url string, header http.Header) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v: %.300s", url, resp.Status, err, b)
	}
	return string(b)
}

//go:build deploy

package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// image is the flightns image the tests run (loaded from archive), and
// archive the OCI archive scripts/build-image.sh wrote.
var image, archive string

// repo is the repository's root (the tests run in tests/deploy).
var repo = func() string {
	d, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	return d
}()

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "flightns-deploy-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	// A tag of this run's own: test runs may share the machine's podman
	// storage.
	image, archive = fmt.Sprintf("localhost/flightns:deploy-test-%d", os.Getpid()), filepath.Join(dir, "flightns-image.tar")
	defer func() { _, _ = podmanOut(context.Background(), "rmi", "--force", image) }()
	build := exec.Command(filepath.Join(repo, "scripts", "build-image.sh"))
	build.Dir = repo
	build.Env = append(podmanEnv(), "IMAGE="+image, "ARCHIVE="+archive)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 0, fmt.Errorf("make image: %w", err)
	}
	// Run what the archive holds, not what the build left in storage.
	if out, err := podmanOut(context.Background(), "rmi", "--force", image); err != nil {
		return 0, fmt.Errorf("podman rmi: %w: %s", err, out)
	}
	if out, err := podmanOut(context.Background(), "load", "--quiet", "--input", archive); err != nil {
		return 0, fmt.Errorf("podman load: %w: %s", err, out)
	}
	return m.Run(), nil
}

// podmanEnv is the environment of every podman command: this machine's
// containers.conf (runc, cgroupfs) unless one is set.
func podmanEnv() []string {
	env := os.Environ()
	if os.Getenv("CONTAINERS_CONF") == "" {
		env = append(env, "CONTAINERS_CONF="+filepath.Join(repo, "deploy", "image", "containers.conf"))
	}
	return env
}

// podmanOut runs podman with args and returns its output (stdout and
// stderr together).
func podmanOut(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Env = podmanEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// podman runs podman with args and fails the test if it fails.
func podman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := podmanOut(context.Background(), args...)
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// name is a container (or volume, or pod) name unique to the test, removed
// when it ends by remove.
func name(t *testing.T, what string) string {
	r := strings.NewReplacer("/", "-", " ", "-")
	return strings.ToLower(fmt.Sprintf("fns-%s-%s-%d", r.Replace(t.Name()), what, time.Now().UnixNano()%1e6))
}

// freePort is a free TCP port on the loopback interface.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHTTP waits until GET url answers 200, and fails the test with the
// last answer after within.
func waitHTTP(t *testing.T, url string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready after %v: %s", url, within, last)
}

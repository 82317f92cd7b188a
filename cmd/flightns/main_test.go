package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func TestVersionHelpAndUnknownCommands(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"version"}, 0, "flightns dev (go1.", ""},
		{[]string{"help"}, 0, "flightns serve [flags]", ""},
		{nil, 2, "", "Usage:"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"serve", "--help"}, 0, "", "-redis"},
		{[]string{"serve", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
			t.Errorf("flightns %v: code %d, stdout %q, stderr %q", c.args, code, out.String(), errb.String())
		}
	}
}

func TestServeWithNoFlagsStartsAndStopsCleanly(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "flightns")
	if out, err := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := t.TempDir()
	cmd := exec.Command(bin, "serve")
	cmd.Dir = work
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log strings.Builder
	redisAddr := ""
	timeout := time.After(30 * time.Second)
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("flightns exited before it was ready:\n%s", log.String())
			}
			log.WriteString(l + "\n")
			if m := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(l); m != nil {
				redisAddr = m[1]
			}
			ready = strings.Contains(l, "flightns ready")
		case <-timeout:
			t.Fatalf("flightns not ready after 30s:\n%s", log.String())
		}
	}
	if redisAddr == "" {
		t.Fatalf("no private redis address in the log:\n%s", log.String())
	}
	for _, p := range []string{"flightns-data/root", "flightns-data/redis/appendonlydir"} {
		if _, err := os.Stat(filepath.Join(work, p)); err != nil {
			t.Errorf("%s missing: %v", p, err)
		}
	}
	// REST on :31338 creates a namespace; Flight SQL on :31337 sees it.
	resp, err := http.Post("http://127.0.0.1:31338/v1/namespace/demo/create", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("REST create namespace: %s", resp.Status)
	}
	fc, err := flightsql.NewClient("127.0.0.1:31337", nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fc.Close() }()
	ctx := context.Background()
	info, err := fc.Execute(ctx, "SELECT object_id FROM namespaces")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := fc.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0)
		for i := 0; i < col.Len(); i++ {
			names = append(names, col.ValueStr(i))
		}
	}
	rdr.Release()
	if len(names) != 1 || names[0] != "demo" {
		t.Fatalf("Flight SQL sees namespaces %v, want [demo]", names)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines {
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("flightns exited with %v after SIGTERM", err)
	}
	if c, err := net.DialTimeout("tcp", redisAddr, time.Second); err == nil {
		_ = c.Close()
		t.Fatalf("the private redis-server at %s outlived flightns", redisAddr)
	}
}

func TestBenchWritesAJSONReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--scenario", "objstore-put", "--clients", "2", "--duration", "200ms", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Scenario, Backend string
			Ops               int64
			OpsPerSec         float64 `json:"ops_per_sec"`
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, b)
	}
	backends := map[string]bool{}
	for _, r := range rep.Results {
		if r.Scenario != "objstore-put" || r.Ops == 0 || r.OpsPerSec <= 0 {
			t.Errorf("result %+v measured nothing", r)
		}
		backends[r.Backend] = true
	}
	if len(backends) != 3 {
		t.Errorf("backends measured: %v, want file, mem and s3", backends)
	}
	if code := run(context.Background(), []string{"bench", "--scenario", "nope", "--duration", "1ms", "--out", "-"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), `unknown scenario "nope"`) {
		t.Errorf("unknown scenario: code %d, stderr %q", code, stderr.String())
	}
}

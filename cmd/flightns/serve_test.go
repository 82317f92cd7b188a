package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/flightns/flightns/internal/testutil/flighttest"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/redisclaim"
)

func TestServeWithNoFlagsServesFlightRESTMetricsAndStopsCleanlyOnSIGTERM(t *testing.T) {
	work := t.TempDir()
	s := startServer(t, work, nil, noFlags)
	for _, p := range []string{"flightns-data/root", "flightns-data/redis/appendonlydir"} {
		if _, err := os.Stat(filepath.Join(work, p)); err != nil {
			t.Errorf("%s missing: %v", p, err)
		}
	}
	if s.redisPid == 0 || !alive(s.redisPid) {
		t.Fatalf("no private redis-server running (pid %d)", s.redisPid)
	}
	// The private Redis listens on a Unix socket only: no port of it can
	// collide with the server's listeners.
	b, err := os.ReadFile(filepath.Join(work, "flightns-data/redis/redis.url"))
	if err != nil || !strings.HasPrefix(string(b), "unix:///") {
		t.Fatalf("redis.url %q (%v), want a unix:// URL", b, err)
	}
	if fi, err := os.Stat(strings.TrimSpace(strings.TrimPrefix(string(b), "unix://"))); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the private Redis's socket: %v %v", fi, err)
	}
	if n := tcpListeners(t, s.redisPid); n != 0 {
		t.Fatalf("the private redis-server listens on %d TCP sockets, want none", n)
	}
	// Its children: the private redis-server and the SQL worker.
	worker := 0
	for deadline := time.Now().Add(20 * time.Second); worker == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		worker = sqlWorkerPid(s.cmd.Process.Pid)
	}
	if kids := children(s.cmd.Process.Pid); len(kids) != 2 || !slices.Contains(kids, s.redisPid) || !slices.Contains(kids, worker) {
		t.Fatalf("children of flightns: %v, want the private redis-server %d and the SQL worker %d", kids, s.redisPid, worker)
	}
	// The web console, on its default port, is what serve printed.
	if out := s.Stdout(); !strings.Contains(out, "the web console is at http://127.0.0.1:31340/") {
		t.Fatalf("serve printed %q, not the console's URL", out)
	}
	if code, page := httpGet(t, "http://127.0.0.1:31340/"); code != http.StatusOK || !strings.Contains(page, "<script src=") {
		t.Fatalf("the console's page: %d %.200s", code, page)
	}
	// REST creates a namespace; Flight SQL sees it.
	mustREST(t, "127.0.0.1:31338", "/v1/namespace/demo/create", `{}`, nil)
	if names := flighttest.Strings(t, "127.0.0.1:31337", "SELECT object_id FROM namespaces"); len(names) != 1 || names[0] != "demo" {
		t.Fatalf("Flight SQL sees namespaces %v, want [demo]", names)
	}
	// A Lance operation as a Flight action is labelled by its name.
	fc, err := flightsql.NewClient("127.0.0.1:31337", nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := fc.Client.DoAction(context.Background(), &flight.Action{Type: "CreateNamespace", Body: []byte(`{"id":["viaflight"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("CreateNamespace action: %v", err)
			}
			break
		}
	}
	_ = fc.Close()
	// Health: HTTP and gRPC (on the Flight port, no credentials).
	if code, body := httpGet(t, "http://127.0.0.1:31339/healthz"); code != 200 {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, body := httpGet(t, "http://127.0.0.1:31339/readyz"); code != 200 || !strings.Contains(body, "ready") {
		t.Errorf("/readyz: %d %s", code, body)
	}
	conn, err := grpc.NewClient("127.0.0.1:31337", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	hr, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	_ = conn.Close()
	if err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health: %v %v", hr, err)
	}
	// Metrics name what happened.
	code, metrics := httpGet(t, "http://127.0.0.1:31339/metrics")
	for _, want := range []string{
		`flightns_requests_total{code="OK",op="CreateNamespace",surface="rest"} 1`,
		`flightns_requests_total{code="OK",op="DoGet",surface="flight"} 1`,
		`flightns_requests_total{code="OK",op="CreateNamespace",surface="flight"} 1`,
		`flightns_ready 1`,
		`flightns_materialize_duration_seconds_count`,
		`flightns_query_duration_seconds_count`,
		`go_goroutines`,
	} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q (HTTP %d)", want, code)
		}
	}
	s.stop()
	waitGone(t, s.redisPid, "the private redis-server")
	waitGone(t, worker, "the SQL worker")
	if !strings.Contains(s.Log(), "private redis-server stopped") {
		t.Errorf("no orderly stop of the private redis-server in the log")
	}
}

func TestServeHelpExplainsEveryFlag(t *testing.T) {
	// --help names every default and the URL forms.
	code, _, stderr := runCLI(t, t.TempDir(), "serve", "--help")
	for _, want := range []string{`127.0.0.1:31337`, `127.0.0.1:31338`, `127.0.0.1:31339`, `./flightns-data`, "redis+sentinel://", "redis+cluster://", "AWS_ACCESS_KEY_ID"} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("serve --help (exit %d) lacks %q", code, want)
		}
	}
}

func TestACommitInFlightAtSIGTERMCompletes(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, []string{"FLIGHTNS_DEBUG_STEP_DELAY=claimed=1500ms"})
	loc := declareTable(t, s.rest, "ns", "t")
	n := s.lineCount()
	result := make(chan int, 1)
	go func() { result <- commitVersion(t, s.rest, "ns$t", loc, 1) }()
	s.waitLogAfter(n, "commit held at a protocol step", 30*time.Second)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := <-result; code != http.StatusOK {
		t.Fatalf("the commit in flight at SIGTERM answered HTTP %d", code)
	}
	s.wait()
	if s.exitErr != nil {
		t.Fatalf("exit after SIGTERM: %v", s.exitErr)
	}
	waitGone(t, s.redisPid, "the private redis-server")

	s2 := startServer(t, work, nil)
	var d struct{ Version struct{ Version int64 } }
	mustREST(t, s2.rest, "/v1/table/ns$t/version/describe", `{}`, &d)
	if d.Version.Version != 1 {
		t.Fatalf("after restart the table's latest version is %d, want 1", d.Version.Version)
	}
	s2.stop()
}

func TestKill9ThenRestartLosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, nil)
	loc := declareTable(t, s.rest, "k", "t")
	const versions, spaces = 5, 10
	for v := uint64(1); v <= versions; v++ {
		if code := commitVersion(t, s.rest, "k$t", loc, v); code != http.StatusOK {
			t.Fatalf("commit %d: HTTP %d", v, code)
		}
	}
	for i := range spaces {
		mustREST(t, s.rest, fmt.Sprintf("/v1/namespace/k$n%d/create", i), `{}`, nil)
	}
	// A second server on the same data directory is refused: one private
	// Redis per directory.
	if code, _, errs := runCLI(t, work, "serve", "--flight-addr", "127.0.0.1:0", "--rest-addr", "127.0.0.1:0", "--metrics-addr", "", "--console-addr", ""); code != 1 ||
		!strings.Contains(errs, "another flightns process uses the data directory") {
		t.Errorf("a second server on one data directory: exit %d, %s", code, errs)
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.wait()
	// The private Redis dies with its parent (parent-death signal).
	waitGone(t, s.redisPid, "the private redis-server of a killed flightns")

	s2 := startServer(t, work, nil)
	var d struct{ Version struct{ Version int64 } }
	mustREST(t, s2.rest, "/v1/table/k$t/version/describe", `{}`, &d)
	if d.Version.Version != versions {
		t.Errorf("after kill -9 and restart the latest version is %d, want %d", d.Version.Version, versions)
	}
	var l struct{ Namespaces []string }
	mustREST(t, s2.rest, "/v1/namespace/k/list", `{}`, &l)
	if len(l.Namespaces) != spaces {
		t.Errorf("after kill -9 and restart namespaces %v, want %d", l.Namespaces, spaces)
	}
	names := flighttest.Strings(t, s2.flight, "SELECT object_id FROM namespaces WHERE object_id LIKE 'k$n%'")
	if len(names) != spaces {
		t.Errorf("Flight SQL sees %d of the %d namespaces", len(names), spaces)
	}
	// Committing goes on where it stopped.
	if code := commitVersion(t, s2.rest, "k$t", loc, versions+1); code != http.StatusOK {
		t.Errorf("commit after restart: HTTP %d", code)
	}
	s2.stop()
}

func TestPrivateRedisKilledIsRestartedAndServingResumes(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, nil)
	loc := declareTable(t, s.rest, "r", "t")
	if code := commitVersion(t, s.rest, "r$t", loc, 1); code != http.StatusOK {
		t.Fatalf("commit: HTTP %d", code)
	}
	n := s.lineCount()
	if err := syscall.Kill(s.redisPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Not ready while it is down: the supervisor waits before restarting.
	sawNotReady := false
	deadline := time.Now().Add(30 * time.Second)
	for !sawNotReady && time.Now().Before(deadline) {
		if code, _ := httpGet(t, "http://"+s.metrics+"/readyz"); code == http.StatusServiceUnavailable {
			sawNotReady = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawNotReady {
		t.Fatal("/readyz never answered 503 while the private Redis was down")
	}
	s.waitLogAfter(n, "private redis-server restarted", 30*time.Second)
	s.waitLogAfter(n, "flightns is ready again", 30*time.Second)
	if code, body := httpGet(t, "http://"+s.metrics+"/readyz"); code != 200 {
		t.Fatalf("/readyz after the restart: %d %s", code, body)
	}
	// Nothing acknowledged was lost (append-only file, fsync always), and
	// commits go on.
	var d struct{ Version struct{ Version int64 } }
	mustREST(t, s.rest, "/v1/table/r$t/version/describe", `{}`, &d)
	if d.Version.Version != 1 {
		t.Errorf("latest version after the Redis restart: %d, want 1", d.Version.Version)
	}
	if code := commitVersion(t, s.rest, "r$t", loc, 2); code != http.StatusOK {
		t.Errorf("commit after the Redis restart: HTTP %d", code)
	}
	if _, m := httpGet(t, "http://"+s.metrics+"/metrics"); !strings.Contains(m, "flightns_private_redis_restarts_total 1") {
		t.Errorf("/metrics does not count the restart")
	}
	// The Redis client's own complaints while Redis was down went through
	// the structured log, not as bare lines of their own.
	for _, line := range strings.Split(s.Log(), "\n") {
		if strings.HasPrefix(line, "redis: ") {
			t.Errorf("an unstructured line of the Redis client: %s", line)
		}
	}
	s.stop()
}

func TestServeWithoutRedisServerNamesThePackage(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--flight-addr", "", "--rest-addr", "", "--metrics-addr", "", "--console-addr", "")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "apt-get install -y redis-server") {
		t.Fatalf("serve without redis-server: %v\n%s", err, out)
	}
}

func TestASecondSignalExitsAtOnceWith130(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, []string{"FLIGHTNS_DEBUG_STEP_DELAY=claimed=10m"})
	loc := declareTable(t, s.rest, "s", "t")
	n := s.lineCount()
	go func() { _ = commitVersionNoFail(s.rest, "s$t", loc) }()
	s.waitLogAfter(n, "commit held at a protocol step", 30*time.Second)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		if sig == syscall.SIGINT {
			s.waitLogAfter(n, "flightns stopping", 30*time.Second)
		}
		if err := s.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	s.wait()
	var ee *exec.ExitError
	if !errors.As(s.exitErr, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit after two signals: %v, want code 130", s.exitErr)
	}
	waitGone(t, s.redisPid, "the private redis-server")
}

func TestAuthFileProtectsFlightAndRESTButNotHealth(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	authFile := filepath.Join(work, "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"tokens":[{"token":"token-write-1","name":"etl","role":"write"}],"users":[{"name":"ana","password":"pw","role":"read"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, work, nil, "--auth-file", authFile)
	conn, err := grpc.NewClient(s.flight, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	hr, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	_ = conn.Close()
	if err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health without credentials: %v %v", hr, err)
	}
	cli := func(args ...string) (int, string, string) {
		return runCLI(t, work, append(args, "--flight", s.flight, "--rest", "http://"+s.rest)...)
	}
	if code, _, errs := cli("ns", "create", "x"); code != 1 || !strings.Contains(errs, "code 16") {
		t.Errorf("ns create without credentials: exit %d, %s", code, errs)
	}
	if code, _, errs := cli("ns", "create", "x", "--token", "token-write-1"); code != 0 {
		t.Errorf("ns create with a write token: exit %d, %s", code, errs)
	}
	if code, _, errs := cli("ns", "create", "y", "--user", "ana", "--password", "pw"); code != 1 || !strings.Contains(errs, "code 15") {
		t.Errorf("ns create as a reader: exit %d, %s", code, errs)
	}
	if code, _, _ := cli("query", "SELECT 1"); code != 1 {
		t.Errorf("query without credentials: exit %d", code)
	}
	if code, out, errs := cli("query", "--user", "ana", "--password", "pw", "SELECT object_id FROM namespaces"); code != 0 || !strings.Contains(out, "x") {
		t.Errorf("query as ana: exit %d, %s %s", code, out, errs)
	}
	if code, out, errs := cli("query", "--token", "token-write-1", "--format", "csv", "SELECT object_id FROM namespaces"); code != 0 || !strings.Contains(out, "x") {
		t.Errorf("query with a token: exit %d, %s %s", code, out, errs)
	}
	if code, _ := httpGet(t, "http://"+s.metrics+"/readyz"); code != 200 {
		t.Errorf("/readyz needs no credentials: %d", code)
	}
	s.stop()
}

// An auth file that names nobody stops serve before it listens, with the
// file named; a good one is logged with how many principals it holds, and
// no auth file at all is logged as authentication off.
func TestServeRefusesAnAuthFileThatNamesNobody(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"empty": "", "nobody": "{}", "a typo": `{"token": [{"token": "abcdefgh12", "name": "r", "role": "read"}]}`} {
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI(t, dir, "serve", "--auth-file", f, "--flight-addr", "", "--rest-addr", "", "--metrics-addr", "", "--console-addr", "")
		if code == 0 || !strings.Contains(stderr, f) || !strings.Contains(stderr, "--auth-file") {
			t.Errorf("%s: exit %d, stderr %s", name, code, stderr)
		}
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"tokens": [{"token": "abcdefgh12", "name": "r", "role": "read"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, t.TempDir(), nil, "--auth-file", good)
	if line := s.waitLog("authentication on", 10*time.Second); !strings.Contains(line, "tokens=1") {
		t.Errorf("the log does not count the principals:\n%s", s.Log())
	}
	s.stop()
	open := startServer(t, t.TempDir(), nil)
	open.waitLog("authentication off", 10*time.Second)
	open.stop()
}

// A second root on the same Redis catalog, or a root that belongs to
// another catalog, stops serve with both named and exit 1; the first
// server goes on serving.
func TestServeRefusesASecondRootOnTheSameCatalog(t *testing.T) {
	r := redistest.Start(t)
	first := startServer(t, t.TempDir(), nil, "--redis", r.URL())
	mustREST(t, first.rest, "/v1/namespace/ns/create", `{}`, nil)
	other := t.TempDir()
	code, _, stderr := runCLI(t, other, "serve", "--redis", r.URL(), "--flight-addr", "", "--rest-addr", "", "--metrics-addr", "", "--console-addr", "")
	// The log quotes the error: its quotes are escaped.
	if code != 1 || !strings.Contains(stderr, `catalog \"flightns\" in this Redis belongs to the root file://`+filepath.Join(first.work, "flightns-data", "root")) ||
		!strings.Contains(stderr, filepath.Join(other, "flightns-data", "root")) {
		t.Fatalf("a second root: exit %d, stderr %s", code, stderr)
	}
	// The first root, under another catalog name, is refused too.
	code, _, stderr = runCLI(t, first.work, "serve", "--redis", r.URL(), "--catalog", "else", "--flight-addr", "", "--rest-addr", "", "--metrics-addr", "", "--console-addr", "")
	if code != 1 || !strings.Contains(stderr, `belongs to catalog \"flightns\", not \"else\"`) {
		t.Fatalf("a root of another catalog: exit %d, stderr %s", code, stderr)
	}
	mustREST(t, first.rest, "/v1/namespace/ns2/create", `{}`, nil)
	first.stop()
}

// serve binds its listeners before it starts its private Redis, so that
// the Redis (on a free port of its own) can never take one of them: a
// taken --flight-addr stops serve before any redis-server starts.
func TestServeBindsItsListenersBeforeItsPrivateRedis(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	code, _, stderr := runCLI(t, t.TempDir(), "serve", "--flight-addr", l.Addr().String(), "--rest-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--console-addr", "")
	if code != 1 || !strings.Contains(stderr, "--flight-addr") || !strings.Contains(stderr, "address already in use") {
		t.Fatalf("serve on a taken --flight-addr: exit %d, stderr %s", code, stderr)
	}
	if strings.Contains(stderr, "private redis-server started") {
		t.Fatalf("the private Redis started before the listeners were bound:\n%s", stderr)
	}
}

// tcpListeners counts the listening TCP sockets (IPv4 and IPv6) that
// process pid holds open.
func tcpListeners(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] { // 0A: LISTEN
				n++
			}
		}
	}
	return n
}

// The step-delay seam names a real step and a positive duration, or the
// server refuses to start: a typo must not silently test nothing.
func TestTheStepDelaySeamRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, bad := range []string{"claim=20ms", "claimed", "claimed=", "claimed=-1s", "claimed=soon", "=20ms"} {
		t.Setenv("FLIGHTNS_DEBUG_STEP_DELAY", bad)
		if f, err := debugStepDelay(slog.New(slog.DiscardHandler)); err == nil || f != nil {
			t.Errorf("FLIGHTNS_DEBUG_STEP_DELAY=%q accepted", bad)
		}
	}
	t.Setenv("FLIGHTNS_DEBUG_STEP_DELAY", "flipping=1ms")
	f, err := debugStepDelay(slog.New(slog.DiscardHandler))
	if err != nil || f == nil {
		t.Fatalf("flipping=1ms: %v", err)
	}
	start := time.Now()
	_ = f(context.Background(), redisclaim.StepClaimed, "t", 1)
	_ = f(context.Background(), redisclaim.StepFlipping, "t", 1)
	if time.Since(start) < time.Millisecond {
		t.Error("the commit was not held at flipping")
	}
}

// With FLIGHTNS_CPU_PROFILE_DIR set, serve and its SQL worker each write
// a CPU profile and an allocation profile of their run there as they
// stop.
func TestServeWritesCPUProfilesWhenAsked(t *testing.T) {
	work, dir := t.TempDir(), t.TempDir()
	s := startServer(t, work, []string{profileDirEnv + "=" + dir})
	worker := 0
	for deadline := time.Now().Add(20 * time.Second); worker == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		worker = sqlWorkerPid(s.cmd.Process.Pid)
	}
	if worker == 0 {
		t.Fatal("no SQL worker started")
	}
	// A query: the worker is serving (past its start, where a signal
	// would still kill it outright).
	flighttest.Strings(t, s.flight, "SELECT object_id FROM namespaces")
	pid := s.cmd.Process.Pid
	s.stop()
	waitGone(t, worker, "the SQL worker")
	for _, name := range []string{fmt.Sprintf("serve-%d.pprof", pid), fmt.Sprintf("sql-worker-%d.pprof", worker),
		fmt.Sprintf("serve-%d.allocs.pprof", pid), fmt.Sprintf("sql-worker-%d.allocs.pprof", worker)} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // a profile is gzipped
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
}

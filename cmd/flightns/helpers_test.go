package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// binary is the flightns binary, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "flightns-cmd-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "flightns")
	if out, err := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", binary, ".").CombinedOutput(); err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// server is a flightns serve subprocess.
type serverProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	work string // its working directory (./flightns-data lives here)

	mu     sync.Mutex
	log    strings.Builder
	stdout strings.Builder
	lines  []string
	waitCh chan struct{} // closed when the log ends (the process exited)
	newLn  chan struct{} // pulsed on every line

	flight, rest, metrics, console string // listen addresses from the log
	redisPid                       int
	exitErr                        error
	exited                         chan struct{}
}

var (
	// text (addr=…) and JSON ("addr":"…") log lines
	reAddr = regexp.MustCompile(`"?addr"?[=:]"?([0-9.]+:\d+)`)
	rePid  = regexp.MustCompile(`"?pid"?[=:](\d+)`)
)

// startServer runs `flightns serve args...` in work with env added, and
// waits for "flightns ready". Ports are free ones unless noFlags, which
// runs `flightns serve` exactly, on its default ports.
func startServer(t *testing.T, work string, env []string, args ...string) *serverProc {
	t.Helper()
	full := append([]string{"serve"}, args...)
	if len(args) == 1 && args[0] == noFlags {
		full = []string{"serve"}
	} else if !hasFlag(args, "--flight-addr") {
		full = append(full, "--flight-addr", "127.0.0.1:0", "--rest-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	}
	if len(args) != 1 || args[0] != noFlags {
		if !hasFlag(args, "--console-addr") {
			full = append(full, "--console-addr", "127.0.0.1:0")
		}
	}
	cmd := exec.Command(binary, full...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &serverProc{t: t, cmd: cmd, work: work, waitCh: make(chan struct{}), newLn: make(chan struct{}, 1), exited: make(chan struct{})}
	cmd.Stdout = stdoutOf{s}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("flightns log:\n%s", s.Log())
		}
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.lines = append(s.lines, sc.Text())
			s.mu.Unlock()
			select {
			case s.newLn <- struct{}{}:
			default:
			}
		}
		close(s.waitCh)
		s.exitErr = cmd.Wait()
		close(s.exited)
	}()
	s.waitLog("flightns ready", 60*time.Second)
	s.mu.Lock()
	for _, l := range s.lines {
		addr := ""
		if m := reAddr.FindStringSubmatch(l); m != nil {
			addr = m[1]
		}
		switch {
		case strings.Contains(l, "private redis-server started"):
			s.redisPid, _ = strconv.Atoi(rePid.FindStringSubmatch(l)[1])
		case strings.Contains(l, "Flight SQL listening"):
			s.flight = addr
		case strings.Contains(l, "REST listening"):
			s.rest = addr
		case strings.Contains(l, "metrics and health listening"):
			s.metrics = addr
		case strings.Contains(l, "console listening"):
			s.console = addr
		}
	}
	s.mu.Unlock()
	return s
}

// stdoutOf collects a server's standard output.
type stdoutOf struct{ s *serverProc }

func (o stdoutOf) Write(p []byte) (int, error) {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	return o.s.stdout.Write(p)
}

// Stdout is what the server printed on its standard output.
func (s *serverProc) Stdout() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stdout.String()
}

// noFlags as startServer's only argument runs `flightns serve` alone.
const noFlags = "(no flags)"

func hasFlag(args []string, f string) bool {
	for _, a := range args {
		if a == f || strings.HasPrefix(a, f+"=") {
			return true
		}
	}
	return false
}

// Log returns everything logged so far.
func (s *serverProc) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// waitLog waits for a log line containing want (logged at any time so far)
// and returns it; a generous limit only catches hangs.
func (s *serverProc) waitLog(want string, limit time.Duration) string {
	s.t.Helper()
	return s.waitLogAfter(0, want, limit)
}

// waitLogAfter is waitLog for lines after the first n.
func (s *serverProc) waitLogAfter(n int, want string, limit time.Duration) string {
	s.t.Helper()
	deadline := time.After(limit)
	for {
		s.mu.Lock()
		for _, l := range s.lines[min(n, len(s.lines)):] {
			if strings.Contains(l, want) {
				s.mu.Unlock()
				return l
			}
		}
		s.mu.Unlock()
		select {
		case <-s.newLn:
		case <-s.waitCh:
			s.mu.Lock()
			for _, l := range s.lines[min(n, len(s.lines)):] {
				if strings.Contains(l, want) {
					s.mu.Unlock()
					return l
				}
			}
			s.mu.Unlock()
			s.t.Fatalf("flightns exited before logging %q:\n%s", want, s.Log())
		case <-deadline:
			s.t.Fatalf("flightns did not log %q within %v:\n%s", want, limit, s.Log())
		}
	}
}

// lineCount is the number of log lines so far.
func (s *serverProc) lineCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lines)
}

// stop sends SIGTERM and waits for a clean exit.
func (s *serverProc) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	s.wait()
	if s.exitErr != nil {
		s.t.Fatalf("flightns exited with %v after SIGTERM:\n%s", s.exitErr, s.Log())
	}
}

func (s *serverProc) wait() {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		s.t.Fatalf("flightns did not exit:\n%s", s.Log())
	}
}

// children returns the pids whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces: split after ')'.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 {
			if pp, _ := strconv.Atoi(f[1]); pp == pid {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	rest := string(b[bytes.LastIndexByte(b, ')')+1:])
	f := strings.Fields(rest)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// waitGone waits until pid no longer runs (a kill is asynchronous).
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restCall posts body to the REST surface and decodes the reply into out
// (when not nil); it returns the HTTP status.
func restCall(t *testing.T, addr, path, body string, out any) int {
	t.Helper()
	resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, b)
		}
	}
	if resp.StatusCode != http.StatusOK {
		t.Logf("POST %s: %s %s", path, resp.Status, b)
	}
	return resp.StatusCode
}

// mustREST is restCall that requires 200.
func mustREST(t *testing.T, addr, path, body string, out any) {
	t.Helper()
	if code := restCall(t, addr, path, body, out); code != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d", path, code)
	}
}

// stageVersion declares nothing: it writes a staging manifest of version v
// into the table directory at location (a file:// URI) and returns its URI.
func stageVersion(t *testing.T, location string, v uint64, content string) string {
	t.Helper()
	dir := strings.TrimPrefix(location, "file://")
	name := fmt.Sprintf("%020d.manifest-%s", uint64(math.MaxUint64)-v, uuid.NewString())
	p := filepath.Join(dir, "_versions", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

// declareTable declares ns$name (creating ns) and returns its location.
func declareTable(t *testing.T, addr, ns, name string) string {
	t.Helper()
	if code := restCall(t, addr, "/v1/namespace/"+ns+"/create", `{"mode":"ExistOk"}`, nil); code != http.StatusOK {
		t.Fatalf("create namespace %s: HTTP %d", ns, code)
	}
	var d struct{ Location string }
	mustREST(t, addr, "/v1/table/"+ns+"$"+name+"/declare", `{}`, &d)
	return d.Location
}

// commitVersion stages and commits version v of table id at location.
func commitVersion(t *testing.T, addr, id, location string, v uint64) int {
	t.Helper()
	return commitContent(t, addr, id, location, v, fmt.Sprintf("manifest %s v%d", id, v))
}

// commitContent is commitVersion of a manifest with content.
func commitContent(t *testing.T, addr, id, location string, v uint64, content string) int {
	t.Helper()
	p := stageVersion(t, location, v, content)
	body := fmt.Sprintf(`{"version":%d,"manifest_path":%q,"manifest_size":%d}`, v, p, len(content))
	return restCall(t, addr, "/v1/table/"+id+"/version/create", body, nil)
}

// httpGet returns the status and body of GET url.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// adminCLI runs "flightns admin args..." in work, fails the test unless it
// exits with want, and returns its stdout.
func adminCLI(t *testing.T, work string) func(want int, args ...string) string {
	return func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCLI(t, work, append([]string{"admin"}, args...)...)
		if code != want {
			t.Fatalf("flightns admin %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errs)
		}
		return out
	}
}

// runCLI runs the binary with args in dir and returns its exit code,
// stdout and stderr.
func runCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// commitVersionNoFail commits version 1 of id without failing the test
// (for a request that may never be answered).
func commitVersionNoFail(addr, id, location string) error {
	dir := strings.TrimPrefix(location, "file://")
	p := filepath.Join(dir, "_versions", fmt.Sprintf("%020d.manifest-%s", uint64(math.MaxUint64)-1, uuid.NewString()))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte("m"), 0o644); err != nil {
		return err
	}
	body := fmt.Sprintf(`{"version":1,"manifest_path":%q,"manifest_size":1}`, "file://"+p)
	resp, err := http.Post("http://"+addr+"/v1/table/"+id+"/version/create", "application/json", strings.NewReader(body))
	if err == nil {
		_ = resp.Body.Close()
	}
	return err
}

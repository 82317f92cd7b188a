package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/flightns/flightns/internal/grpcstatus"
)

var long = flag.Bool("long", false, "run the long form of the reliability suite (make reliability)")

// binary is the flightns binary, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("FLIGHTNS_RELIABILITY") == "long" {
		*long = true
	}
	dir, err := os.MkdirTemp("", "flightns-reliability")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "flightns")
	build := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", binary, "../../cmd/flightns")
	if out, err := build.CombinedOutput(); err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		_, _ = fmt.Fprintln(os.Stderr, "redis-server is missing: the reliability suite needs it (apt-get install -y redis-server)")
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// pick returns short in go test and long under make reliability.
func pick[T any](short, longV T) T {
	if *long {
		return longV
	}
	return short
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// server is a `flightns serve` subprocess on fixed loopback ports, so a
// restart on the same data keeps its addresses.
type server struct {
	t                     testing.TB
	args                  []string
	env                   []string
	work                  string
	flight, rest, metrics string

	mu      sync.Mutex
	cmd     *exec.Cmd
	log     *bytes.Buffer
	exited  chan struct{}
	readyCh chan struct{}
	// launches counts the processes started (starts).
	launches atomic.Int32
}

// starts is how many server processes were started so far.
func (s *server) starts() int { return int(s.launches.Load()) }

// startServer runs `flightns serve args...` (plus its listen addresses)
// and waits until it logs "flightns ready".
func startServer(t testing.TB, env []string, args ...string) *server {
	t.Helper()
	s := &server{t: t, args: args, env: env, work: t.TempDir()}
	// A free port can be taken by another process before the server binds
	// it: try fresh ports a few times.
	for try := 0; ; try++ {
		s.flight, s.rest, s.metrics = freePort(t), freePort(t), freePort(t)
		if s.tryStart() || try == 2 {
			break
		}
	}
	s.start()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("flightns log (last start):\n%s", tail(s.Log(), 8000))
		}
	})
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// tryStart starts the server unless a listen address is taken; it reports
// whether the server runs (start again to see any other failure).
func (s *server) tryStart() bool {
	s.t.Helper()
	s.launch()
	select {
	case <-s.readyCh:
		return true
	case <-s.exited:
		return !strings.Contains(s.Log(), "address already in use")
	case <-time.After(90 * time.Second):
		return true
	}
}

func (s *server) start() {
	s.t.Helper()
	if s.cmd != nil {
		select {
		case <-s.exited:
		default: // launched by tryStart, still running
			s.waitStarted()
			return
		}
	}
	s.launch()
	s.waitStarted()
}

func (s *server) launch() {
	s.t.Helper()
	full := append([]string{"serve", "--flight-addr", s.flight, "--rest-addr", s.rest, "--metrics-addr", s.metrics, "--console-addr", ""}, s.args...)
	cmd := exec.Command(binary, full...)
	cmd.Dir = s.work
	cmd.Env = append(os.Environ(), s.env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.launches.Add(1)
	log := &bytes.Buffer{}
	exited, ready := make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.cmd, s.log, s.exited, s.readyCh = cmd, log, exited, ready
	s.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := false
		for sc.Scan() {
			s.mu.Lock()
			log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if !once && strings.Contains(sc.Text(), "flightns ready") {
				once = true
				close(ready)
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
}

// waitStarted waits for the launched process to be ready.
func (s *server) waitStarted() {
	s.t.Helper()
	s.mu.Lock()
	ready, exited := s.readyCh, s.exited
	s.mu.Unlock()
	select {
	case <-ready:
	case <-exited:
		s.t.Fatalf("flightns exited before it was ready:\n%s", s.Log())
	case <-time.After(90 * time.Second):
		s.t.Fatalf("flightns not ready within 90s:\n%s", s.Log())
	}
}

// Log is what the running (or last) process logged.
func (s *server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// awaitLog waits, up to limit, until the running process logs a line
// holding text after the call; it reports whether one came.
func (s *server) awaitLog(text string, limit time.Duration) bool {
	s.mu.Lock()
	log, from := s.log, s.log.Len()
	s.mu.Unlock()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		found := s.log == log && bytes.Contains(log.Bytes()[from:], []byte(text))
		s.mu.Unlock()
		if found {
			return true
		}
	}
	return false
}

// Pid is the running process's pid.
func (s *server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		s.t.Errorf("flightns (pid %d) did not die after SIGKILL", cmd.Process.Pid)
	}
}

// restart kills the server with SIGKILL and starts it on the same data.
func (s *server) restart() {
	s.t.Helper()
	s.kill()
	s.start()
}

// readyz returns /readyz's status (0 when unreachable).
func (s *server) readyz() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.metrics+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// waitReady waits, bounded, until /readyz answers 200.
func (s *server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if s.readyz() == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/readyz not 200 within %v", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mustReady fails the test unless the server becomes ready by itself.
func (s *server) mustReady(limit time.Duration) {
	s.t.Helper()
	if err := s.waitReady(limit); err != nil {
		s.t.Fatalf("server not ready again by itself: %v\n%s", err, tail(s.Log(), 4000))
	}
}

// metric returns the first value of a Prometheus metric without labels.
func (s *server) metric(name string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.metrics+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			return strconv.ParseFloat(f[1], 64)
		}
	}
	return 0, fmt.Errorf("metric %s not found", name)
}

// restReply is one answer of the REST surface.
type restReply struct {
	Status int
	Code   int // the Lance code of an error (-1 on success)
	Body   []byte
}

type restClient struct {
	base   string
	header http.Header
	hc     *http.Client
}

func newREST(addr string) *restClient {
	return &restClient{base: "http://" + addr, header: http.Header{},
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// do sends method path with body; err is a transport error (the outcome is
// unknown unless the connection was refused).
func (c *restClient) do(ctx context.Context, method, path string, body []byte) (restReply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return restReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return restReply{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return restReply{}, err
	}
	r := restReply{Status: resp.StatusCode, Code: -1, Body: b}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Code *int `json:"code"`
		}
		if json.Unmarshal(b, &e) == nil && e.Code != nil {
			r.Code = *e.Code
		}
	}
	return r, nil
}

func (c *restClient) post(ctx context.Context, path string, v any) (restReply, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return restReply{}, err
	}
	return c.do(ctx, http.MethodPost, path, b)
}

// must posts v and requires 200, decoding the answer into out.
func (c *restClient) must(t testing.TB, path string, v any, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.post(ctx, path, v)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	if r.Status != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d %s", path, r.Status, r.Body)
	}
	if out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, r.Body)
		}
	}
}

// refused reports whether err proves the request never reached the
// server (so it had no effect).
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

// neverSent reports whether a request failed before it reached the
// server: its connection was refused (REST), or gRPC could not dial. A
// server's own answer that quotes a refused connection (its Redis's, say)
// is not one: the server may have acted before it failed, an unknown
// outcome (CI once counted a Flight batch that the server answered with
// "dial tcp …: connection refused" as never sent, while a helper later
// committed it, and the history looked illegal).
func neverSent(err error) bool {
	if err == nil {
		return false
	}
	if refused(err) {
		return true
	}
	if _, answered := grpcstatus.Code(err); answered {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "Error while dialing") && strings.Contains(msg, "connection refused")
}

// flightClient is arrow-go's Flight client, optionally with credentials.
type flightClient struct {
	flight.Client
	md metadata.MD
}

func newFlight(t testing.TB, addr string, kv ...string) *flightClient {
	t.Helper()
	c, err := flight.NewClientWithMiddleware(addr, nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20), grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &flightClient{Client: c, md: metadata.Pairs(kv...)}
}

func (c *flightClient) ctx(ctx context.Context) context.Context {
	if len(c.md) == 0 {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, c.md)
}

// action runs one Flight action and returns its one result's body.
func (c *flightClient) action(ctx context.Context, typ string, body []byte) ([]byte, error) {
	stream, err := c.DoAction(c.ctx(ctx), &flight.Action{Type: typ, Body: body})
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.Body...)
	}
}

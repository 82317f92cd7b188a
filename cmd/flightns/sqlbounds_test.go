package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/internal/sqlworker"
	"github.com/flightns/flightns/internal/testutil/flighttest"
)

// treeRSS is the resident memory of pid and all its descendants.
func treeRSS(pid int) int64 {
	var sum int64
	var walk func(int)
	walk = func(p int) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					var kb int64
					_, _ = fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
					sum += kb << 10
				}
			}
		}
		for _, c := range children(p) {
			walk(c)
		}
	}
	walk(pid)
	return sum
}

// sqlWorkerPid is the pid of the server's SQL worker (0: none runs).
func sqlWorkerPid(serverPid int) int {
	for _, c := range children(serverPid) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
		if strings.Contains(string(b), "sql-worker") {
			return c
		}
	}
	return 0
}

// fetchAll plans and fetches a query, discarding its rows; it returns
// the error that ended it, if any.
func fetchAll(ctx context.Context, fc *flightsql.Client, q string) error {
	info, err := fc.Execute(ctx, q)
	if err != nil {
		return err
	}
	rdr, err := fc.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
	}
	return rdr.Err()
}

func flightClient(t *testing.T, addr string) *flightsql.Client {
	t.Helper()
	fc, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.Close() })
	return fc
}

// With --sql-memory 512MB, each runaway query of issue 14 ends within its
// time limit plus a second, the server's processes together stay under
// 1.5 GiB resident, and namespace creates keep answering within a second
// meanwhile; afterwards queries work.
func TestRunawayQueriesStayWithinTheirBounds(t *testing.T) {
	const timeout = 3 * time.Second
	s := startServer(t, t.TempDir(), nil, "--sql-memory", "512MB", "--query-timeout", timeout.String(), "--sql-stop-grace", "1s")
	defer s.stop()
	fc := flightClient(t, s.flight)
	if err := fetchAll(context.Background(), fc, "SELECT 1"); err != nil { // the worker is up
		t.Fatal(err)
	}
	pid := s.cmd.Process.Pid
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // resident memory, every 20 ms
		defer wg.Done()
		for {
			if r := treeRSS(pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var slowest atomic.Int64
	var creates atomic.Int64
	go func() { // namespace creates
		defer wg.Done()
		for i := 0; ; i++ {
			start := time.Now()
			if code := restCall(t, s.rest, fmt.Sprintf("/v1/namespace/ns%d/create", i), `{}`, nil); code != 200 {
				t.Errorf("CreateNamespace ns%d: HTTP %d", i, code)
			}
			if d := int64(time.Since(start)); d > slowest.Load() {
				slowest.Store(d)
			}
			creates.Add(1)
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	for _, q := range []string{
		"SELECT * FROM range(100000) a, range(100000) b",
		"SELECT repeat('x', 1000000) FROM range(100000)",
		"SELECT length(repeat('a', 4294967295))",
		"SELECT max(length(repeat('x', 1000000) || range)) FROM range(100000)",
		"SELECT string_agg(repeat('x', 100000), ',') FROM range(100000)",
		"SELECT sum(hash(range)) FROM range(100000000000)",
	} {
		// Planning (the gate, the schema) and running share the query
		// time limit.
		start := time.Now()
		info, err := fc.Execute(context.Background(), q)
		planned := time.Since(start)
		var ran time.Duration
		if err == nil {
			start = time.Now()
			var rdr interface {
				Next() bool
				Err() error
				Release()
			}
			if rdr, err = fc.DoGet(context.Background(), info.Endpoint[0].Ticket); err == nil {
				for rdr.Next() {
				}
				err = rdr.Err()
				rdr.Release()
			}
			ran = time.Since(start)
		}
		if err == nil {
			t.Errorf("%s: finished", q)
		}
		if planned+ran > timeout+time.Second {
			t.Errorf("%s: planned in %v and ran %v, past its time limit of %v + 1 s (%v)", q, planned, ran, timeout, err)
		}
		t.Logf("%s: %v after %v planning and %v running", q, status.Code(err), planned.Round(time.Millisecond), ran.Round(time.Millisecond))
	}
	close(stop)
	wg.Wait()
	t.Logf("peak resident memory of the server's processes: %d MiB; %d namespace creates, the slowest %v",
		peak.Load()>>20, creates.Load(), time.Duration(slowest.Load()).Round(time.Millisecond))
	if peak.Load() > 3<<29 {
		t.Errorf("the server's processes reached %d MiB resident, over 1.5 GiB", peak.Load()>>20)
	}
	if time.Duration(slowest.Load()) > time.Second {
		t.Errorf("a namespace create took %v during the runaway queries", time.Duration(slowest.Load()))
	}
	// A stopped query that DuckDB does not let go of within the grace
	// restarts the worker; either way the next query works.
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := fetchAll(context.Background(), fc, "SELECT count(*) FROM namespaces")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queries do not work after the runaway ones: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The worker is a process of its own: killed, it is restarted, commits
// never noticed, and queries work again; its spill directory is under the
// data directory, and the settings are locked.
func TestTheSQLWorkerIsSupervised(t *testing.T) {
	work := t.TempDir()
	s := startServer(t, work, nil, "--sql-memory", "256MB", "--max-concurrent-queries", "2")
	defer s.stop()
	fc := flightClient(t, s.flight)
	ctx := context.Background()
	if got := flighttest.Strings(t, s.flight, "SELECT current_setting('temp_directory')"); len(got) != 1 ||
		got[0] != filepath.Join(work, "flightns-data", "sql-spill") {
		t.Fatalf("spill directory %v, want <data>/sql-spill", got)
	}
	pid := sqlWorkerPid(s.cmd.Process.Pid)
	if pid == 0 {
		t.Fatalf("no SQL worker process under the server:\n%s", s.Log())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	mustREST(t, s.rest, "/v1/namespace/during/create", `{}`, nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, _ := flighttest.Query(s.flight, "SELECT object_id FROM namespaces", 5*time.Second)
		if len(got) == 1 && got[0] == "during" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no query answered after the worker was killed:\n%s", s.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if again := sqlWorkerPid(s.cmd.Process.Pid); again == 0 || again == pid {
		t.Fatalf("the worker was not replaced (pid %d, before %d)", again, pid)
	}
	s.waitLog("the SQL worker ended; starting another", 5*time.Second)
	// --max-concurrent-queries is what the engine allows: two slow
	// queries hold both slots, a third is refused at once.
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slow := make(chan error, 2)
	for range 2 {
		go func() {
			// The worker frees the slots of the queries before these a
			// moment after their clients have their answers: a refusal
			// at the start is retried.
			for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
				err := fetchAll(qctx, fc, "SELECT sum(hash(range)) FROM range(100000000000)")
				if status.Code(err) != codes.ResourceExhausted || time.Since(start) > 10*time.Second {
					slow <- err
					return
				}
			}
		}()
	}
	// Once both run (they never end on their own), a third is refused.
	deadline = time.Now().Add(30 * time.Second)
	for {
		err := fetchAll(ctx, fc, "SELECT 1")
		if status.Code(err) == codes.ResourceExhausted {
			break
		}
		select {
		case err := <-slow:
			t.Fatalf("a slow query ended: %v", err)
		default:
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("a third query while two run: %v, want ResourceExhausted", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The worker's threads, DuckDB's among them, are all SCHED_IDLE; the
	// server's are not.
	if n, bad := schedPolicies(sqlWorkerPid(s.cmd.Process.Pid), schedIdle); n < 4 || len(bad) > 0 {
		t.Errorf("SQL worker: %d threads, %d not SCHED_IDLE: %v", n, len(bad), bad)
	}
	if n, bad := schedPolicies(s.cmd.Process.Pid, schedNormal); n < 2 || len(bad) > 0 {
		t.Errorf("server: %d threads, %d not SCHED_OTHER: %v", n, len(bad), bad)
	}
	// By default the worker runs on all CPUs but the first; the server
	// on all of them.
	want, err := sqlworker.WorkerCPUs(0)
	if err != nil || len(want) == 0 {
		t.Fatalf("the worker's CPUs: %v, %v (this test needs two CPUs or more)", want, err)
	}
	if bad := threadCPUs(sqlWorkerPid(s.cmd.Process.Pid), strings.Trim(strings.ReplaceAll(fmt.Sprint(want), " ", ","), "[]")); len(bad) > 0 {
		t.Errorf("SQL worker threads on other CPUs: %v", bad)
	}
	if bad := threadCPUs(s.cmd.Process.Pid, threadCPUsOf(os.Getpid())); len(bad) > 0 {
		t.Errorf("server threads kept from some CPUs: %v", bad)
	}
	cancel()
	for range 2 {
		if err := <-slow; status.Code(err) != codes.Canceled && err != nil {
			t.Logf("a cancelled slow query ended with %v", err)
		}
	}
}

// Scheduling policies, as /proc/<pid>/task/<tid>/stat gives them.
const (
	schedNormal = 0
	schedIdle   = 5
)

// schedPolicies counts the threads of pid and lists those whose
// scheduling policy is not want.
func schedPolicies(pid, want int) (int, []string) {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var bad []string
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue
		}
		// Fields after "(comm)": state is field 3, policy field 41.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 39 || f[38] != fmt.Sprint(want) {
			bad = append(bad, fmt.Sprintf("thread %s policy %v", task.Name(), f[min(38, len(f)-1)]))
		}
	}
	return len(tasks), bad
}

// threadCPUs lists the threads of pid whose CPUs (Cpus_allowed_list,
// as "1" or "2-3" or "1,3") are not want.
func threadCPUs(pid int, want string) []string {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var bad []string
	for _, task := range tasks {
		if got := threadCPUsOf(pid, task.Name()); got != want && got != "" {
			bad = append(bad, fmt.Sprintf("thread %s on %s, want %s", task.Name(), got, want))
		}
	}
	return bad
}

// threadCPUsOf is the Cpus_allowed_list of pid (or of its thread tid).
func threadCPUsOf(pid int, tid ...string) string {
	path := fmt.Sprintf("/proc/%d/status", pid)
	if len(tid) == 1 {
		path = fmt.Sprintf("/proc/%d/task/%s/status", pid, tid[0])
	}
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestSizesParseAsDuckDBWritesThem(t *testing.T) {
	for in, want := range map[string]int64{"512MB": 512e6, "4GB": 4e9, "1GiB": 1 << 30, "0B": 0, "100": 100, "1.5 gib": 3 << 29} {
		if got, err := sqlengine.ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MB", "12 parsecs", "-1GB"} {
		if _, err := sqlengine.ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

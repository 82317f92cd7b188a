package restserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
)

// compactorJob and compactorReport are what compactor.mjs reports.
type compactorJob struct {
	JobID   string `json:"job_id"`
	Table   string `json:"table"`
	Attempt int    `json:"attempt"`
	Outcome string `json:"outcome"`
	Version int64  `json:"version"`
	Error   string `json:"error"`
}

type compactorReport struct {
	OK     bool           `json:"ok"`
	Worker string         `json:"worker"`
	Jobs   []compactorJob `json:"jobs"`
	Errors []string       `json:"errors"`
}

// compactor is a running compactor.mjs; stop ends it (after its current
// job) and returns its report.
type compactor struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout bytes.Buffer
	stderr bytes.Buffer
}

func startCompactor(t *testing.T, cfg map[string]any) *compactor {
	t.Helper()
	b, _ := json.Marshal(cfg)
	c := &compactor{cmd: exec.Command("node", "compactor.mjs", string(b))}
	c.cmd.Dir = lancedbDir(t)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait() })
	return c
}

func (c *compactor) stop(t *testing.T) compactorReport {
	t.Helper()
	_ = c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("compactor: %v\nstderr: %s", err, c.stderr.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("a compactor did not stop\nstdout: %s\nstderr: %s", c.stdout.String(), c.stderr.String())
	}
	var rep compactorReport
	lines := strings.Split(strings.TrimSpace(c.stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("compactor's report: %v\nstdout: %s\nstderr: %s", err, c.stdout.String(), c.stderr.String())
	}
	return rep
}

// TestCompactionWorkersCompactWhileWritersCommit: one table fed by 200
// one-row adds from two LanceDB writer processes is compacted by two
// compactor.mjs processes (LanceDB's optimize through flightns, jobs
// claimed from flightns) while the writers keep committing. At the end
// no row is lost, the table is down to a handful of fragments, and the
// change feed itself shows that no two compactions of the table ever
// overlapped.
func TestCompactionWorkersCompactWhileWritersCommit(t *testing.T) {
	const writers, adds, bound = 2, 100, 5
	s := startServer(t)
	ctx := context.Background()
	svc := s.service()
	if _, err := svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"cmp"},
		Properties: api.Properties{namespace.PropCompactionMaxFragments: fmt.Sprint(bound)}}); err != nil {
		t.Fatal(err)
	}
	ns, table := []string{"cmp", "w"}, "log"
	tid := api.ID{"cmp", "w", "log"}
	var setup appendReport
	b, _ := json.Marshal(map[string]any{"impl": "rest", "uri": s.url(), "namespace": ns, "table": table, "setup": true})
	node(t, nil, &setup, "append.mjs", string(b))
	if !setup.OK {
		t.Fatalf("setup: %+v", setup)
	}

	workers := []*compactor{
		startCompactor(t, map[string]any{"uri": s.url(), "worker": "c1", "leaseSeconds": 20, "pollMs": 1000, "stdinStops": true}),
		startCompactor(t, map[string]any{"uri": s.url(), "worker": "c2", "leaseSeconds": 20, "pollMs": 1000, "stdinStops": true}),
	}
	writersEnd := int64(math.MaxInt64) // when the first writer finished
	for _, r := range runAppenders(t, map[string]any{"impl": "rest", "uri": s.url(), "namespace": ns, "table": table}, writers, adds) {
		if !r.OK || r.Added != adds {
			t.Fatalf("writer %d: added %d of %d, errors: %v", r.Worker, r.Added, adds, r.Errors)
		}
		writersEnd = min(writersEnd, r.EndMs)
	}

	// The writers are done: the workers catch up (the last versions may
	// make the table due once more), then stop.
	var frags int64
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := svc.Versions().GetTableStats(ctx, api.GetTableStatsRequest{ID: tid})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := svc.Compaction().List(ctx, api.ListCompactionsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		frags = st.FragmentStats.NumFragments
		if frags <= bound && len(jobs.Jobs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, w := range workers {
				t.Logf("worker report: %+v", w.stop(t))
			}
			t.Fatalf("2 min after the writers: %d fragments, jobs %+v", frags, jobs.Jobs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	completed := 0
	for _, w := range workers {
		rep := w.stop(t)
		if !rep.OK {
			t.Fatalf("worker %s: %+v", rep.Worker, rep)
		}
		for _, j := range rep.Jobs {
			if j.Outcome == "completed" {
				completed++
			} else {
				t.Logf("worker %s: job %s (attempt %d) %s: %s", rep.Worker, j.JobID, j.Attempt, j.Outcome, j.Error)
			}
		}
		t.Logf("worker %s ran %d jobs", rep.Worker, len(rep.Jobs))
	}
	if completed == 0 {
		t.Fatal("no compaction completed")
	}

	// No row lost: the setup's row and every add.
	var rd readReport
	node(t, nil, &rd, "read.mjs", s.url(), `["cmp", "w"]`, table)
	if !rd.OK || rd.Count != 1+writers*adds {
		t.Fatalf("read: %d rows (%s), want %d", rd.Count, rd.Error, 1+writers*adds)
	}
	have := map[string]bool{}
	for _, r := range rd.Rows {
		have[strings.Split(r, ":")[0]] = true
	}
	for w := 1; w <= writers; w++ {
		for i := 1; i <= adds; i++ {
			if id := fmt.Sprint(w*100000 + i); !have[id] {
				t.Fatalf("row %s of writer %d is missing", id, w)
			}
		}
	}

	// From the feed: each job's interval, claimed to its end, never
	// overlaps another of the table's; every job ended.
	claimed, ended := 0, 0
	var open string // the job in progress
	// Compactions while the writers committed: claimed, and completed,
	// before the first writer finished. (Under this contention Lance may
	// retry a compaction's commit until the writers pause: a completion
	// meanwhile is likely, not certain.)
	var claimedDuring, during int
	after := uint64(0)
	for {
		evs, through, err := svc.Table().Events(ctx, after, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if !strings.HasPrefix(ev.Type, "compaction.") {
				continue
			}
			if ev.Time.UnixMilli() < writersEnd {
				switch ev.Type {
				case api.EventCompactionClaimed:
					claimedDuring++
				case api.EventCompactionCompleted:
					during++
				}
			}
			if !ev.ID.Equal(tid) {
				t.Fatalf("a compaction event of another table: %+v", ev)
			}
			job := ev.Properties[api.CompactionJobIDProperty]
			switch ev.Type {
			case api.EventCompactionClaimed:
				if open != "" {
					t.Fatalf("seq %d: job %s claimed while job %s is in progress", ev.Seq, job, open)
				}
				open = job
				claimed++
			case api.EventCompactionRenewed:
				if open != job {
					t.Fatalf("seq %d: job %s renewed while %q is the one in progress", ev.Seq, job, open)
				}
			default:
				if open != job {
					t.Fatalf("seq %d: job %s ended (%s) while %q is the one in progress", ev.Seq, job, ev.Type, open)
				}
				open = ""
				ended++
			}
		}
		if through == after {
			break
		}
		after = through
	}
	if open != "" || claimed == 0 || claimed != ended {
		t.Fatalf("the feed: %d jobs claimed, %d ended, %q still open", claimed, ended, open)
	}
	if claimedDuring == 0 {
		t.Fatal("the feed: no compaction began while the writers committed")
	}
	t.Logf("%d compactions (%d completed; %d began and %d completed while the writers committed), %d fragments at the end",
		claimed, completed, claimedDuring, during, frags)
}

// The compaction routes over HTTP: a claim is a POST, nothing due is an
// empty object, a claim hands out a job LanceDB's table needs, a bad
// request is InvalidInput, and the list is a read (GET).
func TestCompactionRoutes(t *testing.T) {
	s := startServer(t)
	wantError(t, "a claim by GET", s.do(http.MethodGet, "/v1/compaction/claim", nil), 13, http.StatusMethodNotAllowed)
	wantError(t, "a claim without a worker", s.post("/v1/compaction/claim", map[string]any{}), 13, http.StatusBadRequest)
	if r := ok(t, "a claim with nothing due", s.post("/v1/compaction/claim", map[string]any{"worker": "w"})); strings.TrimSpace(string(r.body)) != "{}" {
		t.Fatalf("nothing due: %s, want {}", r.body)
	}

	// LanceDB's table of three one-row versions: three fragments, over
	// the bound of 2 its namespace sets.
	if _, err := s.service().CreateNamespace(context.Background(), api.CreateNamespaceRequest{ID: api.ID{"r"},
		Properties: api.Properties{namespace.PropCompactionMaxFragments: "2"}}); err != nil {
		t.Fatal(err)
	}
	var setup appendReport
	b, _ := json.Marshal(map[string]any{"impl": "rest", "uri": s.url(), "namespace": []string{"r", "n"}, "table": "t", "setup": true})
	node(t, nil, &setup, "append.mjs", string(b))
	reps := runAppenders(t, map[string]any{"impl": "rest", "uri": s.url(), "namespace": []string{"r", "n"}, "table": "t"}, 1, 2)
	if !setup.OK || !reps[0].OK {
		t.Fatalf("setup %+v, adds %+v", setup, reps[0])
	}
	var claimed api.ClaimCompactionResponse
	ok(t, "a claim", s.post("/v1/compaction/claim", map[string]any{"worker": "w", "lease_seconds": 30})).decode(t, &claimed)
	if j := claimed.Job; j == nil || j.ID.String() != "r$n$t" || j.Fragments != 3 || j.Version != 3 || j.LeaseSeconds != 30 {
		t.Fatalf("claimed %+v", claimed.Job)
	}
	var list api.ListCompactionsResponse
	ok(t, "the list", s.do(http.MethodGet, "/v1/compaction/list", nil)).decode(t, &list)
	if len(list.Jobs) != 1 || list.Jobs[0].JobID != claimed.Job.JobID {
		t.Fatalf("list: %+v", list)
	}
	wantError(t, "another worker's completion", s.post("/v1/compaction/complete", map[string]any{"job_id": claimed.Job.JobID, "worker": "x"}), 15, http.StatusForbidden)
	ok(t, "a heartbeat", s.post("/v1/compaction/heartbeat", map[string]any{"job_id": claimed.Job.JobID, "worker": "w"}))
	ok(t, "a failure", s.post("/v1/compaction/fail", map[string]any{"job_id": claimed.Job.JobID, "worker": "w", "reason": "test"}))
	wantError(t, "a completion after the failure", s.post("/v1/compaction/complete", map[string]any{"job_id": claimed.Job.JobID, "worker": "w"}), 14, http.StatusConflict)
}

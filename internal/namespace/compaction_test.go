package namespace

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// testClock is a clock a test moves forward.
type testClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// compactEnv is a catalog on a clock the test moves, with namespace a.
func compactEnv(t *testing.T) (*tenv, *testClock) {
	t.Helper()
	e := newTenv(t)
	clock := &testClock{}
	s, err := Open(context.Background(), Config{Objects: e.objs, Redis: e.rdb, Catalog: e.catalog, Logger: quiet, Now: clock.now,
		Table: manifesttable.Config{Engine: sqlengine.Config{MemoryLimit: "1GB"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	e.s = s
	must(e.s.CreateNamespace(context.Background(), api.CreateNamespaceRequest{ID: id("a")}))
	return e, clock
}

// lanceManifest is one of the manifests LanceDB wrote (package
// lancemanifest's testdata): v1 has one fragment, v2 and v3 two.
func lanceManifest(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../lancemanifest/testdata/" + name + ".manifest")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fragmentedTable declares tid with props and commits LanceDB's v1 and v2
// (two fragments at the head).
func (e *tenv) fragmentedTable(t *testing.T, tid api.ID, props api.Properties) string {
	t.Helper()
	ctx := context.Background()
	must(e.s.DeclareTable(ctx, api.DeclareTableRequest{ID: tid, Properties: props}))
	loc := e.locOf(tid)
	for v, name := range []string{"v1", "v2"} {
		e.commitManifest(t, tid, loc, uint64(v+1), lanceManifest(t, name))
	}
	return loc
}

func (e *tenv) commitManifest(t *testing.T, tid api.ID, loc string, v uint64, content string) {
	t.Helper()
	must(e.s.Versions().CreateTableVersion(context.Background(), api.CreateTableVersionRequest{ID: tid, Version: int64(v), ManifestPath: e.stage(loc, v, content)}))
}

// compactionEvents are the compaction events of the feed after seq, once
// there are n, as "type worker attempt".
func (e *tenv) compactionEvents(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out []string
		for _, ev := range e.events(t, 0, 0) {
			if strings.HasPrefix(ev.Type, "compaction.") {
				out = append(out, ev.Type+" "+ev.ID.String()+" "+ev.Properties[api.CompactionWorkerProperty]+" "+ev.Properties[api.CompactionAttemptProperty])
			}
		}
		if len(out) >= n || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func claim(ctx context.Context, t *testing.T, e *tenv, worker string) *api.CompactionJob {
	t.Helper()
	r, err := e.s.Compaction().Claim(ctx, api.ClaimCompactionRequest{Worker: worker})
	if err != nil {
		t.Fatalf("claim by %s: %v", worker, err)
	}
	return r.Job
}

// A table with more fragments than its bound is one job, leased to one
// worker: a second claim finds nothing, another worker's heartbeat or
// completion is refused, the holder's heartbeat renews its lease, its
// completion ends the job, and the table is not due again until its head
// moves. Each change is its event, in order.
func TestACompactionJobIsLeasedToOneWorkerAtATime(t *testing.T) {
	e, _ := compactEnv(t)
	bg := context.Background()
	loc := e.fragmentedTable(t, id("a", "t"), api.Properties{PropCompactionMaxFragments: "1"})

	job := claim(bg, t, e, "w1")
	if job == nil || !job.ID.Equal(id("a", "t")) || job.Location != loc || job.Attempt != 1 || job.Version != 2 || job.Fragments != 2 ||
		job.Worker != "w1" || !strings.Contains(job.Reason, "2 fragments under the compaction target, more than 1") {
		t.Fatalf("claim: %+v", job)
	}
	if j := claim(bg, t, e, "w2"); j != nil {
		t.Fatalf("a second claim got %+v while the first job is leased", j)
	}
	list := must(e.s.Compaction().List(bg, api.ListCompactionsRequest{}))
	if len(list.Jobs) != 1 || list.Jobs[0].JobID != job.JobID {
		t.Fatalf("list: %+v", list)
	}

	_, err := e.s.Compaction().Heartbeat(bg, api.HeartbeatCompactionRequest{JobID: job.JobID, Worker: "w2"})
	wantCode(t, "another worker's heartbeat", err, nserror.PermissionDenied)
	_, err = e.s.Compaction().Complete(bg, api.CompleteCompactionRequest{JobID: job.JobID, Worker: "w2"})
	wantCode(t, "another worker's completion", err, nserror.PermissionDenied)
	_, err = e.s.Compaction().Heartbeat(bg, api.HeartbeatCompactionRequest{JobID: "nope", Worker: "w1"})
	wantCode(t, "a heartbeat of no job", err, nserror.ConcurrentModification)

	hb := must(e.s.Compaction().Heartbeat(bg, api.HeartbeatCompactionRequest{JobID: job.JobID, Worker: "w1", LeaseSeconds: ptr(600)}))
	if !hb.LeaseExpires.After(job.LeaseExpires) {
		t.Fatalf("the heartbeat's lease %v is not past the claim's %v", hb.LeaseExpires, job.LeaseExpires)
	}
	must(e.s.Compaction().Complete(bg, api.CompleteCompactionRequest{JobID: job.JobID, Worker: "w1", Version: ptr(uint64(3))}))
	_, err = e.s.Compaction().Complete(bg, api.CompleteCompactionRequest{JobID: job.JobID, Worker: "w1"})
	wantCode(t, "a second completion", err, nserror.ConcurrentModification)
	if j := claim(bg, t, e, "w2"); j != nil {
		t.Fatalf("the table was handed out again at the head its job ended at: %+v", j)
	}
	if list := must(e.s.Compaction().List(bg, api.ListCompactionsRequest{})); len(list.Jobs) != 0 {
		t.Fatalf("list after the completion: %+v", list)
	}

	// A new version (still two fragments): due again.
	e.commitManifest(t, id("a", "t"), loc, 3, lanceManifest(t, "v3"))
	if j := claim(bg, t, e, "w2"); j == nil || j.Attempt != 1 || j.Version != 3 {
		t.Fatalf("after a new version: %+v", j)
	}
	want := []string{"compaction.claimed a$t w1 1", "compaction.renewed a$t w1 1", "compaction.completed a$t w1 1", "compaction.claimed a$t w2 1"}
	if got := e.compactionEvents(t, len(want)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A lease that lapses is handed out again, attempt+1, the old job
// expiring in the same change; the old worker's heartbeat and completion
// are refused then. A lapsed lease nobody took is still its worker's.
func TestALapsedLeaseIsHandedOutAgain(t *testing.T) {
	e, clock := compactEnv(t)
	bg := context.Background()
	e.fragmentedTable(t, id("a", "t"), api.Properties{PropCompactionMaxFragments: "1"})

	r := must(e.s.Compaction().Claim(bg, api.ClaimCompactionRequest{Worker: "w1", LeaseSeconds: ptr(10)}))
	first := r.Job
	clock.advance(11 * time.Second)
	// Lapsed, taken by no one: the holder renews it.
	must(e.s.Compaction().Heartbeat(bg, api.HeartbeatCompactionRequest{JobID: first.JobID, Worker: "w1"}))
	if j := claim(bg, t, e, "w2"); j != nil {
		t.Fatalf("a renewed lease was handed out: %+v", j)
	}
	clock.advance(11 * time.Second)
	second := claim(bg, t, e, "w2")
	if second == nil || second.Attempt != 2 || second.JobID == first.JobID || second.Worker != "w2" {
		t.Fatalf("the lapsed job was not handed out again: %+v", second)
	}
	_, err := e.s.Compaction().Heartbeat(bg, api.HeartbeatCompactionRequest{JobID: first.JobID, Worker: "w1"})
	wantCode(t, "the old worker's heartbeat", err, nserror.ConcurrentModification)
	_, err = e.s.Compaction().Complete(bg, api.CompleteCompactionRequest{JobID: first.JobID, Worker: "w1"})
	wantCode(t, "the old worker's completion", err, nserror.ConcurrentModification)
	must(e.s.Compaction().Fail(bg, api.FailCompactionRequest{JobID: second.JobID, Worker: "w2", Reason: "disk full"}))
	if j := claim(bg, t, e, "w3"); j != nil {
		t.Fatalf("a failed table was handed out again at the same head: %+v", j)
	}

	want := []string{"compaction.claimed a$t w1 1", "compaction.renewed a$t w1 1", "compaction.expired a$t w1 1", "compaction.claimed a$t w2 2", "compaction.failed a$t w2 2"}
	got := e.compactionEvents(t, len(want))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The expiry and the new claim are one change: one sequence.
	var expired, claimed uint64
	for _, ev := range e.events(t, 0, 0) {
		switch {
		case ev.Type == api.EventCompactionExpired:
			expired = ev.Seq
		case ev.Type == api.EventCompactionClaimed && ev.Properties[api.CompactionWorkerProperty] == "w2":
			claimed = ev.Seq
		case ev.Type == api.EventCompactionFailed && ev.Properties[api.CompactionReasonProperty] != "disk full":
			t.Errorf("the failure's reason: %+v", ev.Properties)
		}
	}
	if expired == 0 || expired != claimed {
		t.Fatalf("the expiry (seq %d) and the claim that took over (seq %d) are not one change", expired, claimed)
	}
}

// The policy: more fragments than the table's max_fragments, else its
// namespace's, else the default (16), or more than a tenth of the rows
// deleted; 0 turns compaction off.
func TestWhichTablesAreDue(t *testing.T) {
	e, _ := compactEnv(t)
	bg := context.Background()
	must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: id("b"), Properties: api.Properties{PropCompactionMaxFragments: "1"}}))
	e.fragmentedTable(t, id("a", "default"), nil)                                            // 2 ≤ 16
	e.fragmentedTable(t, id("a", "off"), api.Properties{PropCompactionMaxFragments: "0"})    // off
	e.fragmentedTable(t, id("a", "enough"), api.Properties{PropCompactionMaxFragments: "2"}) // 2 ≤ 2
	e.fragmentedTable(t, id("b", "inherits"), nil)                                           // 2 > 1
	e.fragmentedTable(t, id("b", "own"), api.Properties{PropCompactionMaxFragments: "5"})    // 2 ≤ 5
	for _, bad := range []api.Properties{{PropCompactionMaxFragments: "lots"}, {PropCompactionMaxFragments: "-1"},
		{PropCompactionMaxFragments: "1000001"}, {"flightns.compaction.max_fragment": "3"}} {
		_, err := e.s.DeclareTable(bg, api.DeclareTableRequest{ID: id("b", "garbled"), Properties: bad})
		wantCode(t, fmt.Sprint("a table declared with ", bad), err, nserror.InvalidInput)
		_, err = e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: id("c"), Properties: bad})
		wantCode(t, fmt.Sprint("a namespace created with ", bad), err, nserror.InvalidInput)
	}
	must(e.s.DeclareTable(bg, api.DeclareTableRequest{ID: id("b", "empty")})) // no version
	// 2 fragments ≤ 16, but one of five rows deleted (LanceDB's v3).
	deleted := e.fragmentedTable(t, id("a", "deleted"), nil)
	e.commitManifest(t, id("a", "deleted"), deleted, 3, lanceManifest(t, "v3"))
	var got []string
	for {
		j := claim(bg, t, e, "w")
		if j == nil {
			break
		}
		got = append(got, j.ID.String()+": "+j.Reason)
	}
	want := []string{
		"a$deleted: version 3 has 1 of its 5 rows deleted, more than 10%",
		"b$inherits: version 2 has 2 fragments under the compaction target, more than 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("claimed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A claim hands out only jobs of tables the caller may write, inside its
// namespace filter; the job's heartbeat and completion need write on its
// table; a filter cannot reach what the caller may not read.
func TestACompactionNeedsWriteOnItsTable(t *testing.T) {
	e, _ := compactEnv(t)
	bg := context.Background()
	must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: id("b")}))
	one := api.Properties{PropCompactionMaxFragments: "1"}
	e.fragmentedTable(t, id("a", "t"), one)
	e.fragmentedTable(t, id("b", "t"), one)
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "ana", Role: auth.Read}))
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"b"}, Principal: "bo", Role: auth.Write}))
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"a"}, Principal: "bo", Role: auth.Read}))
	ana := auth.WithPrincipal(bg, auth.Principal{Name: "ana", Role: auth.None})
	bo := auth.WithPrincipal(bg, auth.Principal{Name: "bo", Role: auth.None})
	cy := auth.WithPrincipal(bg, auth.Principal{Name: "cy", Role: auth.None})

	_, err := op(ana, e.s, api.OpClaimCompaction, map[string]any{"worker": "w"})
	wantCode(t, "a reader's claim", err, nserror.PermissionDenied)
	_, err = op(bo, e.s, api.OpClaimCompaction, map[string]any{"worker": "w", "namespace": []string{"a"}})
	wantCode(t, "a claim filtered to what bo reads only", err, nserror.PermissionDenied)
	_, err = op(bo, e.s, api.OpClaimCompaction, map[string]any{"worker": "w", "namespace": []string{"c"}})
	wantCode(t, "a claim filtered to what bo cannot read", err, nserror.NamespaceNotFound)

	out, err := op(bo, e.s, api.OpClaimCompaction, map[string]any{"worker": "w"})
	if err != nil {
		t.Fatal(err)
	}
	job := out.(*api.ClaimCompactionResponse).Job
	if job == nil || !job.ID.Equal(id("b", "t")) {
		t.Fatalf("bo claimed %+v, want b$t's job", job)
	}
	if out := must(op(bo, e.s, api.OpClaimCompaction, map[string]any{"worker": "w"})); out.(*api.ClaimCompactionResponse).Job != nil {
		t.Fatalf("bo got a job of a table it may not write: %+v", out)
	}
	// a$t's job, claimed by the catalog (no principal).
	aJob := claim(bg, t, e, "w")
	if aJob == nil || !aJob.ID.Equal(id("a", "t")) {
		t.Fatalf("the catalog claimed %+v, want a$t's job", aJob)
	}
	_, err = op(bo, e.s, api.OpHeartbeatCompaction, map[string]any{"job_id": aJob.JobID, "worker": "w"})
	wantCode(t, "bo's heartbeat of a job of a table it reads", err, nserror.PermissionDenied)
	_, err = op(cy, e.s, api.OpHeartbeatCompaction, map[string]any{"job_id": aJob.JobID, "worker": "w"})
	wantCode(t, "a heartbeat of one who holds nothing", err, nserror.PermissionDenied)
	if _, err := op(bo, e.s, api.OpCompleteCompaction, map[string]any{"job_id": job.JobID, "worker": "w"}); err != nil {
		t.Fatalf("bo's completion of its job: %v", err)
	}
	// The list shows what the caller reads.
	list := must(op(bo, e.s, api.OpListCompactions, map[string]any{})).(*api.ListCompactionsResponse)
	if len(list.Jobs) != 1 || !list.Jobs[0].ID.Equal(id("a", "t")) {
		t.Fatalf("bo's list: %+v", list.Jobs)
	}
	list = must(op(bo, e.s, api.OpListCompactions, map[string]any{"namespace": []string{"b"}})).(*api.ListCompactionsResponse)
	if len(list.Jobs) != 0 {
		t.Fatalf("bo's list of b: %+v", list.Jobs)
	}
}

// A job follows its table through a rename: who may act on it, who
// lists it and what its events name is decided by the table's name now,
// not the name it had when the job was claimed. (Before, a writer of the
// old namespace kept the job of a table moved where it may not write,
// renewing its lease to keep the table from being compacted.)
func TestACompactionJobFollowsItsTableThroughARename(t *testing.T) {
	e, _ := compactEnv(t)
	bg := context.Background()
	for _, ns := range []string{"m", "secret"} {
		must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: id(ns)}))
	}
	e.fragmentedTable(t, id("m", "t"), api.Properties{PropCompactionMaxFragments: "1"})
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"m"}, Principal: "mallory", Role: auth.Write}))
	must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"secret"}, Principal: "sam", Role: auth.Write}))
	mallory := auth.WithPrincipal(bg, auth.Principal{Name: "mallory", Role: auth.None})
	sam := auth.WithPrincipal(bg, auth.Principal{Name: "sam", Role: auth.None})

	job := must(op(mallory, e.s, api.OpClaimCompaction, map[string]any{"worker": "w"})).(*api.ClaimCompactionResponse).Job
	if job == nil || !job.ID.Equal(id("m", "t")) {
		t.Fatalf("mallory claimed %+v", job)
	}
	must(e.s.RenameTable(bg, api.RenameTableRequest{ID: id("m", "t"), NewTableName: "t", NewNamespaceID: ptr(id("secret"))}))

	for _, o := range []string{api.OpHeartbeatCompaction, api.OpCompleteCompaction, api.OpFailCompaction} {
		if _, err := op(mallory, e.s, o, map[string]any{"job_id": job.JobID, "worker": "w", "lease_seconds": 3600}); err == nil {
			t.Fatalf("mallory's %s of the job of a table moved out of her reach succeeded", o)
		}
	}
	if list := must(op(mallory, e.s, api.OpListCompactions, map[string]any{})).(*api.ListCompactionsResponse); len(list.Jobs) != 0 {
		t.Fatalf("mallory lists %+v", list.Jobs)
	}
	list := must(op(sam, e.s, api.OpListCompactions, map[string]any{})).(*api.ListCompactionsResponse)
	if len(list.Jobs) != 1 || !list.Jobs[0].ID.Equal(id("secret", "t")) {
		t.Fatalf("sam lists %+v, want the job of secret$t", list.Jobs)
	}
	admin := auth.WithPrincipal(bg, auth.Principal{Name: "root", Role: auth.Admin}) // sam did not claim it
	must(op(admin, e.s, api.OpHeartbeatCompaction, map[string]any{"job_id": job.JobID, "worker": "w"}))
	must(op(admin, e.s, api.OpCompleteCompaction, map[string]any{"job_id": job.JobID, "worker": "w"}))
	want := []string{"compaction.claimed m$t w 1", "compaction.renewed secret$t w 1", "compaction.completed secret$t w 1"}
	if got := e.compactionEvents(t, len(want)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A job is its claimant's: another writer of the table that names its
// worker (the list and the feed show it) may not renew, complete or fail
// it; an admin of the catalog may. (Before, the worker's name was the
// job's only credential: a co-writer could end the job and claim the
// table again while the first compaction ran.)
func TestACompactionJobIsItsClaimantsWhateverTheWorkersName(t *testing.T) {
	e, _ := compactEnv(t)
	bg := context.Background()
	must(e.s.CreateNamespace(bg, api.CreateNamespaceRequest{ID: id("b")}))
	e.fragmentedTable(t, id("b", "t"), api.Properties{PropCompactionMaxFragments: "1"})
	for _, who := range []string{"bo", "bea"} {
		must(0, e.s.Access().Grant(bg, auth.Grant{Namespace: []string{"b"}, Principal: who, Role: auth.Write}))
	}
	bo := auth.WithPrincipal(bg, auth.Principal{Name: "bo", Role: auth.None})
	bea := auth.WithPrincipal(bg, auth.Principal{Name: "bea", Role: auth.None})
	admin := auth.WithPrincipal(bg, auth.Principal{Name: "root", Role: auth.Admin})
	job := must(op(bo, e.s, api.OpClaimCompaction, map[string]any{"worker": "w"})).(*api.ClaimCompactionResponse).Job
	if job == nil || job.Principal != "bo" {
		t.Fatalf("bo's claim: %+v", job)
	}
	for _, o := range []string{api.OpHeartbeatCompaction, api.OpCompleteCompaction, api.OpFailCompaction} {
		_, err := op(bea, e.s, o, map[string]any{"job_id": job.JobID, "worker": "w"})
		wantCode(t, "bea's "+o+" of bo's job", err, nserror.PermissionDenied)
	}
	must(op(bo, e.s, api.OpHeartbeatCompaction, map[string]any{"job_id": job.JobID, "worker": "w"}))
	must(op(admin, e.s, api.OpCompleteCompaction, map[string]any{"job_id": job.JobID, "worker": "w"}))
}

// What a worker sends is checked before anything is read.
func TestCompactionRequestsAreChecked(t *testing.T) {
	e, _ := compactEnv(t)
	bg := context.Background()
	for _, c := range []struct {
		what string
		op   string
		body map[string]any
	}{
		{"no worker", api.OpClaimCompaction, map[string]any{}},
		{"a worker with a newline", api.OpClaimCompaction, map[string]any{"worker": "a\nb"}},
		{"a worker too long", api.OpClaimCompaction, map[string]any{"worker": strings.Repeat("w", 257)}},
		{"a lease of 0 s", api.OpClaimCompaction, map[string]any{"worker": "w", "lease_seconds": 0}},
		{"a lease of a day", api.OpClaimCompaction, map[string]any{"worker": "w", "lease_seconds": 86400}},
		{"a lease whose nanoseconds overflow", api.OpClaimCompaction, map[string]any{"worker": "w", "lease_seconds": 9223372037}},
		{"a bad namespace", api.OpClaimCompaction, map[string]any{"worker": "w", "namespace": []string{""}}},
		{"no job id", api.OpHeartbeatCompaction, map[string]any{"worker": "w"}},
		{"no worker", api.OpCompleteCompaction, map[string]any{"job_id": "j"}},
		{"a body of another shape", api.OpFailCompaction, map[string]any{"job_id": []int{1}}},
	} {
		_, err := op(bg, e.s, c.op, c.body)
		wantCode(t, c.op+": "+c.what, err, nserror.InvalidInput)
	}
}

// A lapsed job whose table is gone expires at the next claim.
func TestALapsedJobOfADroppedTableExpires(t *testing.T) {
	e, clock := compactEnv(t)
	bg := context.Background()
	e.fragmentedTable(t, id("a", "t"), api.Properties{PropCompactionMaxFragments: "1"})
	must(e.s.Compaction().Claim(bg, api.ClaimCompactionRequest{Worker: "w1", LeaseSeconds: ptr(10)}))
	must(e.s.DropTable(bg, api.DropTableRequest{ID: id("a", "t")}))
	if j := claim(bg, t, e, "w2"); j != nil {
		t.Fatalf("a job of a dropped table: %+v", j)
	}
	if list := must(e.s.Compaction().List(bg, api.ListCompactionsRequest{})); len(list.Jobs) != 1 {
		t.Fatalf("the leased job of the dropped table left before its lease lapsed: %+v", list)
	}
	clock.advance(11 * time.Second)
	if j := claim(bg, t, e, "w2"); j != nil {
		t.Fatalf("a job of a dropped table: %+v", j)
	}
	if list := must(e.s.Compaction().List(bg, api.ListCompactionsRequest{})); len(list.Jobs) != 0 {
		t.Fatalf("the lapsed job of the dropped table is still listed: %+v", list)
	}
	want := []string{"compaction.claimed a$t w1 1", "compaction.expired a$t w1 1"}
	if got := e.compactionEvents(t, len(want)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A job settles its table at the version it was claimed at, not at the
// head when it ends: versions writers added meanwhile make the table due
// again.
func TestVersionsWrittenDuringAJobAreJudgedOnTheirOwn(t *testing.T) {
	e, _ := compactEnv(t)
	bg := context.Background()
	loc := e.fragmentedTable(t, id("a", "t"), api.Properties{PropCompactionMaxFragments: "1"})
	job := claim(bg, t, e, "w1")
	e.commitManifest(t, id("a", "t"), loc, 3, lanceManifest(t, "v3")) // a writer, during the job
	must(e.s.Compaction().Complete(bg, api.CompleteCompactionRequest{JobID: job.JobID, Worker: "w1"}))
	again := claim(bg, t, e, "w2")
	if again == nil || again.Version != 3 {
		t.Fatalf("after a version written during the job: %+v, want a job at version 3", again)
	}
	// Claimed at version 3, it settles there whatever it reports.
	must(e.s.Compaction().Complete(bg, api.CompleteCompactionRequest{JobID: again.JobID, Worker: "w2", Version: ptr(uint64(3))}))
	if j := claim(bg, t, e, "w3"); j != nil {
		t.Fatalf("handed out again at the version its compaction reported: %+v", j)
	}
}

// A worker's own heartbeats crossing its completion do not cost it the
// job: the completion reads the job again and succeeds.
func TestHeartbeatsCrossingACompletion(t *testing.T) {
	e, _ := compactEnv(t)
	bg := context.Background()
	e.fragmentedTable(t, id("a", "t"), api.Properties{PropCompactionMaxFragments: "1"})
	job := claim(bg, t, e, "w1")
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				_, _ = e.s.Compaction().Heartbeat(bg, api.HeartbeatCompactionRequest{JobID: job.JobID, Worker: "w1"})
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	_, err := e.s.Compaction().Complete(bg, api.CompleteCompactionRequest{JobID: job.JobID, Worker: "w1"})
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatalf("the completion, crossed by heartbeats: %v", err)
	}
}

// A compaction property from any caller: checked without a panic, and
// what is accepted reads back as the bound it says.
func FuzzCompactionProps(f *testing.F) {
	for _, seed := range []string{"0", "16", "1000000", "1000001", "-1", " 3 ", "lots", "", "1e3", "0x10"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p := api.Properties{PropCompactionMaxFragments: v}
		if err := checkCompactionProps(p); err != nil {
			if nserror.CodeOf(err) != nserror.InvalidInput {
				t.Fatalf("%q: %v", v, err)
			}
			return
		}
		if n, ok := parseMaxFragments(p); !ok || n < 0 || n > maxCompactionMaxFragments {
			t.Fatalf("accepted %q as %d, %v", v, n, ok)
		}
	})
}

// The maintainer expires a lapsed job of a table that is gone, though no
// claim comes, and forgets the version a gone table's last job settled.
func TestTheMaintainerTidiesTheJobsOfGoneTables(t *testing.T) {
	e, clock := compactEnv(t)
	bg := context.Background()
	e.fragmentedTable(t, id("a", "t1"), api.Properties{PropCompactionMaxFragments: "1"})
	loc2 := e.fragmentedTable(t, id("a", "t2"), api.Properties{PropCompactionMaxFragments: "1"})
	j1, j2 := claim(bg, t, e, "w1"), claim(bg, t, e, "w2")
	if j1 == nil || j2 == nil || j2.Location != loc2 {
		t.Fatalf("jobs %+v and %+v", j1, j2)
	}
	must(e.s.Compaction().Complete(bg, api.CompleteCompactionRequest{JobID: j2.JobID, Worker: "w2"}))
	for _, name := range []string{"t1", "t2"} {
		must(e.s.DropTable(bg, api.DropTableRequest{ID: id("a", name)}))
	}
	if n := must(e.s.Compaction().tidy(bg)); n != 0 {
		t.Fatalf("%d jobs expired before their lease lapsed", n)
	}
	clock.advance(time.Until(j1.LeaseExpires.Add(time.Second)))
	if n := must(e.s.Compaction().tidy(bg)); n != 1 {
		t.Fatalf("%d jobs expired, want the dropped table's lapsed one", n)
	}
	if list := must(e.s.Compaction().List(bg, api.ListCompactionsRequest{})); len(list.Jobs) != 0 {
		t.Fatalf("jobs left: %+v", list)
	}
	if settled := must(e.s.Compaction().settled(bg)); len(settled) != 0 {
		t.Fatalf("settled versions of gone tables kept: %v", settled)
	}
	want := []string{"compaction.claimed a$t1 w1 1", "compaction.claimed a$t2 w2 1", "compaction.completed a$t2 w2 1", "compaction.expired a$t1 w1 1"}
	if got := e.compactionEvents(t, len(want)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

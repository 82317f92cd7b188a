package redisclaim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/s3proxy"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

var backendsUnderTest = []string{"mem", "file", "s3", "s3-copy"}

func TestPutCommitsAndEveryReadSeesIt(t *testing.T) {
	ctx := context.Background()
	for _, b := range backendsUnderTest {
		t.Run(b, func(t *testing.T) {
			e := newEnv(t, b)
			if _, _, ok, err := e.s.GetLatestVersion(ctx, "t1"); ok || err != nil {
				t.Fatalf("GetLatestVersion of an empty table = ok %v, %v", ok, err)
			}
			for v := uint64(1); v <= 3; v++ {
				loc, err := e.put("t1", v, fmt.Sprintf("manifest-%d", v))
				if err != nil {
					t.Fatalf("Put v%d: %v", v, err)
				}
				if loc.Version != v || loc.Path != lancemanifest.Dir("t1").Manifest(lancemanifest.V2, v) || loc.Size != int64(len("manifest-1")) || loc.Seq == 0 {
					t.Fatalf("Put v%d = %+v", v, loc)
				}
			}
			v, p, ok, err := e.s.GetLatestVersion(ctx, "t1")
			if err != nil || !ok || v != 3 || p != "t1/_versions/18446744073709551612.manifest" {
				t.Fatalf("GetLatestVersion = %d %q %v %v", v, p, ok, err)
			}
			for v := uint64(1); v <= 3; v++ {
				if got := e.final("t1", v); got != fmt.Sprintf("manifest-%d", v) {
					t.Fatalf("final v%d = %q", v, got)
				}
				p, err := e.s.Get(ctx, "t1", v)
				if err != nil || p != lancemanifest.Dir("t1").Manifest(lancemanifest.V2, v) {
					t.Fatalf("Get v%d = %q, %v", v, p, err)
				}
			}
			if left := e.stagingLeft("t1"); len(left) != 0 {
				t.Fatalf("staging objects left after commits: %v", left)
			}
			if _, err := e.s.Get(ctx, "t1", 4); !errors.Is(err, nserror.ErrTableVersionNotFound) {
				t.Fatalf("Get of a future version: %v, want TableVersionNotFound", err)
			}
			desc, next, err := e.s.ListVersions(ctx, "t1", ListOptions{Descending: true, Limit: 2})
			if err != nil || len(desc) != 2 || desc[0].Version != 3 || desc[1].Version != 2 || next != 2 {
				t.Fatalf("ListVersions desc = %+v next %d, %v", desc, next, err)
			}
			rest, next, err := e.s.ListVersions(ctx, "t1", ListOptions{Descending: true, Limit: 2, After: next})
			if err != nil || len(rest) != 1 || rest[0].Version != 1 || next != 0 {
				t.Fatalf("ListVersions page 2 = %+v next %d, %v", rest, next, err)
			}
			asc, _, err := e.s.ListVersions(ctx, "t1", ListOptions{})
			if err != nil || len(asc) != 3 || asc[0].Version != 1 {
				t.Fatalf("ListVersions asc = %+v, %v", asc, err)
			}
		})
	}
}

func TestClaimsAreStrict(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	if _, err := e.put("t", 2, "skip"); !errors.Is(err, nserror.ErrInvalidInput) {
		t.Fatalf("version 2 of an empty table: %v, want InvalidInput (not a conflict: it is not taken)", err)
	}
	if _, err := e.put("t", 1, "one"); err != nil {
		t.Fatal(err)
	}
	loser := e.stage("t", 1, "other")
	_, err := e.s.Put(ctx, "t", 1, loser, 0, "")
	var ce *ConflictError
	if !errors.Is(err, nserror.ErrConcurrentModification) || !errors.As(err, &ce) || ce.Head != 1 || ce.Version != 1 {
		t.Fatalf("second claim of version 1: %v, want ConcurrentModification with head 1", err)
	}
	if got := e.final("t", 1); got != "one" {
		t.Fatalf("final v1 = %q after a losing claim", got)
	}
	e.settle()
	if _, err := e.objs.Head(ctx, loser); err == nil {
		t.Fatalf("the loser's staging object %s was not deleted", loser)
	}
	if _, err := e.put("t", 3, "gap"); !errors.Is(err, nserror.ErrInvalidInput) {
		t.Fatalf("version 3 on head 1: %v, want InvalidInput", err)
	}
	if v, _, _, _ := e.s.GetLatestVersion(ctx, "t"); v != 1 {
		t.Fatalf("head moved to %d", v)
	}
}

func TestRepeatedPutWithTheSameStagingPathIsIdempotent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "file")
	p := e.stage("t", 1, "mine")
	first, err := e.s.Put(ctx, "t", 1, p, 4, "")
	if err != nil {
		t.Fatal(err)
	}
	// The staging object is gone now: the retry is answered from the record.
	again, err := e.s.Put(ctx, "t", 1, p, 4, "")
	if err != nil || again.Path != first.Path || again.Version != 1 {
		t.Fatalf("retried Put = %+v, %v; want %+v", again, err, first)
	}
	// A retry whose reply was lost before the staging object was deleted.
	p2 := e.stage("t", 2, "second")
	e.failAt(StepFinalized, "t", 2, errors.New("reply lost"))
	if _, err := e.s.Put(ctx, "t", 2, p2, 6, ""); err == nil {
		t.Fatal("the injected fault did not fire")
	}
	e.noFaults()
	loc, err := e.s.Put(ctx, "t", 2, p2, 6, "")
	if err != nil || loc.Version != 2 || e.final("t", 2) != "second" {
		t.Fatalf("retry after a lost reply = %+v, %v", loc, err)
	}
}

func TestExactlyOneWinnerPerVersion(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		backend string
		rounds  int
		cluster bool
	}{{"mem", 200, false}, {"file", 40, false}, {"mem", 40, true}} {
		name := c.backend
		if c.cluster {
			name += "-cluster"
		}
		t.Run(name, func(t *testing.T) {
			var e *env
			if c.cluster {
				e = newEnvOn(t, nil, redistestCluster(t), c.backend)
			} else {
				e = newEnv(t, c.backend)
			}
			const writers = 64
			for round := 1; round <= c.rounds; round++ {
				v := uint64(round)
				paths := make([]string, writers)
				for w := range writers {
					paths[w] = e.stage("hot", v, fmt.Sprintf("r%d-w%d", round, w))
				}
				errs := make([]error, writers)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for w := range writers {
					wg.Go(func() {
						<-start
						_, errs[w] = e.s.Put(ctx, "hot", v, paths[w], 0, "")
					})
				}
				close(start)
				wg.Wait()
				winner := -1
				for w, err := range errs {
					switch {
					case err == nil && winner >= 0:
						t.Fatalf("round %d: writers %d and %d both won", round, winner, w)
					case err == nil:
						winner = w
					case !errors.Is(err, nserror.ErrConcurrentModification):
						t.Fatalf("round %d: writer %d: %v", round, w, err)
					}
				}
				if winner < 0 {
					t.Fatalf("round %d: no winner", round)
				}
				if got := e.final("hot", v); got != fmt.Sprintf("r%d-w%d", round, winner) {
					t.Fatalf("round %d: final = %q, want the winner's (w%d)", round, got, winner)
				}
				if left := e.stagingLeft("hot"); len(left) != 0 {
					t.Fatalf("round %d: staging objects left: %v", round, left)
				}
			}
		})
	}
}

func TestVersionsAlreadyInStorageSeedTheHead(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "file")
	// A table written before flightns knew it: finals, one stray staging.
	for v := uint64(1); v <= 5; v++ {
		if err := e.objs.Put(ctx, lancemanifest.Dir("old").Manifest(lancemanifest.V2, v), []byte(fmt.Sprintf("old-%d", v))); err != nil {
			t.Fatal(err)
		}
	}
	e.stage("old", 6, "abandoned")
	if _, err := e.put("old", 1, "again"); !errors.Is(err, nserror.ErrConcurrentModification) {
		t.Fatalf("claiming version 1 of a table with 5 versions: %v", err)
	}
	if _, err := e.put("old", 6, "new"); err != nil {
		t.Fatalf("claiming version 6: %v", err)
	}
	loc, err := e.s.GetManifestLocation(ctx, "old", 3)
	if err != nil || loc.Size != int64(len("old-3")) {
		t.Fatalf("an old version is not described: %+v, %v", loc, err)
	}
	all, _, err := e.s.ListVersions(ctx, "old", ListOptions{})
	if err != nil || len(all) != 6 {
		t.Fatalf("ListVersions = %d versions, %v; want 6", len(all), err)
	}
	// lancemanifest.V1-named tables work too.
	for v := uint64(1); v <= 2; v++ {
		if err := e.objs.Put(ctx, lancemanifest.Dir("v1t").Manifest(lancemanifest.V1, v), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	v, p, ok, err := e.s.GetLatestVersion(ctx, "v1t")
	if err != nil || !ok || v != 2 || p != "v1t/_versions/2.manifest" {
		t.Fatalf("lancemanifest.V1 table latest = %d %q %v %v", v, p, ok, err)
	}
}

func TestBadInputIsRefusedBeforeAnyWrite(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	good := e.stage("t", 1, "12345")
	other := e.stage("u", 1, "x")
	cases := []struct {
		name    string
		table   string
		version uint64
		staging string
		size    int64
	}{
		{"empty table", "", 1, good, 0},
		{"oversized table", strings.Repeat("t", 2000), 1, good, 0},
		{"table with ..", "../t", 1, good, 0},
		{"table inside __manifest", "__manifest/x", 1, good, 0},
		{"version 0", "t", 0, good, 0},
		{"version beyond 2^53", "t", 1 << 60, good, 0},
		{"negative size", "t", 1, good, -1},
		{"size that does not match", "t", 1, good, 99},
		{"staging of another table", "t", 1, other, 0},
		{"staging of another version", "t", 2, good, 0},
		{"final name as staging", "t", 1, lancemanifest.Dir("t").Manifest(lancemanifest.V2, 1), 0},
		{"staging outside _versions", "t", 1, "t/x.manifest-1", 0},
		{"missing staging object", "t", 1, lancemanifest.StagingPath(lancemanifest.Dir("t").Manifest(lancemanifest.V2, 1)), 0},
	}
	for _, c := range cases {
		_, err := e.s.Put(ctx, c.table, c.version, c.staging, c.size, "")
		if !errors.Is(err, nserror.ErrInvalidInput) {
			t.Errorf("%s: %v, want InvalidInput", c.name, err)
		}
	}
	_, err := e.s.BatchPut(ctx, []Entry{{Table: "t", Version: 1, StagingPath: good}, {Table: "t", Version: 1, StagingPath: good}})
	if !errors.Is(err, nserror.ErrInvalidInput) {
		t.Errorf("duplicate tables in a batch: %v, want InvalidInput", err)
	}
	if _, err := e.s.BatchPut(ctx, nil); !errors.Is(err, nserror.ErrInvalidInput) {
		t.Errorf("empty batch: %v, want InvalidInput", err)
	}
	// Nothing was claimed, nothing materialized.
	if n, _ := e.rdb.HLen(ctx, string(e.s.k.Heads())).Result(); n != 0 {
		t.Errorf("bad input left %d heads in Redis", n)
	}
	if got := e.final("t", 1); got != "" {
		t.Errorf("bad input materialized %q", got)
	}
	if _, err := New(ctx, Config{Redis: e.rdb, Objects: e.objs, Catalog: "bad{tag}"}); !errors.Is(err, nserror.ErrInvalidInput) {
		t.Errorf("catalog name with braces: %v", err)
	}
}

func TestDeleteVersionsAndDelete(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	for v := uint64(1); v <= 5; v++ {
		if _, err := e.put("t", v, fmt.Sprint(v)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := e.s.DeleteVersions(ctx, "t", []Range{{Start: 1, End: 3}, {Start: 4, End: 5}})
	if err != nil || n != 3 {
		t.Fatalf("DeleteVersions = %d, %v; want 3", n, err)
	}
	all, _, _ := e.s.ListVersions(ctx, "t", ListOptions{})
	if len(all) != 2 || all[0].Version != 3 || all[1].Version != 5 {
		t.Fatalf("versions after delete: %+v", all)
	}
	// A deleted version's manifest stays in storage (Lance deletes its
	// files); reading the version does not record it again.
	if e.final("t", 1) != "1" {
		t.Fatal("the manifest of a deleted version is gone")
	}
	if _, err := e.s.GetManifestLocation(ctx, "t", 1); !errors.Is(err, nserror.ErrTableVersionNotFound) {
		t.Fatalf("reading a deleted version: %v", err)
	}
	if again, _, _ := e.s.ListVersions(ctx, "t", ListOptions{}); len(again) != 2 {
		t.Fatalf("versions after reading a deleted one: %+v", again)
	}
	if n, err := e.s.DeleteVersions(ctx, "t", []Range{{Start: 1, End: 3}}); err != nil || n != 0 {
		t.Fatalf("deleting deleted versions again = %d, %v; want 0", n, err)
	}
	if _, err := e.put("t", 5, "again"); !errors.Is(err, nserror.ErrConcurrentModification) {
		t.Fatalf("a deleted version's number is reused: %v", err)
	}
	if _, err := e.s.DeleteVersions(ctx, "t", []Range{{Start: 3, End: 2}}); !errors.Is(err, nserror.ErrInvalidInput) {
		t.Fatalf("reversed range: %v", err)
	}
	if err := e.s.Delete(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.rdb.Exists(ctx, string(e.s.k.Versions("t")), string(e.s.k.Index("t"))).Result(); n != 0 {
		t.Fatalf("Delete left %d keys", n)
	}
}

// A writer replies before it flips its record; a deletion right after
// the reply must still delete the version (it once kept it, taking the
// staged record for a commit in flight), both alone and in a batch.
func TestDeletionsFinishVersionsWhoseFlipIsPending(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	var failing atomic.Bool
	var failed atomic.Int32
	failing.Store(true)
	f := StepFunc(func(_ context.Context, st Step, _ string, _ uint64) error {
		if st == StepFlipping && failing.Load() {
			failed.Add(1)
			return errors.New("injected: flip fails")
		}
		return nil
	})
	e.step.Store(&f)
	for v := uint64(1); v <= 5; v++ {
		if _, err := e.put("t", v, fmt.Sprint(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.put("u", 1, "u1"); err != nil {
		t.Fatal(err)
	}
	for failed.Load() < 6 { // every writer's flip failed: the records stay staged
		time.Sleep(time.Millisecond)
	}
	failing.Store(false)
	staged := 0
	for v := 1; v <= 5; v++ {
		raw, err := e.rdb.HGet(ctx, string(e.s.k.Versions("t")), fmt.Sprint(v)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(raw, `"staged"`) {
			staged++
		}
	}
	if staged != 5 {
		t.Fatalf("%d of 5 records are staged; the test needs all", staged)
	}
	n, err := e.s.DeleteVersions(ctx, "t", []Range{{Start: 1, End: 3}})
	if err != nil || n != 2 {
		t.Fatalf("DeleteVersions = %d, %v; want 2", n, err)
	}
	b, err := e.s.Commit(ctx, []Entry{{Table: "u", Version: 2, StagingPath: e.stage("u", 2, "u2")}},
		&Extras{Deletions: []redisstate.Deletion{{Table: "t", Ranges: []Range{{Start: 3}}}, {Table: "u", Ranges: []Range{{Start: 1, End: 2}}}}})
	if err != nil || len(b.Deleted) != 2 || b.Deleted[0] != 3 || b.Deleted[1] != 1 {
		t.Fatalf("a batch deleting versions = %+v, %v; want 3 and 1 deleted", b, err)
	}
	for _, tv := range []struct {
		table string
		left  int
	}{{"t", 0}, {"u", 1}} {
		if all, _, err := e.s.ListVersions(ctx, tv.table, ListOptions{}); err != nil || len(all) != tv.left {
			t.Fatalf("versions of %s after the deletions: %+v, %v; want %d", tv.table, all, err, tv.left)
		}
	}
}

// A writer's flip that comes after its version was deleted (a deletion
// helped it first) finds the tombstone: the version was final, nothing is
// wrong, and nothing is logged or re-read from storage.
func TestAFlipAfterTheDeletionIsQuiet(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "mem")
	var logs syncBuffer
	s := e.openLogging("catflip", slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	type writerKey struct{}
	entered, release := make(chan struct{}), make(chan struct{})
	f := StepFunc(func(ctx context.Context, st Step, _ string, _ uint64) error {
		if st == StepFlipping && ctx.Value(writerKey{}) != nil {
			close(entered)
			<-release
		}
		return nil
	})
	e.step.Store(&f)
	wctx := context.WithValue(ctx, writerKey{}, true)
	if _, err := s.Put(wctx, "t", 1, e.stage("t", 1, "1"), 1, ""); err != nil {
		t.Fatal(err)
	}
	<-entered // the writer has replied and waits to flip
	if n, err := s.DeleteVersions(ctx, "t", []Range{{Start: 1}}); err != nil || n != 1 {
		t.Fatalf("DeleteVersions = %d, %v; want 1", n, err)
	}
	close(release)
	s.after.Wait()
	if out := logs.String(); out != "" {
		t.Fatalf("the writer's late flip logged:\n%s", out)
	}
	if _, err := s.GetManifestLocation(ctx, "t", 1); !errors.Is(err, nserror.ErrTableVersionNotFound) {
		t.Fatalf("the deleted version after the writer's flip: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestStoreWorksOnARedisCluster(t *testing.T) {
	ctx := context.Background()
	cl := redistestCluster(t)
	e := newEnvOn(t, nil, cl, "mem")
	for v := uint64(1); v <= 3; v++ {
		if _, err := e.put("t", v, fmt.Sprint(v)); err != nil {
			t.Fatalf("Put on a cluster: %v", err)
		}
	}
	if _, err := e.put("t", 3, "late"); !errors.Is(err, nserror.ErrConcurrentModification) {
		t.Fatalf("conflict on a cluster: %v", err)
	}
	b, err := e.s.BatchPut(ctx, []Entry{
		{Table: "a", Version: 1, StagingPath: e.stage("a", 1, "a1")},
		{Table: "t", Version: 4, StagingPath: e.stage("t", 4, "t4")},
	})
	if err != nil || len(b.Locations) != 2 {
		t.Fatalf("BatchPut on a cluster = %+v, %v", b, err)
	}
	heads, seq, err := e.s.LatestVersions(ctx, []string{"a", "t", "none"})
	if err != nil || heads[0] != 1 || heads[1] != 4 || heads[2] != 0 || seq < b.Seq {
		t.Fatalf("LatestVersions = %v @%d, %v", heads, seq, err)
	}
	// Kill the master that holds the catalog: with no replica the catalog
	// is unavailable, and errors say so rather than succeed wrongly.
	owner, err := cl.NodeForKey(ctx, string(e.s.k.Heads()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(owner); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 3e9)
	defer cancel()
	if _, err := e.s.Put(cctx, "t", 5, e.stage("t", 5, "t5"), 0, ""); err == nil {
		t.Fatal("Put succeeded with the catalog's master dead")
	}
	if got := e.final("t", 5); got != "" {
		t.Fatalf("a commit materialized while Redis was down: %q", got)
	}
}

// A caller that stops waiting once its version is committed (a client
// that hung up) does not leave the version half-finished: the flip and
// the staging cleanup after the commit point run to their end.
func TestACallerGoneAfterTheCommitPointDoesNotCutTheRepairShort(t *testing.T) {
	for _, backend := range []string{"mem", "file"} {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t, backend)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var flipped atomic.Bool
			f := StepFunc(func(_ context.Context, st Step, table string, v uint64) error {
				switch st {
				case StepFinalized:
					cancel() // the caller hangs up just past the commit point
				case StepFlipped:
					flipped.Store(true)
				}
				return nil
			})
			e.step.Store(&f)
			p := e.stage("t", 1, "mine")
			loc, err := e.s.Put(ctx, "t", 1, p, 4, "")
			if err != nil || loc.Version != 1 {
				t.Fatalf("Put = %+v, %v; want version 1 (it is committed)", loc, err)
			}
			e.s.after.Wait() // the flip follows the reply
			if !flipped.Load() {
				t.Error("the record was not flipped")
			}
			if left := e.stagingLeft("t"); len(left) != 0 {
				t.Errorf("staging left behind: %v", left)
			}
			if got := e.final("t", 1); got != "mine" {
				t.Errorf("final manifest %q", got)
			}
		})
	}
}

// A writer replies before its record is flipped, but not before it has
// read its claim back: Redis losing the claim once the final manifest
// exists, with its epoch kept (a failover to a replica that had not seen
// it), is caught there, and the head raised from storage, so the version
// acknowledged is the one the next reader sees. The test takes the claim
// away right after the promotion and reads the head before the flip that
// follows the reply has run.
func TestAClaimLostBeforeTheReplyIsReadBackFromStorage(t *testing.T) {
	for _, backend := range []string{"mem", "file"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, backend)
			if _, err := e.put("t", 1, "v1"); err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			f := StepFunc(func(ctx context.Context, st Step, table string, v uint64) error {
				switch {
				case st == StepFinalized && v == 2:
					// The claim is gone, the head back at 1.
					if err := e.rdb.HDel(ctx, string(e.s.k.Versions(table)), "2").Err(); err != nil {
						return err
					}
					return e.rdb.HSet(ctx, string(e.s.k.Heads()), table, "1").Err()
				case st == StepFlipped && v == 2:
					<-release // (the flip found nothing to flip: not reached)
				}
				return nil
			})
			e.step.Store(&f)
			loc, err := e.put("t", 2, "v2")
			if err != nil || loc.Version != 2 {
				t.Fatalf("Put = %+v, %v", loc, err)
			}
			head, _, ok, err := e.s.GetLatestVersion(ctx, "t")
			close(release)
			if err != nil || !ok || head != 2 {
				t.Fatalf("latest right after the reply = %d %v %v, want 2", head, ok, err)
			}
			if got := e.final("t", 2); got != "v2" {
				t.Fatalf("final v2 = %q", got)
			}
		})
	}
}

// The reply does not wait for the flip and the staging cleanup: a writer
// whose repair is held still gets its answer, and the repair finishes
// after it (Close waits for it).
func TestTheReplyDoesNotWaitForTheFlip(t *testing.T) {
	e := newEnv(t, "mem")
	hold := make(chan struct{})
	var flipped atomic.Bool
	f := StepFunc(func(_ context.Context, st Step, _ string, v uint64) error {
		if st == StepFlipped && v == 1 {
			<-hold
			flipped.Store(true)
		}
		return nil
	})
	e.step.Store(&f)
	if _, err := e.put("t", 1, "v1"); err != nil {
		t.Fatal(err)
	}
	if flipped.Load() {
		t.Fatal("the flip ran before the reply")
	}
	close(hold)
	e.s.after.Wait()
	if !flipped.Load() {
		t.Fatal("the flip did not run after the reply")
	}
	if left := e.stagingLeft("t"); len(left) != 0 {
		t.Fatalf("staging left after the repair: %v", left)
	}
}

// On an object store reached over a network, a commit waits for two round
// trips to it, not three: the staging manifest is read with its
// attributes in one GET before the claim, and the promotion is one
// conditional PUT of those bytes (no second read after the claim). The
// requests are counted at an HTTP proxy in front of the S3 protocol
// server.
func TestAnS3CommitReadsItsStagingManifestOnceBeforeTheClaim(t *testing.T) {
	ctx := context.Background()
	r := redistest.Start(t)
	proxy := s3test.StartFaultProxy(t, s3test.Start(t, "cat").URL)
	var mu sync.Mutex
	var seen []string
	var afterClaim []string // requests that started after the claim
	var claimedAt atomic.Pointer[time.Time]
	var tracing atomic.Bool
	traced := make(chan struct{})
	proxy.Trace = func(r s3proxy.Request) {
		if tracing.Load() {
			start, req := r.Start, r.Method+" "+r.Path[strings.LastIndex(r.Path, "/")+1:]
			mu.Lock()
			seen = append(seen, req)
			if c := claimedAt.Load(); c != nil && start.After(*c) {
				afterClaim = append(afterClaim, req)
			}
			mu.Unlock()
		}
	}
	objs, err := objstore.Open(ctx, proxy.URI("cat", "root"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	s, err := New(ctx, Config{Redis: r.Client(), Objects: objs, Catalog: "s3trips", Logger: quiet,
		Step: func(_ context.Context, st Step, _ string, v uint64) error {
			switch {
			case st == StepClaimed && v == 2:
				now := time.Now()
				claimedAt.Store(&now)
			case st == StepFlipped && v == 2:
				<-traced // the staging object's deletion waits until the commit's requests are counted
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	put := func(v uint64) (string, Location) {
		staging := lancemanifest.StagingPath(lancemanifest.Dir("t").Manifest(lancemanifest.V2, v))
		if err := objs.Put(ctx, staging, []byte("manifest one")); err != nil {
			t.Fatal(err)
		}
		tracing.Store(v == 2)
		loc, err := s.Put(ctx, "t", v, staging, 12, "")
		tracing.Store(false)
		if v == 2 {
			close(traced)
		}
		if err != nil || loc.Version != v {
			t.Fatalf("Put = %+v, %v", loc, err)
		}
		s.after.Wait()
		return staging, loc
	}
	put(1) // (a table new to Redis has its head read from a listing first)
	staging, loc := put(2)
	stagingName, finalName := staging[strings.LastIndex(staging, "/")+1:], loc.Path[strings.LastIndex(loc.Path, "/")+1:]
	got := map[string]int{}
	mu.Lock()
	for _, req := range seen {
		got[req]++
	}
	mu.Unlock()
	want := map[string]int{"GET " + stagingName: 1, "PUT " + finalName: 1}
	if !maps.Equal(got, want) {
		t.Fatalf("requests during the commit: %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(afterClaim, []string{"PUT " + finalName}) {
		t.Fatalf("requests after the claim: %v, want only the final manifest's PUT", afterClaim)
	}
	if b, err := objs.Get(ctx, loc.Path); err != nil || string(b) != "manifest one" {
		t.Fatalf("final manifest %q, %v", b, err)
	}
}

// Listing a table that has no versions anywhere records its head as 0, so
// that the next listing and the first claim read nothing from storage
// (Lance lists a new table's versions twice before its first commit); a
// table whose versions are only in storage is seeded from them.
func TestListingAnEmptyTableRecordsItsHead(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "file")
	if locs, _, err := e.s.ListVersions(ctx, "fresh", ListOptions{}); err != nil || len(locs) != 0 {
		t.Fatalf("ListVersions of a new table = %v, %v", locs, err)
	}
	if h, err := e.rdb.HGet(ctx, string(e.s.k.Heads()), "fresh").Result(); err != nil || h != "0" {
		t.Fatalf("head after listing a new table = %q, %v; want 0", h, err)
	}
	if _, err := e.put("fresh", 1, "v1"); err != nil {
		t.Fatalf("the first commit after the listing: %v", err)
	}
	if locs, _, err := e.s.ListVersions(ctx, "fresh", ListOptions{}); err != nil || len(locs) != 1 || locs[0].Version != 1 {
		t.Fatalf("ListVersions after the first commit = %+v, %v", locs, err)
	}
}

// A writer that read its staged manifest to promote it hands the bytes
// back in its Location (the catalog's statistics come from them); one
// that promoted by a rename read nothing, and hands back nothing.
func TestLocationCarriesThePromotedManifest(t *testing.T) {
	for backend, want := range map[string]string{"mem": "manifest-bytes", "file": ""} {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t, backend)
			loc, err := e.put("t", 1, "manifest-bytes")
			if err != nil {
				t.Fatal(err)
			}
			if string(loc.Manifest) != want {
				t.Fatalf("Location.Manifest = %q, want %q", loc.Manifest, want)
			}
			if got := e.final("t", 1); got != "manifest-bytes" {
				t.Fatalf("final manifest = %q", got)
			}
		})
	}
}

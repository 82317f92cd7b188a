package idempotency

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/nserror"
)

// runs counts the runs of a mutation that answers reply.
type runs struct{ n atomic.Int32 }

func (r *runs) answer(reply Reply) func() Reply {
	return func() Reply { r.n.Add(1); return reply }
}

// allowed authorizes every request.
func allowed() error { return nil }

func testStore(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := New(redisstate.New(rdb, "cat", 0), 200*time.Millisecond)
	var r runs
	ok := Reply{OK: true, Body: []byte(`{"version":3}`)}

	// The first request runs; its retry gets its answer and runs nothing.
	got, replayed, err := s.Do(ctx, "ana", "CreateTableVersion", "k-1", []byte("body"), allowed, r.answer(ok))
	if err != nil || replayed || string(got.Body) != `{"version":3}` || r.n.Load() != 1 {
		t.Fatalf("first: %+v %v %v, %d runs", got, replayed, err, r.n.Load())
	}
	got, replayed, err = s.Do(ctx, "ana", "CreateTableVersion", "k-1", []byte("body"), allowed, r.answer(Reply{OK: true, Body: []byte("other")}))
	if err != nil || !replayed || string(got.Body) != `{"version":3}` || r.n.Load() != 1 {
		t.Fatalf("retry: %+v %v %v, %d runs", got, replayed, err, r.n.Load())
	}
	// Another body, or another operation, with the key: refused.
	for _, c := range []struct{ op, body string }{{"CreateTableVersion", "other body"}, {"DropTable", "body"}} {
		_, _, err = s.Do(ctx, "ana", c.op, "k-1", []byte(c.body), allowed, r.answer(ok))
		var conflict *Conflict
		if !errors.As(err, &conflict) || conflict.InProgress || nserror.CodeOf(err) != nserror.InvalidInput || r.n.Load() != 1 {
			t.Fatalf("%s %q with a used key: %v, %d runs", c.op, c.body, err, r.n.Load())
		}
	}
	// Another principal's same key is another key.
	if _, replayed, err = s.Do(ctx, "bob", "CreateTableVersion", "k-1", []byte("body"), allowed, r.answer(ok)); err != nil || replayed || r.n.Load() != 2 {
		t.Fatalf("bob's k-1: %v %v, %d runs", replayed, err, r.n.Load())
	}
	// A settled refusal is replayed; an unknown outcome frees the key.
	exists := ReplyOf(nil, nserror.New(nserror.TableAlreadyExists, "table t exists"))
	if got, _, _ = s.Do(ctx, "ana", "DeclareTable", "k-2", nil, allowed, r.answer(exists)); nserror.CodeOf(got.Err()) != nserror.TableAlreadyExists {
		t.Fatalf("refusal: %+v", got)
	}
	if got, replayed, _ = s.Do(ctx, "ana", "DeclareTable", "k-2", nil, allowed, r.answer(ok)); !replayed || got.Err().Error() != "table t exists" {
		t.Fatalf("refusal replayed: %+v %v", got, replayed)
	}
	down := ReplyOf(nil, nserror.New(nserror.ServiceUnavailable, "redis is down"))
	n := r.n.Load()
	_, _, _ = s.Do(ctx, "ana", "DeclareTable", "k-3", nil, allowed, r.answer(down))
	if got, replayed, _ = s.Do(ctx, "ana", "DeclareTable", "k-3", nil, allowed, r.answer(ok)); replayed || !got.OK || r.n.Load() != n+2 {
		t.Fatalf("after an unknown outcome: %+v %v, %d runs", got, replayed, r.n.Load()-n)
	}
	// A retry while the first runs: refused, in progress.
	started, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _, _ = s.Do(ctx, "ana", "DeclareTable", "k-4", nil, allowed, func() Reply { close(started); <-release; return ok })
	}()
	<-started
	_, _, err = s.Do(ctx, "ana", "DeclareTable", "k-4", nil, allowed, r.answer(ok))
	var conflict *Conflict
	if !errors.As(err, &conflict) || !conflict.InProgress {
		t.Fatalf("a retry while the first runs: %v", err)
	}
	close(release)
	// Past the window the key is free again.
	time.Sleep(300 * time.Millisecond)
	n = r.n.Load()
	if _, replayed, err = s.Do(ctx, "ana", "CreateTableVersion", "k-1", []byte("body"), allowed, r.answer(ok)); replayed || err != nil || r.n.Load() != n+1 {
		t.Fatalf("after the window: %v %v", replayed, err)
	}
	// Bad keys.
	for _, k := range []string{"", "a b", "é", string(make([]byte, MaxKeyBytes+1))} {
		if _, _, err := s.Do(ctx, "ana", "X", k, nil, allowed, r.answer(ok)); nserror.CodeOf(err) != nserror.InvalidInput {
			t.Errorf("key %q: %v", k, err)
		}
	}
}

func TestRetriesGetTheFirstAnswer(t *testing.T) {
	testStore(t, redistest.Start(t).Client())
}

func TestRetriesGetTheFirstAnswerOnACluster(t *testing.T) {
	testStore(t, redistest.StartCluster(t, 3, 0).Client())
}

// A server that dies mid-request holds its key only for the lease; the
// retry then runs. Redis out of reach runs nothing.
func TestAReservationOutlivesNoCrashAndRedisDownRunsNothing(t *testing.T) {
	srv := redistest.Start(t)
	s := New(redisstate.New(srv.Client(), "cat", 0), time.Minute)
	s.lease = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	// The "crash": the reservation is made and never finished.
	_, _ = srv.Client().SetArgs(ctx, string(s.rs.Idempotency(hash("ana", "k"))), `{"f":"`+fingerprint("Op", nil)+`","o":"dead"}`,
		redis.SetArgs{Mode: "NX", TTL: s.lease}).Result()
	var r runs
	if _, _, err := s.Do(ctx, "ana", "Op", "k", nil, allowed, r.answer(Reply{OK: true})); err == nil {
		t.Fatal("the dead request's key was free at once")
	}
	time.Sleep(150 * time.Millisecond)
	if _, _, err := s.Do(ctx, "ana", "Op", "k", nil, allowed, r.answer(Reply{OK: true})); err != nil || r.n.Load() != 1 {
		t.Fatalf("after the lease: %v, %d runs", err, r.n.Load())
	}
	cancel()
	down := New(redisstate.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), "cat", 0), time.Minute)
	if _, _, err := down.Do(context.Background(), "ana", "Op", "k", nil, allowed, r.answer(Reply{OK: true})); nserror.CodeOf(err) != nserror.ServiceUnavailable || r.n.Load() != 1 {
		t.Fatalf("redis down: %v, %d runs", err, r.n.Load())
	}
}

// A retry is authorized before its key is looked at: once its caller may
// no longer make the request (a grant revoked), it gets the refusal a
// first request gets, never the first answer, and the record stays: the
// caller allowed again gets the first answer, once more without a run.
func TestARetryIsAuthorizedBeforeItIsAnswered(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	s := New(redisstate.New(rdb, "cat", 0), time.Minute)
	var r runs
	secret := Reply{OK: true, Body: []byte(`{"storage_options":{"aws_secret_access_key":"s3cr3t"}}`)}
	if got, replayed, err := s.Do(ctx, "ana", "DeclareTable", "k", []byte("body"), allowed, r.answer(secret)); err != nil || replayed || !got.OK {
		t.Fatalf("first: %+v %v %v", got, replayed, err)
	}
	record := func() string {
		t.Helper()
		v, err := rdb.Get(ctx, string(s.rs.Idempotency(hash("ana", "k")))).Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	kept := record()

	revoked := nserror.New(nserror.PermissionDenied, `this operation needs the write role on "a$t"; "ana" has read there`)
	hidden := nserror.New(nserror.TableNotFound, `table "a$t" does not exist`)
	for _, refusal := range []error{revoked, hidden} {
		asked := 0
		got, replayed, err := s.Do(ctx, "ana", "DeclareTable", "k", []byte("body"),
			func() error { asked++; return refusal }, r.answer(Reply{OK: true}))
		if !errors.Is(err, refusal) || replayed || got.OK || len(got.Body) > 0 || asked != 1 || r.n.Load() != 1 {
			t.Fatalf("a refused retry: %+v replayed %v, err %v (want %v), authorized %d times, %d runs", got, replayed, err, refusal, asked, r.n.Load())
		}
		if after := record(); after != kept {
			t.Fatalf("a refused retry changed the record: %s → %s", kept, after)
		}
	}
	// A refused caller learns nothing of a key in use by another request
	// either: the refusal comes first.
	if _, _, err := s.Do(ctx, "ana", "DropTable", "k", []byte("other"), func() error { return revoked }, r.answer(Reply{OK: true})); !errors.Is(err, revoked) {
		t.Fatalf("a refused caller's conflicting key: %v", err)
	}
	if got, replayed, err := s.Do(ctx, "ana", "DeclareTable", "k", []byte("body"), allowed, r.answer(Reply{OK: true})); err != nil || !replayed ||
		string(got.Body) != string(secret.Body) || r.n.Load() != 1 {
		t.Fatalf("the retry allowed again: %+v %v %v, %d runs", got, replayed, err, r.n.Load())
	}
}

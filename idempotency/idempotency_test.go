package idempotency

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/testutil/redistest"
	"github.com/flightns/flightns/nserror"
)

// runs counts the runs of a mutation that answers reply.
type runs struct{ n atomic.Int32 }

func (r *runs) answer(reply Reply) func() Reply {
	return func() Reply { r.n.Add(1); return reply }
}

func testStore(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := New(rdb, "cat", 200*time.Millisecond)
	var r runs
	ok := Reply{OK: true, Body: []byte(`{"version":3}`)}

	// The first request runs; its retry gets its answer and runs nothing.
	got, replayed, err := s.Do(ctx, "ana", "CreateTableVersion", "k-1", []byte("body"), r.answer(ok))
	if err != nil || replayed || string(got.Body) != `{"version":3}` || r.n.Load() != 1 {
		t.Fatalf("first: %+v %v %v, %d runs", got, replayed, err, r.n.Load())
	}
	got, replayed, err = s.Do(ctx, "ana", "CreateTableVersion", "k-1", []byte("body"), r.answer(Reply{OK: true, Body: []byte("other")}))
	if err != nil || !replayed || string(got.Body) != `{"version":3}` || r.n.Load() != 1 {
		t.Fatalf("retry: %+v %v %v, %d runs", got, replayed, err, r.n.Load())
	}
	// Another body, or another operation, with the key: refused.
	for _, c := range []struct{ op, body string }{{"CreateTableVersion", "other body"}, {"DropTable", "body"}} {
		_, _, err = s.Do(ctx, "ana", c.op, "k-1", []byte(c.body), r.answer(ok))
		var conflict *Conflict
		if !errors.As(err, &conflict) || conflict.InProgress || nserror.CodeOf(err) != nserror.InvalidInput || r.n.Load() != 1 {
			t.Fatalf("%s %q with a used key: %v, %d runs", c.op, c.body, err, r.n.Load())
		}
	}
	// Another principal's same key is another key.
	if _, replayed, err = s.Do(ctx, "bob", "CreateTableVersion", "k-1", []byte("body"), r.answer(ok)); err != nil || replayed || r.n.Load() != 2 {
		t.Fatalf("bob's k-1: %v %v, %d runs", replayed, err, r.n.Load())
	}
	// A settled refusal is replayed; an unknown outcome frees the key.
	exists := ReplyOf(nil, nserror.New(nserror.TableAlreadyExists, "table t exists"))
	if got, _, _ = s.Do(ctx, "ana", "DeclareTable", "k-2", nil, r.answer(exists)); nserror.CodeOf(got.Err()) != nserror.TableAlreadyExists {
		t.Fatalf("refusal: %+v", got)
	}
	if got, replayed, _ = s.Do(ctx, "ana", "DeclareTable", "k-2", nil, r.answer(ok)); !replayed || got.Err().Error() != "table t exists" {
		t.Fatalf("refusal replayed: %+v %v", got, replayed)
	}
	down := ReplyOf(nil, nserror.New(nserror.ServiceUnavailable, "redis is down"))
	n := r.n.Load()
	_, _, _ = s.Do(ctx, "ana", "DeclareTable", "k-3", nil, r.answer(down))
	if got, replayed, _ = s.Do(ctx, "ana", "DeclareTable", "k-3", nil, r.answer(ok)); replayed || !got.OK || r.n.Load() != n+2 {
		t.Fatalf("after an unknown outcome: %+v %v, %d runs", got, replayed, r.n.Load()-n)
	}
	// A retry while the first runs: refused, in progress.
	started, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _, _ = s.Do(ctx, "ana", "DeclareTable", "k-4", nil, func() Reply { close(started); <-release; return ok })
	}()
	<-started
	_, _, err = s.Do(ctx, "ana", "DeclareTable", "k-4", nil, r.answer(ok))
	var conflict *Conflict
	if !errors.As(err, &conflict) || !conflict.InProgress {
		t.Fatalf("a retry while the first runs: %v", err)
	}
	close(release)
	// Past the window the key is free again.
	time.Sleep(300 * time.Millisecond)
	n = r.n.Load()
	if _, replayed, err = s.Do(ctx, "ana", "CreateTableVersion", "k-1", []byte("body"), r.answer(ok)); replayed || err != nil || r.n.Load() != n+1 {
		t.Fatalf("after the window: %v %v", replayed, err)
	}
	// Bad keys.
	for _, k := range []string{"", "a b", "é", string(make([]byte, MaxKeyBytes+1))} {
		if _, _, err := s.Do(ctx, "ana", "X", k, nil, r.answer(ok)); nserror.CodeOf(err) != nserror.InvalidInput {
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
	s := New(srv.Client(), "cat", time.Minute)
	s.lease = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	// The "crash": the reservation is made and never finished.
	_, _ = s.rdb.SetArgs(ctx, s.keys.Idempotency(hash("ana", "k")), `{"f":"`+fingerprint("Op", nil)+`","o":"dead"}`,
		redis.SetArgs{Mode: "NX", TTL: s.lease}).Result()
	var r runs
	if _, _, err := s.Do(ctx, "ana", "Op", "k", nil, r.answer(Reply{OK: true})); err == nil {
		t.Fatal("the dead request's key was free at once")
	}
	time.Sleep(150 * time.Millisecond)
	if _, _, err := s.Do(ctx, "ana", "Op", "k", nil, r.answer(Reply{OK: true})); err != nil || r.n.Load() != 1 {
		t.Fatalf("after the lease: %v, %d runs", err, r.n.Load())
	}
	cancel()
	down := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), "cat", time.Minute)
	if _, _, err := down.Do(context.Background(), "ana", "Op", "k", nil, r.answer(Reply{OK: true})); nserror.CodeOf(err) != nserror.ServiceUnavailable || r.n.Load() != 1 {
		t.Fatalf("redis down: %v, %d runs", err, r.n.Load())
	}
}

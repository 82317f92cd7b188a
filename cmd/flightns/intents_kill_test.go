package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/namespace"
)

// A tag's change, killed -9 at each of its seams and restarted: the
// maintainer of the new process settles the intent the dead one left from
// storage — the tag made has its event once, the tag not made has none —
// and leaves no intent behind.
func TestKill9AroundAChangeMadeInStorage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		step namespace.Step
		made bool
	}{{namespace.StepIntended, false}, {namespace.StepChangedInStorage, true}} {
		t.Run(string(c.step), func(t *testing.T) {
			work := t.TempDir()
			s := startServer(t, work, []string{"FLIGHTNS_DEBUG_STEP_DELAY=" + string(c.step) + "=10m"})
			loc := declareTable(t, s.rest, "k", "t")
			if code := commitVersion(t, s.rest, "k$t", loc, 1); code != http.StatusOK {
				t.Fatalf("commit: HTTP %d", code)
			}
			go func() { // held at the step until the kill
				resp, err := http.Post("http://"+s.rest+"/v1/table/k$t/tags/create", "application/json", strings.NewReader(`{"tag":"gold","version":1}`))
				if err == nil {
					_ = resp.Body.Close()
				}
			}()
			s.waitLog(`msg="commit held at a protocol step"`, 30*time.Second)
			if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			s.wait()
			waitGone(t, s.redisPid, "the private redis-server of a killed flightns")
			_, err := os.Stat(filepath.Join(strings.TrimPrefix(loc, "file://"), "_refs", "tags", "gold.json"))
			if made := err == nil; made != c.made {
				t.Fatalf("the tag's file is there: %v, want %v", made, c.made)
			}

			s2 := startServer(t, work, nil, "--maintain-interval", "100ms", "--intent-grace", "1ms")
			rdb := privateRedis(t, work)
			deadline := time.Now().Add(30 * time.Second)
			for {
				n, events := intentsLeft(t, rdb), tagEvents(t, s2.rest)
				if n == 0 && (events == 1) == c.made && events <= 1 {
					time.Sleep(500 * time.Millisecond) // a few more passes: still once
					if again := tagEvents(t, s2.rest); again != events {
						t.Fatalf("%d table.tag.created events, then %d", events, again)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 30 s: %d intents left, %d table.tag.created events (the tag made: %v)", n, events, c.made)
				}
				time.Sleep(100 * time.Millisecond)
			}
			s2.stop()
		})
	}
}

// privateRedis is a client of the private Redis of the server in work.
func privateRedis(t *testing.T, work string) *redis.Client {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(work, "flightns-data", "redis", "redis.url"))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := redis.ParseURL(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// intentsLeft counts the intents in Redis, of every catalog.
func intentsLeft(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*:intents").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, k := range keys {
		m, err := rdb.HLen(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	return n
}

// tagEvents counts the table.tag.created events of the change feed.
func tagEvents(t *testing.T, rest string) int {
	t.Helper()
	code, body := httpGet(t, "http://"+rest+"/v1/changes?follow=false&type=table.tag.created")
	if code != http.StatusOK {
		t.Fatalf("the change feed: HTTP %d %s", code, body)
	}
	return strings.Count(body, "event: table.tag.created\n")
}

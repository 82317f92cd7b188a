package reliability

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/objstore"
)

// A full disk on file://: the server's writes (final manifests, commit
// records, __manifest segments) fail with ENOSPC, injected at the object
// store's seam in process (a real small filesystem needs root). Every
// failed request answers ServiceUnavailable (17, HTTP 503: the client may
// retry), nothing acknowledged is lost, and once space is back commits
// succeed again and the history is linearizable.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	env := nstest.New(t)
	var full atomic.Bool
	objs, err := objstore.OpenWith(ctx, "file://"+env.Root, objstore.Options{Faults: objstore.DiskFull(full.Load)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	svc := env.Open(t, func(c *namespace.Config) { c.Objects = objs })
	ts := httptest.NewServer(restserver.New(svc, restserver.Options{Logger: nstest.Quiet}))
	t.Cleanup(ts.Close)
	rc := newREST(strings.TrimPrefix(ts.URL, "http://"))
	cat := setupCatalog(t, rc, "file://"+env.Root, 2)
	h := newHistory()
	w := &worker{cat: cat, h: h, rest: rc, restOnly: true, rng: rand.New(rand.NewPCG(1, 2))}

	round := func(n int) {
		for range n {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			t0 := w.rng.IntN(2)
			w.read(cctx, t0)
			if w.rng.IntN(3) == 0 {
				w.read(cctx, 1-t0)
				w.create(cctx, []int{t0, 1 - t0})
			} else {
				w.create(cctx, []int{t0})
			}
			cancel()
		}
	}
	round(pick(20, 200))
	before := h.counts()

	full.Store(true)
	failed, unavailable := 0, 0
	for i := range pick(20, 200) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		w.read(cctx, i%2)
		w.create(cctx, []int{i % 2})
		if w.lastCode == 17 {
			unavailable++
		}
		if w.lastCode != 0 {
			failed++
			// 14 and 13: the version is taken (by a claim that could not
			// be finalized yet) or skipped: definite, and correct.
			if w.lastCode != 17 && w.lastCode != 14 && w.lastCode != 13 {
				t.Errorf("a commit on a full disk answered code %d, want 17 (ServiceUnavailable)", w.lastCode)
			}
		}
		cancel()
	}
	// A catalog mutation on a full disk is in the commit log but cannot be
	// made durable: it waits (it is acknowledged only once durable) until
	// the caller gives up, an unknown outcome.
	mctx, cancel := context.WithTimeout(ctx, time.Second)
	r, err := rc.post(mctx, "/v1/namespace/full/create", map[string]any{})
	cancel()
	if err == nil && (r.Status == http.StatusOK || r.Status < 500) {
		t.Errorf("CreateNamespace on a full disk: HTTP %d %s, want a timeout or 503", r.Status, r.Body)
	}
	full.Store(false)
	// Once space is back the waiting mutation becomes durable and new ones
	// succeed.
	rc.must(t, "/v1/namespace/full2/create", map[string]any{}, nil)

	round(pick(20, 200))
	after := h.counts()
	if after.OK <= before.OK {
		t.Fatalf("no commit succeeded after space came back")
	}
	checkStorage(t, cat, h, rc)
	checkLinearizable(t, h, false)
	t.Logf("disk full: %d commits refused, %d of them ServiceUnavailable (the others: the version is taken by a claim waiting for space); history %+v", failed, unavailable, after)
	if unavailable == 0 {
		t.Fatal("no commit failed with ServiceUnavailable on the full disk: the fault never hit")
	}
}

package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/s3proxy"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/objstore"
)

// condStores opens the same bucket directly on MinIO and through a proxy
// that honours If-None-Match: * on CopyObject (as AWS S3 does), its
// requests traced.
func condStores(t *testing.T) (direct, honouring *objstore.Store, trace func() []s3proxy.Request) {
	t.Helper()
	ctx := context.Background()
	srv := s3test.Start(t, "cond")
	p := s3test.StartFaultProxy(t, srv.URL)
	p.HonourCopyCondition(minioproc.AccessKey, minioproc.SecretKey, minioproc.Region)
	var mu sync.Mutex
	var reqs []s3proxy.Request
	p.Trace = func(r s3proxy.Request) { mu.Lock(); reqs = append(reqs, r); mu.Unlock() }
	var err error
	if direct, err = objstore.Open(ctx, srv.URI("cond", "root")); err != nil {
		t.Fatal(err)
	}
	if honouring, err = objstore.Open(ctx, p.URI("cond", "root")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.Close(); _ = honouring.Close() })
	return direct, honouring, func() []s3proxy.Request {
		mu.Lock()
		defer mu.Unlock()
		out := reqs
		reqs = nil
		return out
	}
}

// The probe tells a store that overwrites on a conditional copy (MinIO)
// from one that refuses it, and leaves no scratch object behind.
func TestTheProbeTellsWhetherAStoreHonoursAConditionalCopy(t *testing.T) {
	ctx := context.Background()
	direct, honouring, _ := condStores(t)
	ok, how, err := direct.ProbeConditionalCopy(ctx)
	if err != nil || ok || !strings.Contains(how, "overwrote") {
		t.Fatalf("MinIO: %v %q %v", ok, how, err)
	}
	ok, how, err = honouring.ProbeConditionalCopy(ctx)
	if err != nil || !ok || !strings.Contains(how, "412") {
		t.Fatalf("a store that honours the condition: %v %q %v", ok, how, err)
	}
	if left, err := direct.ListAll(ctx, ""); err != nil || len(left) != 0 {
		t.Fatalf("the probe left %v (%v)", left, err)
	}
	dir, err := objstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := dir.ProbeConditionalCopy(ctx); ok || err != nil {
		t.Fatalf("a directory: %v %v", ok, err)
	}
	dir.SetConditionalCopy(true)
	if dir.ConditionalCopy() {
		t.Fatal("a directory promotes with a link, never a copy")
	}
}

// With the condition proven, a promotion of a source not read is one
// server-side copy (no GET, one PUT carrying the copy source); it keeps
// every answer of the GET and PUT path: an existing destination with
// other bytes refuses, with the same bytes is identical, a missing source
// is not found; and of racing promotions onto one key exactly one wins.
// (The kill -9 runs of tests/reliability found the proxy refusing keys
// with a '$', which it signed escaped twice.)
func TestPromotionsCopyOnTheServerWhereTheStoreHonoursIt(t *testing.T) {
	ctx := context.Background()
	_, s, trace := condStores(t)
	s.SetConditionalCopy(true)
	if !s.ConditionalCopy() {
		t.Fatal("conditional copy not on")
	}
	// A table's directory as the catalog names it: its '$' is escaped
	// in the request's path, and the store must see the same key.
	const d = "ab12cd34_sales$orders"
	if err := s.Put(ctx, d+"/staging-1", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	trace()
	res, err := s.PromoteIfAbsent(ctx, d+"/staging-1", d+"/1.manifest", objstore.WriteOptions{})
	if err != nil || res != objstore.Copied {
		t.Fatalf("promote: %v %v", res, err)
	}
	reqs := trace()
	if len(reqs) != 1 || reqs[0].Method != "PUT" || !strings.HasSuffix(reqs[0].Path, "/"+d+"/1.manifest") {
		t.Fatalf("the promotion's requests: %+v", reqs)
	}
	if got, err := s.Get(ctx, d+"/1.manifest"); err != nil || string(got) != "v1" {
		t.Fatalf("final: %q %v", got, err)
	}

	if err := s.Put(ctx, d+"/staging-other", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PromoteIfAbsent(ctx, d+"/staging-other", d+"/1.manifest", objstore.WriteOptions{}); !errors.Is(err, objstore.ErrAlreadyExists) {
		t.Fatalf("onto other bytes: %v", err)
	}
	if err := s.Put(ctx, d+"/staging-same", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if res, err := s.PromoteIfAbsent(ctx, d+"/staging-same", d+"/1.manifest", objstore.WriteOptions{}); err != nil || res != objstore.AlreadyIdentical {
		t.Fatalf("onto the same bytes: %v %v", res, err)
	}
	if _, err := s.PromoteIfAbsent(ctx, d+"/staging-missing", d+"/2.manifest", objstore.WriteOptions{}); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("a missing source: %v", err)
	}
	if got, err := s.Get(ctx, d+"/1.manifest"); err != nil || string(got) != "v1" {
		t.Fatalf("final after the refusals: %q %v", got, err)
	}

	for round := range 10 {
		dst := fmt.Sprintf("race/%d.manifest", round)
		const n = 4
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			src := fmt.Sprintf("race/staging-%d-%d", round, i)
			if err := s.Put(ctx, src, []byte(src)); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { _, errs[i] = s.PromoteIfAbsent(ctx, src, dst, objstore.WriteOptions{}) })
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won < 0:
				won = i
			case err == nil:
				t.Fatalf("round %d: promotions %d and %d both succeeded", round, won, i)
			case !errors.Is(err, objstore.ErrAlreadyExists):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no promotion succeeded: %v", round, errs)
		}
		if got, err := s.Get(ctx, dst); err != nil || string(got) != fmt.Sprintf("race/staging-%d-%d", round, won) {
			t.Fatalf("round %d: the winner was %d, the object holds %q (%v)", round, won, got, err)
		}
	}
}

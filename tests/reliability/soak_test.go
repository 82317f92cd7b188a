package reliability

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sample is one look at the server process.
type sample struct {
	at         time.Duration
	rssKB      int64
	fds        int
	goroutines float64
	heapBytes  float64 // the Go heap in use (go_memstats_heap_inuse_bytes)
	commits    int64   // versions committed by then
}

func (s *server) sample(start time.Time) (sample, error) {
	pid := s.Pid()
	out := sample{at: time.Since(start)}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			out.rssKB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return out, err
	}
	out.fds = len(ents)
	if out.goroutines, err = s.metric("go_goroutines"); err != nil {
		return out, err
	}
	out.heapBytes, err = s.metric("go_memstats_heap_inuse_bytes")
	return out, err
}

// soakDuration is FLIGHTNS_SOAK, or 5s in go test and 10m in the long form.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("FLIGHTNS_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("FLIGHTNS_SOAK=%q: %v", v, err)
		}
		return d
	}
	return pick(5*time.Second, 10*time.Minute)
}

// committer commits versions of its own table back to back.
type committer struct {
	rc  *restClient
	cat *catalog
	t   int
	v   int64
}

func (c *committer) commit(ctx context.Context) error {
	p, err := c.cat.stage(ctx, 0, c.t, c.v+1, 64)
	if err != nil {
		return err
	}
	r, err := c.rc.post(ctx, "/v1/table/"+strings.Join(c.cat.ids[c.t], "$")+"/version/create",
		map[string]any{"version": c.v + 1, "manifest_path": p, "manifest_size": 64})
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return fmt.Errorf("HTTP %d %s", r.Status, r.Body)
	}
	c.v++
	return nil
}

// The server under a steady 80 % of the commit rate it reached flat out:
// its memory, goroutines and open file descriptors stay flat, and every
// commit succeeds.
func TestSoak(t *testing.T) {
	dur := soakDuration(t)
	data := t.TempDir()
	srv := startServer(t, nil, "--data", data)
	rc := newREST(srv.rest)
	const clients = maxTables
	cat := setupCatalog(t, rc, "file://"+filepath.Join(data, "root"), clients)
	cs := make([]*committer, clients)
	for i := range cs {
		cs[i] = &committer{rc: rc, cat: cat, t: i}
	}

	// Peak: every client flat out.
	peakFor := pick(2*time.Second, 20*time.Second)
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range cs {
		wg.Go(func() {
			for n := 0; n < 1_000_000 && time.Since(start) < peakFor; n++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := c.commit(ctx)
				cancel()
				if err != nil {
					t.Errorf("commit at peak: %v", err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	peak := float64(done.Load()) / time.Since(start).Seconds()
	target := 0.8 * peak
	t.Logf("peak %.0f commits/s with %d clients; soaking at %.0f/s for %v", peak, clients, target, dur)

	// Soak: tokens at the target rate, taken by the clients.
	tokens := make(chan struct{}, clients)
	stop := make(chan struct{})
	var failed, committed atomic.Int64
	for _, c := range cs {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-tokens:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := c.commit(ctx); err != nil {
					failed.Add(1)
					t.Errorf("commit during the soak: %v", err)
				} else {
					committed.Add(1)
				}
				cancel()
			}
		})
	}
	every := pick(250*time.Millisecond, 10*time.Second)
	var samples []sample
	soakStart := time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / max(target, 1)))
	next := time.Now()
	for time.Since(soakStart) < dur {
		<-tick.C
		select {
		case tokens <- struct{}{}:
		default: // the server is behind: drop the token, never queue
		}
		if time.Now().After(next) {
			s, err := srv.sample(soakStart)
			if err != nil {
				t.Fatal(err)
			}
			s.commits = done.Load() + committed.Load()
			samples = append(samples, s)
			next = next.Add(every)
		}
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	got := float64(committed.Load()) / time.Since(soakStart).Seconds()
	t.Logf("soak: %d commits (%.0f/s), %d failed, %d samples", committed.Load(), got, failed.Load(), len(samples))
	if len(samples) < 8 {
		t.Fatalf("only %d samples", len(samples))
	}
	// Flat: the last quarter against the second (after warm-up), with room
	// for noise but none for steady growth.
	q := len(samples) / 4
	base, end := median(samples[q:2*q]), median(samples[len(samples)-q:])
	t.Logf("second quarter: rss %d KiB, Go heap %.0f KiB, fds %d, goroutines %.0f; last quarter: rss %d KiB, Go heap %.0f KiB, fds %d, goroutines %.0f",
		base.rssKB, base.heapBytes/1024, base.fds, base.goroutines, end.rssKB, end.heapBytes/1024, end.fds, end.goroutines)
	if n := end.commits - base.commits; n > 0 {
		t.Logf("between the quarters: %d versions committed; per version, rss %+.0f bytes, Go heap %+.0f bytes",
			n, float64(end.rssKB-base.rssKB)*1024/float64(n), (end.heapBytes-base.heapBytes)/float64(n))
	}
	if end.goroutines > base.goroutines*1.25+20 {
		t.Errorf("goroutines grew from %.0f to %.0f", base.goroutines, end.goroutines)
	}
	if end.fds > base.fds+16 {
		t.Errorf("open file descriptors grew from %d to %d", base.fds, end.fds)
	}
	// The catalog grows by a row per version, which the server keeps in
	// memory (about 400 bytes each, index and SQL engine; see
	// docs/reliability.md): 1 KiB per version is data, not a leak.
	if grown := end.commits - base.commits; end.rssKB > base.rssKB*3/2+64<<10+grown {
		t.Errorf("RSS grew from %d KiB to %d KiB while %d versions were committed", base.rssKB, end.rssKB, grown)
	}
	// Everything committed is there.
	for _, c := range cs {
		var d describeReply
		rc.must(t, "/v1/table/"+strings.Join(cat.ids[c.t], "$")+"/version/describe", map[string]any{}, &d)
		if got := d.get().Version; got != c.v {
			t.Errorf("table %d: head %d, committed %d", c.t, got, c.v)
		}
	}
}

// median takes each measure's median separately.
func median(ss []sample) sample {
	return sample{
		rssKB:      mid(ss, func(s sample) int64 { return s.rssKB }),
		fds:        mid(ss, func(s sample) int { return s.fds }),
		goroutines: mid(ss, func(s sample) float64 { return s.goroutines }),
		heapBytes:  mid(ss, func(s sample) float64 { return s.heapBytes }),
		commits:    mid(ss, func(s sample) int64 { return s.commits }),
	}
}

// mid is the median of one measure of ss.
func mid[T cmp.Ordered](ss []sample, of func(sample) T) T {
	xs := make([]T, len(ss))
	for i, s := range ss {
		xs[i] = of(s)
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/console"
)

// feedMessage is one Server-Sent Events message of the change feed.
type feedMessage struct {
	event, data, id string
}

// openFeed opens the change feed through the console as its live pages
// do (GET /api/v1/changes with the console's header and u's cookie),
// with edit applied, and returns the answer's status and, for a 200, the
// messages as they arrive (the channel closes when the stream ends).
func (u *consoleUser) openFeed(ctx context.Context, query string, edit func(*http.Request)) (int, <-chan feedMessage) {
	u.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.base+"/api/v1/changes?"+query, nil)
	req.Header.Set(console.Header, "1")
	if edit != nil {
		edit(req)
	}
	resp, err := u.c.Do(req) //nolint:bodyclose // closed here on a refusal, else by the reading goroutine
	if err != nil {
		u.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		u.t.Fatalf("the feed through the console answers %q", ct)
	}
	out := make(chan feedMessage)
	go func() {
		defer close(out)
		defer func() { _ = resp.Body.Close() }()
		sc := bufio.NewScanner(resp.Body)
		var m feedMessage
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				select {
				case out <- m:
				case <-ctx.Done():
					return
				}
				m = feedMessage{}
				continue
			}
			field, value, _ := strings.Cut(line, ": ")
			switch field {
			case "event":
				m.event = value
			case "data":
				m.data = value
			case "id":
				m.id = value
			}
		}
	}()
	return http.StatusOK, out
}

// The console's live pages read the change feed through the console:
// authenticated by its cookie, refused without its header or from
// another origin; a table's page subscribed after the sequence its
// description answered gets that table's later changes only, and the
// activity page's sequence (/api/metrics) is as new.
func TestConsoleFollowsTheChangeFeed(t *testing.T) {
	srv, root := startConsoleServer(t)
	for _, c := range []struct{ path, body string }{
		{"/v1/namespace/live/create", `{}`},
		{"/v1/table/live$t/declare", `{}`},
		{"/v1/table/live$other/declare", `{}`},
	} {
		if code, out := root(c.path, c.body); code != http.StatusOK {
			t.Fatalf("POST %s: %d %s", c.path, code, out)
		}
	}
	commitVersions(t, root, "live$t", 1, 1)

	u := newConsoleUser(t, srv)
	u.login(`{"user": "rob", "password": "rob-pw"}`) // a reader
	var desc struct {
		Version *int64 `json:"version"`
		Seq     uint64 `json:"seq"`
	}
	u.json(http.MethodGet, "/api/table?id=live&id=t", "", &desc)
	if desc.Version == nil || *desc.Version != 1 || desc.Seq == 0 {
		t.Fatalf("/api/table answers version %v at sequence %d, want 1 at a sequence", desc.Version, desc.Seq)
	}
	var metrics struct {
		Seq uint64 `json:"seq"`
	}
	u.json(http.MethodGet, "/api/metrics", "", &metrics)
	if metrics.Seq < desc.Seq {
		t.Fatalf("/api/metrics is at sequence %d, before the table's %d", metrics.Seq, desc.Seq)
	}

	// After the description: a version of the table, and a change of
	// another table the filter leaves out.
	commitVersions(t, root, "live$other", 1, 1)
	commitVersions(t, root, "live$t", 2, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	after := strconv.FormatUint(desc.Seq, 10)
	code, feed := u.openFeed(ctx, "table=live%24t", func(r *http.Request) { r.Header.Set("Last-Event-ID", after) })
	if code != http.StatusOK {
		t.Fatalf("the feed through the console: HTTP %d", code)
	}
	var got []map[string]any
	var through string
	for m := range feed {
		if m.event == "error" {
			t.Fatalf("the feed ended with an error: %s", m.data)
		}
		if m.data != "" {
			var ce struct {
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal([]byte(m.data), &ce); err != nil {
				t.Fatalf("event %q: %v", m.data, err)
			}
			got = append(got, ce.Data)
		}
		if m.id != "" && len(got) > 0 {
			through = m.id
			break
		}
	}
	cancel()
	if len(got) != 1 || got[0]["type"] != "table.version.created" || got[0]["version"] != float64(2) ||
		strings.Join(toStrings(got[0]["id"]), "$") != "live$t" {
		t.Fatalf("after the table page's sequence the feed of live$t sent %v, want its version 2 alone", got)
	}
	if n, err := strconv.ParseUint(through, 10, 64); err != nil || n <= desc.Seq {
		t.Fatalf("the feed was read through %q, want a sequence after %d", through, desc.Seq)
	}

	// What the console refuses: no header, another origin or site, no
	// cookie.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	for name, c := range map[string]struct {
		u    *consoleUser
		edit func(*http.Request)
		want int
	}{
		"without the console's header": {u, func(r *http.Request) { r.Header.Del(console.Header) }, http.StatusForbidden},
		"from another origin":          {u, func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, http.StatusForbidden},
		"from another site":            {u, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden},
		"without a cookie":             {newConsoleUser(t, srv), nil, http.StatusUnauthorized},
	} {
		if code, _ := c.u.openFeed(ctx2, "table=live%24t&follow=false", c.edit); code != c.want {
			t.Errorf("the feed %s: HTTP %d, want %d", name, code, c.want)
		}
	}
	// The console's own origin passes (a browser sends it on some fetches).
	own := func(r *http.Request) {
		r.Header.Set("Origin", u.base)
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		r.Header.Set("Last-Event-ID", after)
	}
	if code, feed := u.openFeed(ctx2, "table=live%24t&follow=false", own); code != http.StatusOK {
		t.Errorf("the feed from the console's own origin: HTTP %d", code)
	} else {
		for range feed { // to its end: follow=false
		}
	}
}

func toStrings(v any) []string {
	xs, _ := v.([]any)
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

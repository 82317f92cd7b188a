package restserver

// The interop suite: the real Lance engine (LanceDB for Node, pinned in
// interop/lancedb) against a flightns REST server that each test starts in
// process. The Node scripts report in JSON; these tests assert on what they
// report, on what the server was asked, and on what is in storage.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/namespace"
)

// lancedbDir returns the interop project's directory, failing the test
// when LanceDB is not installed there. It reads the scripts and the
// lockfile so that go test's cache notices when they change.
func lancedbDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "interop", "lancedb"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("the interop tests need Node.js (node on PATH): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lancedb", "lancedb", "package.json")); err != nil {
		t.Fatalf("LanceDB is not installed for the interop tests: run `make lancedb` (npm install from interop/lancedb/package-lock.json; `make test` does it): %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.mjs"))
	for _, f := range append(files, filepath.Join(dir, "package-lock.json")) {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// node runs a script to completion and decodes its last stdout line into
// out. env adds NAME=value entries to the test's environment; an entry
// "-NAME" takes NAME out of it.
func node(t *testing.T, env []string, out any, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = lancedbDir(t)
	cmd.Env = os.Environ()
	for _, e := range env {
		if name, ok := strings.CutPrefix(e, "-"); ok {
			cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
			continue
		}
		cmd.Env = append(cmd.Env, e)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := lines[len(lines)-1]
	if err != nil || json.Unmarshal([]byte(last), out) != nil {
		t.Fatalf("node %s %v: %v\nstdout: %s\nstderr: %s", script, args, err, stdout, stderr.String())
	}
}

// versionRows is one version of a table and its rows ("id:amount").
type versionRows struct {
	Version int64    `json:"version"`
	Rows    []string `json:"rows"`
}

type scenarioReport struct {
	OK       bool                     `json:"ok"`
	Failures []string                 `json:"failures"`
	Tables   map[string][]versionRows `json:"tables"`
	Dropped  []string                 `json:"dropped"`
}

type plainReport struct {
	OK       bool                     `json:"ok"`
	Failures []string                 `json:"failures"`
	Tables   map[string][]versionRows `json:"tables"`
	Listed   map[string][]int64       `json:"listed"`
}

// TestLanceDBLifecycle runs the whole lifecycle scenario — nested
// namespaces, create, add, update, delete, mergeInsert, createIndex,
// optimize, checkout, restore, listVersions, countRows, renameTable,
// dropTable, dropNamespace — on a managed and on an unmanaged catalog,
// then opens every table with plain LanceDB, without flightns, and
// compares every version.
func TestLanceDBLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		managed bool
	}{{"managed", true}, {"unmanaged", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, withConfig(func(c *namespace.Config) { c.Unmanaged = !tc.managed }))
			var rep scenarioReport
			node(t, nil, &rep, "scenario.mjs", s.url())
			if !rep.OK {
				t.Fatalf("the scenario failed:\n%s", strings.Join(rep.Failures, "\n"))
			}
			reqs := s.requests()

			// Every table's versions are contiguous from 1, and the main
			// table went through what the scenario did to it.
			for id, h := range rep.Tables {
				for i, v := range h {
					if v.Version != int64(i+1) {
						t.Fatalf("%s: versions %v are not contiguous from 1", id, h)
					}
				}
			}
			orders := rep.Tables["prod$sales$orders"]
			want := map[int][]string{
				1: {"1:10", "2:20", "3:30"},
				4: {"1:10", "2:99", "3:30", "4:40", "5:50", "6:60"},         // update
				5: {"1:10", "2:99", "4:40", "5:50", "6:60"},                 // delete
				6: {"1:10", "2:99", "4:40", "5:55", "6:60", "7:70"},         // mergeInsert
				7: {"1:10", "2:99", "4:40", "5:55", "6:60", "7:70"},         // createIndex
				0: {"1:10", "2:20", "3:30", "4:40", "5:50", "6:60", "8:80"}, // restore of v3, then an add
			}
			for v, rows := range want {
				got := orders[len(orders)-1]
				if v > 0 {
					got = orders[v-1]
				}
				if !slices.Equal(got.Rows, rows) {
					t.Errorf("orders at version %d: %v, want %v", got.Version, got.Rows, rows)
				}
			}

			// Managed: every commit of the table was a CreateTableVersion;
			// unmanaged: none was, Lance committed to storage itself.
			creates := 0
			for _, r := range reqs {
				if strings.Contains(r, "/version/create") && strings.HasSuffix(r, " 200") {
					creates++
				}
			}
			commits := 0
			for _, h := range rep.Tables {
				commits += len(h)
			}
			if tc.managed && creates < commits {
				t.Errorf("managed: %d successful CreateTableVersion calls for at least %d commits", creates, commits)
			}
			if !tc.managed && creates != 0 {
				t.Errorf("unmanaged: %d CreateTableVersion calls, want none", creates)
			}

			// dropTable and the cascading dropNamespace deleted the data.
			entries, err := os.ReadDir(s.Root)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), "_scratch$tmp") || strings.Contains(e.Name(), "_many$") {
					t.Errorf("the directory %s of a dropped table is still there", e.Name())
				}
			}

			tagsCheck(t, s, orders)
			// The branch LanceDB made is listed from its files.
			var br api.ListTableBranchesResponse
			ok(t, "branches/list", s.post("/v1/table/prod%24sales%24orders/branches/list", nil)).decode(t, &br)
			if dev, found := br.Branches["dev"]; len(br.Branches) != 1 || !found || dev.ParentVersion <= 0 || dev.ManifestSize <= 0 {
				t.Fatalf("branches of orders: %+v", br.Branches)
			}
			plainCheck(t, s, rep.Tables)
		})
	}
}

// tagsCheck: the tag LanceDB made in the scenario is listed and resolved
// by the catalog, and one the catalog makes is LanceDB's to list, resolve
// and check out, with the rows of its version.
func tagsCheck(t *testing.T, s *server, orders []versionRows) {
	t.Helper()
	const table = "/v1/table/prod%24sales%24orders"
	var list api.ListTableTagsResponse
	ok(t, "tags/list", s.post(table+"/tags/list", nil)).decode(t, &list)
	if c, found := list.Tags["first"]; !found || c.Version != 1 || c.ManifestSize <= 0 {
		t.Fatalf("the tag LanceDB made, through the catalog: %+v", list.Tags)
	}
	var tv api.GetTableTagVersionResponse
	ok(t, "tags/version", s.post(table+"/tags/version", map[string]any{"tag": "first"})).decode(t, &tv)
	if tv.Version != 1 {
		t.Fatalf("tags/version of first: %+v", tv)
	}
	ok(t, "tags/create", s.post(table+"/tags/create", map[string]any{"tag": "rest-made", "version": 2}))
	wantError(t, "tags/create again", s.post(table+"/tags/create", map[string]any{"tag": "rest-made", "version": 3}), 9, 409)
	var rep struct {
		OK       bool             `json:"ok"`
		Failures []string         `json:"failures"`
		Tags     map[string]int64 `json:"tags"`
		Version  int64            `json:"version"`
		Rows     []string         `json:"rows"`
	}
	node(t, nil, &rep, "tags.mjs", s.url(), "rest-made")
	if !rep.OK {
		t.Fatalf("LanceDB reading the catalog's tag: %s", strings.Join(rep.Failures, "\n"))
	}
	if rep.Tags["first"] != 1 || rep.Tags["rest-made"] != 2 || rep.Version != 2 || !slices.Equal(rep.Rows, orders[1].Rows) {
		t.Fatalf("LanceDB sees tags %v, rest-made at %d with rows %v; want version 2's rows %v", rep.Tags, rep.Version, rep.Rows, orders[1].Rows)
	}
}

// plainCheck opens every table with plain LanceDB (no flightns) and
// requires every version to hold the rows seen through flightns.
func plainCheck(t *testing.T, s *server, tables map[string][]versionRows) {
	t.Helper()
	type tableSpec struct {
		Dir      string  `json:"dir"`
		Versions []int64 `json:"versions"`
	}
	spec := struct {
		Tables map[string]tableSpec `json:"tables"`
	}{Tables: map[string]tableSpec{}}
	for id, h := range tables {
		tid, err := api.ParseID(id, "")
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.service().DescribeTable(context.Background(), api.DescribeTableRequest{ID: tid})
		if err != nil {
			t.Fatalf("describing %s: %v", id, err)
		}
		u, err := url.Parse(d.Location)
		if err != nil || u.Scheme != "file" {
			t.Fatalf("%s: location %q is not a file:// URI", id, d.Location)
		}
		ts := tableSpec{Dir: u.Path}
		for _, v := range h {
			ts.Versions = append(ts.Versions, v.Version)
		}
		spec.Tables[id] = ts
	}
	f := filepath.Join(t.TempDir(), "spec.json")
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var rep plainReport
	node(t, nil, &rep, "plain.mjs", f)
	if !rep.OK {
		t.Fatalf("plain LanceDB failed:\n%s", strings.Join(rep.Failures, "\n"))
	}
	for id, h := range tables {
		if got := rep.Tables[id]; !slices.EqualFunc(got, h, func(a, b versionRows) bool {
			return a.Version == b.Version && slices.Equal(a.Rows, b.Rows)
		}) {
			t.Errorf("%s: plain LanceDB sees %v, through flightns it was %v", id, got, h)
		}
		if listed := rep.Listed[id]; int64(len(listed)) != h[len(h)-1].Version || listed[0] != 1 {
			t.Errorf("%s: plain LanceDB lists versions %v, want 1..%d", id, listed, h[len(h)-1].Version)
		}
	}
}

type appendReport struct {
	OK      bool      `json:"ok"`
	Worker  int       `json:"worker"`
	Added   int       `json:"added"`
	Errors  []string  `json:"errors"`
	StartMs int64     `json:"startMs"`
	EndMs   int64     `json:"endMs"`
	Version int64     `json:"version"`
	LatMs   []float64 `json:"latMs"`
}

type readReport struct {
	OK       bool     `json:"ok"`
	Version  int64    `json:"version"`
	Versions []int64  `json:"versions"`
	Rows     []string `json:"rows"`
	Count    int      `json:"count"`
	Error    string   `json:"error"`
}

// runAppenders runs workers Node processes of count adds each at once
// (they start at one instant) and returns their reports.
func runAppenders(t *testing.T, cfg map[string]any, workers, count int) []appendReport {
	t.Helper()
	start := time.Now().Add(3 * time.Second).UnixMilli()
	reps := make([]appendReport, workers)
	var wg sync.WaitGroup
	for w := range workers {
		c := map[string]any{"worker": w + 1, "count": count, "startAt": start}
		for k, v := range cfg {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		wg.Go(func() { node(t, nil, &reps[w], "append.mjs", string(b)) })
	}
	wg.Wait()
	return reps
}

// TestLanceDBConcurrentAppends runs four Node processes appending to one
// managed table at once: every add succeeds, every row is there, and the
// versions are contiguous.
func TestLanceDBConcurrentAppends(t *testing.T) {
	const workers, adds = 4, 50
	s := startServer(t)
	base := map[string]any{"impl": "rest", "uri": s.url(), "namespace": []string{"conc"}, "table": "log"}
	var setup appendReport
	b, _ := json.Marshal(map[string]any{"impl": "rest", "uri": s.url(), "namespace": []string{"conc"}, "table": "log", "setup": true})
	node(t, nil, &setup, "append.mjs", string(b))
	if !setup.OK || setup.Version != 1 {
		t.Fatalf("setup: %+v", setup)
	}
	s.requests()
	for _, r := range runAppenders(t, base, workers, adds) {
		if !r.OK || r.Added != adds || len(r.Errors) != 0 {
			t.Fatalf("worker %d: added %d of %d, errors: %v", r.Worker, r.Added, adds, r.Errors)
		}
	}
	conflicts := 0
	for _, r := range s.requests() {
		if strings.Contains(r, "/version/create") && strings.HasSuffix(r, " 409") {
			conflicts++
		}
	}
	t.Logf("%d commits, %d of them lost a race first (409) and were rebased by Lance", workers*adds, conflicts)

	var rd readReport
	node(t, nil, &rd, "read.mjs", s.url(), `["conc"]`, "log")
	if !rd.OK {
		t.Fatalf("read: %s", rd.Error)
	}
	const head = 1 + workers*adds
	if rd.Version != head || len(rd.Versions) != head || rd.Count != head {
		t.Fatalf("after %d adds: head %d, %d versions, %d rows; want %d of each", workers*adds, rd.Version, len(rd.Versions), rd.Count, head)
	}
	for i, v := range rd.Versions {
		if v != int64(i+1) {
			t.Fatalf("versions are not contiguous: %v", rd.Versions)
		}
	}
	have := map[string]bool{}
	for _, r := range rd.Rows {
		have[strings.Split(r, ":")[0]] = true
	}
	for w := 1; w <= workers; w++ {
		for i := 1; i <= adds; i++ {
			if id := fmt.Sprint(w*100000 + i); !have[id] {
				t.Fatalf("row %s of worker %d is missing", id, w)
			}
		}
	}
	// The claim records agree with what Lance sees.
	lv, err := s.service().Versions().ListTableVersions(context.Background(), api.ListTableVersionsRequest{ID: api.ID{"conc", "log"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lv.Versions) != head || lv.Versions[head-1].Version != head {
		t.Fatalf("flightns lists %d versions, want %d", len(lv.Versions), head)
	}
}

// driven is a long-lived LanceDB client (driven.mjs) the test commands
// line by line.
type driven struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

type drivenReply struct {
	Cmd       string         `json:"cmd"`
	OK        bool           `json:"ok"`
	Version   int64          `json:"version"`
	Versions  []int64        `json:"versions"`
	Rows      []string       `json:"rows"`
	ByVersion map[string]int `json:"byVersion"`
	Error     string         `json:"error"`
}

func startDriven(t *testing.T, uri string) *driven {
	t.Helper()
	cmd := exec.Command("node", "driven.mjs", uri)
	cmd.Dir = lancedbDir(t)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &driven{t: t, cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	d.out.Buffer(make([]byte, 1<<20), 16<<20)
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	if r := d.read(); r.Cmd != "ready" {
		t.Fatalf("driven.mjs did not start: %+v", r)
	}
	return d
}

func (d *driven) read() drivenReply {
	d.t.Helper()
	if !d.out.Scan() {
		d.t.Fatalf("driven.mjs ended: %v", d.out.Err())
	}
	var r drivenReply
	if err := json.Unmarshal(d.out.Bytes(), &r); err != nil {
		d.t.Fatalf("driven.mjs: %q: %v", d.out.Text(), err)
	}
	return r
}

// do sends a command and requires it to succeed.
func (d *driven) do(format string, args ...any) drivenReply {
	d.t.Helper()
	line := fmt.Sprintf(format, args...)
	if _, err := fmt.Fprintln(d.stdin, line); err != nil {
		d.t.Fatal(err)
	}
	r := d.read()
	if !r.OK {
		d.t.Fatalf("%s: %s", line, r.Error)
	}
	return r
}

// TestLanceDBSurvivesRestarts writes, restarts the flightns server (or
// flushes or restarts Redis, losing its state) while the LanceDB client
// lives on, and writes again: the next write and every read succeed.
func TestLanceDBSurvivesRestarts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(s *server)
	}{
		{"server restart", func(s *server) { s.restart() }},
		{"redis flushed", func(s *server) { s.Redis.FlushAll() }},
		{"redis restarted without persistence", func(s *server) { s.Redis.Restart() }},
		{"server restart and redis flushed", func(s *server) { s.stop(); s.Redis.FlushAll(); s.start() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			d := startDriven(t, s.url())
			d.do("create r")
			if r := d.do("add r 1"); r.Version != 2 {
				t.Fatalf("after one add: version %d", r.Version)
			}
			tc.fault(s)
			if r := d.do("add r 2"); r.Version != 3 {
				t.Fatalf("the write after the fault made version %d, want 3", r.Version)
			}
			r := d.do("read r")
			if r.Version != 3 || !slices.Equal(r.Versions, []int64{1, 2, 3}) || len(r.Rows) != 3 {
				t.Fatalf("read after the fault: version %d, versions %v, rows %v", r.Version, r.Versions, r.Rows)
			}
			for v, n := range map[string]int{"1": 1, "2": 2, "3": 3} {
				if r.ByVersion[v] != n {
					t.Fatalf("version %s has %d rows, want %d", v, r.ByVersion[v], n)
				}
			}
			// The catalog survived too: new tables and the old one.
			d.do("create r2")
			if r := d.do("add r2 1"); r.Version != 2 {
				t.Fatalf("a new table's second version is %d", r.Version)
			}
			if r := d.do("read r"); r.Version != 3 {
				t.Fatalf("r is at version %d", r.Version)
			}
		})
	}
}

// TestLanceDBAuth connects LanceDB with tokens of each role, as
// Authorization: Bearer and as x-api-key.
func TestLanceDBAuth(t *testing.T) {
	a, err := auth.New(auth.Config{Tokens: []auth.TokenEntry{
		{Token: "reader-token-1", Name: "reader", Role: "read"},
		{Token: "writer-token-1", Name: "writer", Role: "write"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, withAuth(a))
	type probe struct {
		Read, Write string
	}
	for _, tc := range []struct {
		name        string
		env         []string
		read, write string // "ok" or a part of the error
	}{
		{"no credentials", nil, "credentials required", "credentials required"},
		{"a wrong token", []string{"FLIGHTNS_TOKEN=not-a-token"}, "invalid or expired token", "invalid or expired token"},
		{"reader bearer", []string{"FLIGHTNS_TOKEN=reader-token-1"}, "ok", "needs the write role"},
		{"reader api key", []string{"FLIGHTNS_API_KEY=reader-token-1"}, "ok", "needs the write role"},
		{"writer bearer", []string{"FLIGHTNS_TOKEN=writer-token-1"}, "ok", "ok"},
		{"writer api key", []string{"FLIGHTNS_API_KEY=writer-token-1"}, "ok", "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p probe
			node(t, tc.env, &p, "probe.mjs", s.url(), strings.ReplaceAll(tc.name, " ", "_"))
			if !strings.Contains(p.Read, tc.read) || !strings.Contains(p.Write, tc.write) {
				t.Fatalf("read: %q (want %q), write: %q (want %q)", p.Read, tc.read, p.Write, tc.write)
			}
		})
	}
}

// branchesReport is what branches.mjs reports: each step's observations
// and what a reader sees at the end.
type branchesReport struct {
	OK       bool              `json:"ok"`
	Failures []string          `json:"failures"`
	Steps    []json.RawMessage `json:"steps"`
	Final    json.RawMessage   `json:"final"`
}

// TestLanceBranchesAsWithLancesOwnNamespace runs the branch scenario
// (branches from main's latest, from a version of main and from a version
// of another branch, commits on them, checkouts of their versions, tags on
// them, a branch deleted and made again, restore, stats) through flightns
// with managed versioning and through Lance's own directory namespace:
// LanceDB must observe the same at every step. Then plain LanceDB, without
// any namespace, reads the same branches, tags and rows from the table's
// directory, and the catalog lists each branch's versions, and main's
// untouched, in __manifest.
// itemsDir is the directory of the table "items" the branch scenarios
// make at the root.
func itemsDir(t *testing.T, s *server) string {
	t.Helper()
	d, err := s.service().DescribeTable(context.Background(), api.DescribeTableRequest{ID: api.ID{"items"}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(d.Location)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

func TestLanceBranchesAsWithLancesOwnNamespace(t *testing.T) {
	s := startServer(t)
	var dir, rest branchesReport
	node(t, nil, &dir, "branches.mjs", "dir", t.TempDir())
	node(t, nil, &rest, "branches.mjs", "rest", s.url())
	sameObservations(t, rest, dir)

	var plain branchesReport
	node(t, nil, &plain, "branches.mjs", "plain", itemsDir(t, s))
	if !plain.OK || !jsonEqual(t, plain.Final, rest.Final) {
		t.Fatalf("plain LanceDB reading the table's directory (%v):\n%s\nthrough flightns:\n%s", plain.Failures, plain.Final, rest.Final)
	}

	// The catalog's own view: each branch's versions, main's apart.
	versionsOf := func(branch string) []int64 {
		var l api.ListTableVersionsResponse
		ok(t, "version/list "+branch, s.post("/v1/table/items/version/list", map[string]any{"branch": branch})).decode(t, &l)
		var out []int64
		for _, v := range l.Versions {
			out = append(out, v.Version)
		}
		return out
	}
	for branch, want := range map[string][]int64{"": {1, 2, 3, 4}, "dev": {2, 3, 4}, "old": {1, 2}, "team/sub": {3}} {
		if got := versionsOf(branch); !slices.Equal(got, want) {
			t.Errorf("versions of branch %q: %v, want %v", branch, got, want)
		}
	}
	wantError(t, "describing a branch that does not exist",
		s.post("/v1/table/items/version/describe", map[string]any{"branch": "gone", "version": 1}), 22, 404)
	// As every branch operation answers (and LanceDB, which lists a
	// branch's versions before its first commit and reads this as "none
	// yet", made every branch above through it).
	wantError(t, "listing the versions of a branch that does not exist",
		s.post("/v1/table/items/version/list", map[string]any{"branch": "gone"}), 22, 404)

	// Statistics from the manifests, as LanceDB computed them from the
	// data at the stats step (main after its restore, dev at its head).
	var lance struct {
		Value map[string]struct {
			Rows, Indices, Fragments, Small int64
			Lengths                         []int64
		} `json:"value"`
	}
	for _, st := range rest.Steps {
		if strings.Contains(string(st), `"step":"stats"`) {
			if err := json.Unmarshal(st, &lance); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, branch := range []string{"main", "dev"} {
		var got api.GetTableStatsResponse
		ok(t, "stats "+branch, s.post("/v1/table/items/stats", map[string]any{"branch": branch})).decode(t, &got)
		want := lance.Value[branch]
		f := got.FragmentStats
		l := f.Lengths
		if got.NumRows != want.Rows || got.NumIndices != want.Indices || f.NumFragments != want.Fragments || f.NumSmallFragments != want.Small ||
			!slices.Equal([]int64{l.Min, l.Max, l.Mean, l.P25, l.P50, l.P75, l.P99}, want.Lengths) || got.TotalBytes <= 0 {
			t.Errorf("stats of %s: %+v; LanceDB says %+v", branch, got, want)
		}
	}
	wantError(t, "stats of a branch that does not exist", s.post("/v1/table/items/stats", map[string]any{"branch": "gone"}), 22, 404)

	// DescribeTable's detailed metadata: the schema LanceDB wrote, and
	// the version's fragments.
	var dt api.DescribeTableResponse
	ok(t, "describe detailed", s.post("/v1/table/items/describe?load_detailed_metadata=true", map[string]any{"branch": "dev"})).decode(t, &dt)
	schema, _ := json.Marshal(dt.Schema)
	if string(schema) != `{"fields":[{"name":"id","nullable":true,"type":{"type":"float64"}},{"name":"amount","nullable":true,"type":{"type":"float64"}},{"name":"name","nullable":true,"type":{"type":"utf8"}}]}` ||
		dt.Stats == nil || dt.Stats.NumFragments != lance.Value["dev"].Fragments || dt.Version == nil || *dt.Version != 4 {
		t.Errorf("detailed description of dev: version %v, schema %s, stats %+v", dt.Version, schema, dt.Stats)
	}
	// table_versions carries each version's statistics, read from the
	// manifests LanceDB wrote, a moment after the commits.
	q := `SELECT coalesce(branch, 'main') || '@' || version || ':' || num_rows || '/' || num_fragments || '/' ||
		json_extract_string(schema, '$.fields[1].name') FROM table_versions WHERE table_id = 'items' AND num_rows IS NOT NULL
		AND (branch IS NULL AND version = 4 OR branch = 'dev' AND version = 4) ORDER BY 1`
	var stats []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if stats = queryStrings(t, s, q); len(stats) == 2 {
			break
		}
	}
	if want := []string{"dev@4:5/4/amount", "main@4:2/1/amount"}; !slices.Equal(stats, want) {
		t.Errorf("table_versions statistics: %v, want %v", stats, want)
	}

	created := 0
	for _, r := range s.requests() {
		if strings.Contains(r, "/version/create") && strings.HasSuffix(r, " 200") {
			created++
		}
	}
	if created < 4+3+2+1 {
		t.Errorf("%d successful CreateTableVersion calls, want one per version of main and of every branch", created)
	}
}

// sameObservations requires the branch scenario through flightns (rest)
// and through Lance's own directory namespace (dir) to have succeeded and
// LanceDB to have observed the same at every step and at the end.
func sameObservations(t *testing.T, rest, dir branchesReport) {
	t.Helper()
	for _, r := range []struct {
		name string
		rep  branchesReport
	}{{"Lance's directory namespace", dir}, {"flightns", rest}} {
		if !r.rep.OK {
			t.Fatalf("the scenario through %s failed:\n%s", r.name, strings.Join(r.rep.Failures, "\n"))
		}
	}
	if len(rest.Steps) != len(dir.Steps) {
		t.Fatalf("%d steps through flightns, %d through Lance's own", len(rest.Steps), len(dir.Steps))
	}
	for i := range dir.Steps {
		if !jsonEqual(t, rest.Steps[i], dir.Steps[i]) {
			t.Errorf("step %d through flightns:\n%s\nthrough Lance's directory namespace:\n%s", i, rest.Steps[i], dir.Steps[i])
		}
	}
	if !jsonEqual(t, rest.Final, dir.Final) {
		t.Fatalf("the end through flightns:\n%s\nthrough Lance's directory namespace:\n%s", rest.Final, dir.Final)
	}
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// queryStrings runs a query of one string column over the server's
// __manifest and returns its values.
func queryStrings(t *testing.T, s *server, q string) []string {
	t.Helper()
	res, err := s.service().Table().Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	var out []string
	for res.Next() {
		col := res.RecordBatch().Column(0).(interface {
			Len() int
			Value(int) string
		})
		for i := range col.Len() {
			out = append(out, strings.Clone(col.Value(i)))
		}
	}
	return out
}

// TestCatalogRestoreAndBranchesAsLanceMakesThem: RestoreTable,
// CreateTableBranch and DeleteTableBranch through flightns, then LanceDB
// reading and writing the table, observe at every step what LanceDB
// observes after its own restore(), branches.create() and
// branches.delete() through Lance's directory namespace (refusals
// included: a branch another forks from, or a tag points into). Then
// Lance's directory namespace, opening the table's directory, lists the
// same branches, tags and rows.
func TestCatalogRestoreAndBranchesAsLanceMakesThem(t *testing.T) {
	s := startServer(t)
	var dir, rest branchesReport
	node(t, nil, &dir, "restbranch.mjs", "dir", t.TempDir())
	node(t, nil, &rest, "restbranch.mjs", "rest", s.url())
	if !rest.OK && len(rest.Steps) > 0 {
		t.Logf("the last step through flightns: %s", rest.Steps[len(rest.Steps)-1])
	}
	sameObservations(t, rest, dir)

	reqs := strings.Join(s.requests(), "\n")
	for _, route := range []string{"/restore", "/branches/create", "/branches/delete"} {
		if !strings.Contains(reqs, route) {
			t.Errorf("flightns never served %s: the scenario did not go through the catalog", route)
		}
	}
	// The change feed holds each as what it is: the restore, the
	// branches created (from what) and deleted.
	var got []string
	for _, ev := range s.history(t, "?type=table.restored,table.branch.created,table.branch.deleted") {
		got = append(got, fmt.Sprintf("%s %s from %s@%d", ev.Type, ev.Branch, ev.FromBranch, ev.FromVersion))
	}
	for _, want := range []string{"table.restored  from @1", "table.branch.created dev from @2", "table.branch.created team/sub from dev@3"} {
		if !slices.Contains(got, want) {
			t.Errorf("the change feed holds %q, not %q", got, want)
		}
	}
	if !slices.ContainsFunc(got, func(e string) bool { return strings.HasPrefix(e, api.EventBranchDeleted+" ") }) {
		t.Errorf("the change feed holds %q: no branch deleted", got)
	}
	var view branchesReport
	node(t, nil, &view, "restbranch.mjs", "view", itemsDir(t, s))
	if !view.OK || !jsonEqual(t, view.Final, rest.Final) {
		t.Fatalf("Lance's directory namespace reading the table (%v):\n%s\nthrough flightns:\n%s", view.Failures, view.Final, rest.Final)
	}
}

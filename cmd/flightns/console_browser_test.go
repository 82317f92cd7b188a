package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The names the browser must show as text, never run or parse.
const (
	hostileNamespace = `<script>alert(1)</script>`
	hostileTable     = `"quote'`
	hostileUnicode   = `日本語`
	hostileProperty  = `<img src=x onerror=alert(1)>`
)

// consoleReport is what interop/browser/console.mjs prints last.
type consoleReport struct {
	OK         bool            `json:"ok"`
	Failures   []string        `json:"failures"`
	Checks     map[string]bool `json:"checks"`
	Seen       map[string]any  `json:"seen"`
	Dialogs    []string        `json:"dialogs"`
	CSP        []string        `json:"csp"`
	PageErrors []string        `json:"pageErrors"`
}

// The web console in a real Chromium against a real flightns: a writer
// logs in, browses LanceDB's table (its versions, a branch and a tag in
// the graph, verify), queries, sees a refused statement's error,
// downloads CSV and Arrow, watches the activity page show the test's
// commits and a created table as they happen and its charts move, and a
// table's page show a new version (no reload, and no request on a timer:
// the live pages follow the change feed), pages a table's versions and a
// result, plans a
// partitioned table; hostile names render as text, no dialog opens, no
// CSP violation happens; a reader logs in with a token and its mutation
// answers 403; without authentication the console needs no login. With
// FLIGHTNS_CONSOLE_SCREENSHOTS=<dir> (absolute) it writes a screenshot
// of each page there (docs/console/ holds them).
func TestConsoleInABrowser(t *testing.T) {
	browserDir, lancedbDir := requireBrowser(t)
	work := t.TempDir()
	authFile := filepath.Join(work, "auth.json")
	const writerToken, readerToken = "console-writer-token-1", "console-reader-token-1"
	if err := os.WriteFile(authFile, []byte(`{
		"tokens": [{"token": "`+writerToken+`", "name": "etl", "role": "write"},
		           {"token": "`+readerToken+`", "name": "ana", "role": "read"}],
		"users": [{"name": "wanda", "password": "wanda-pw", "role": "write"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, work, nil, "--auth-file", authFile)
	if s.console == "" {
		t.Fatalf("the console's address is not in the log:\n%s", s.Log())
	}
	rest := func(path, body string) string {
		t.Helper()
		code, out := restAs(writerToken, s.rest, path, body)
		if code != http.StatusOK {
			t.Fatalf("POST %s: HTTP %d %s", path, code, out)
		}
		return out
	}

	// LanceDB's table "items" at the root: versions, branches, tags.
	var lance struct {
		OK       bool
		Failures []string
	}
	runNode(t, lancedbDir, []string{"FLIGHTNS_TOKEN=" + writerToken}, &lance, "branches.mjs", "rest", "http://"+s.rest)
	if !lance.OK {
		t.Fatalf("branches.mjs: %v", lance.Failures)
	}

	// Hostile names: a namespace (with a property) and a table in it, and
	// the same namespace name under a Unicode one.
	esc := url.PathEscape
	rest("/v1/namespace/"+esc(hostileNamespace)+"/create", fmt.Sprintf(`{"properties": {"note": %q}}`, hostileProperty))
	rest("/v1/table/"+esc(hostileNamespace+"$"+hostileTable)+"/declare", `{}`)
	rest("/v1/namespace/"+esc(hostileUnicode)+"/create", `{}`)
	rest("/v1/namespace/"+esc(hostileUnicode+"$"+hostileNamespace)+"/create", `{}`)

	// A table with more versions than a page, committed to again while
	// the activity page watches.
	rest("/v1/namespace/activity/create", `{}`)
	var decl struct{ Location string }
	if err := json.Unmarshal([]byte(rest("/v1/table/activity$ticker/declare", `{}`)), &decl); err != nil {
		t.Fatal(err)
	}
	const before, during = 55, 10
	commit := func(v int) {
		content := fmt.Sprintf("manifest activity$ticker v%d", v)
		p := stageVersion(t, decl.Location, uint64(v), content)
		rest("/v1/table/activity$ticker/version/create", fmt.Sprintf(`{"version":%d,"manifest_path":%q,"manifest_size":%d}`, v, p, len(content)))
	}
	for v := 1; v <= before; v++ {
		commit(v)
	}

	// A table that needs a compaction: its version is a manifest LanceDB
	// wrote (12 small fragments, 24 of 120 rows deleted).
	worn, err := os.ReadFile("../../manifesttable/testdata/compaction/v13.manifest")
	if err != nil {
		t.Fatal(err)
	}
	rest("/v1/namespace/maint/create", `{}`)
	var wornDecl struct{ Location string }
	if err := json.Unmarshal([]byte(rest("/v1/table/maint$worn/declare", `{}`)), &wornDecl); err != nil {
		t.Fatal(err)
	}
	p := stageVersion(t, wornDecl.Location, 1, string(worn))
	rest("/v1/table/maint$worn/version/create", fmt.Sprintf(`{"version":1,"manifest_path":%q,"manifest_size":%d}`, p, len(worn)))

	// A partitioned table of three partitions.
	rest("/v1/namespace/logs/partitioned/create", `{"schema": {"fields": [
		{"name": "k", "nullable": true, "type": {"type": "int64"}, "metadata": {"lance:field_id": "1"}}]},
		"spec": {"fields": [{"source_ids": [1], "transform": {"type": "identity"}}]}}`)
	for k := 1; k <= 3; k++ {
		rest("/v1/namespace/logs/partitioned/resolve", fmt.Sprintf(`{"row": {"k": %d}}`, k))
	}

	// And a server without authentication: its console is open, and a
	// page of another origin tries to drop its namespace "victim".
	open := startServer(t, t.TempDir(), nil)
	if code, out := restAs("", open.rest, "/v1/namespace/victim/create", `{}`); code != http.StatusOK {
		t.Fatalf("create victim: HTTP %d %s", code, out)
	}

	shots := os.Getenv("FLIGHTNS_CONSOLE_SCREENSHOTS")
	if shots != "" {
		var err error
		if shots, err = filepath.Abs(shots); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _ := json.Marshal(map[string]any{
		"url":     "http://" + s.console + "/",
		"writer":  map[string]string{"user": "wanda", "password": "wanda-pw"},
		"reader":  map[string]string{"token": readerToken, "name": "ana"},
		"table":   []string{"items"},
		"branch":  "dev",
		"tag":     "two",
		"paged":   []string{"activity", "ticker"},
		"worn":    []string{"maint", "worn"},
		"hostile": map[string]string{"namespace": hostileNamespace, "table": hostileTable, "unicode": hostileUnicode, "property": hostileProperty},
		// after the commits the activity page asks for and the one the
		// table's page does
		"pagedVersions":   before + during + 1,
		"during":          during,
		"fresh":           []string{"activity", "fresh"},
		"partitioned":     []string{"logs"},
		"partitionFilter": "k = 2",
		"openUrl":         "http://" + open.console + "/",
		"crossSite":       map[string]string{"rest": "http://" + open.rest, "namespace": "victim"},
		"screenshots":     shots,
	})

	rep := runConsoleScript(t, browserDir, string(cfg), map[string]func(){
		// the activity page watches: versions, then a table created
		"commits": func() {
			for v := before + 1; v <= before+during; v++ {
				commit(v)
			}
			rest("/v1/table/activity$fresh/declare", `{}`)
		},
		// the table's page watches: one more version
		"version": func() { commit(before + during + 1) },
		// the table's page must not read again: another table changes
		"elsewhere": func() { rest("/v1/table/activity$elsewhere/declare", `{}`) },
	})
	// Every check must have run and passed: a check the script skipped
	// is as much a failure as one that failed.
	for _, name := range []string{
		"csp header", "nosniff, no framing, no referrer", "login page when not logged in", "a bad password shows the error",
		"logged in as the writer", `the tree shows "<script>alert(1)</script>" as text`, `the tree shows "日本語" as text`,
		"the table page", "main's versions, newest first", "branch dev in the graph", "main in the graph", "tag two in the graph",
		"the schema", "verify says ok", "clicking a lane lists its branch's versions",
		"the catalog lists the table that needs a compaction", "the maintenance panel counts main's versions",
		"the maintenance panel: no compaction needed", "the maintenance panel of a worn table",
		"hostile namespace title is text", "its route encodes each level", "hostile property value is text", "no planted element",
		"hostile table title is text", "hostile table route", "a nested hostile path in the breadcrumb",
		"a query's rows", "hostile names in the grid as text", "elapsed and rows shown", "a refused statement's type, code and message",
		"CSV download", "Arrow download (an IPC stream)",
		"uPlot drew", "the activity page follows the change feed", "the test committed", "the commits appear without a reload",
		"the table created appears on top, newest first", "commits/s rose after the commits", "the operations table lists version commits",
		"the activity page makes no request while the catalog is quiet", "the activity page holds one change feed",
		"the first page of versions", "the table page follows the change feed",
		"a broken feed is opened again after a pause, after the same sequence", "the test committed a version",
		"the table page shows the new version without a reload", "the test changed another table",
		"the table page reads nothing on a timer, nor for another table's change",
		"a full first page", "older versions", "no page older than the oldest", "back to the newest",
		"the next page of a result", "previous after next",
		"plan_scan keeps one partition and prunes the others", "health: ready", "health: Redis, storage and SQL ok",
		"logged out: the session is gone", "logged in as the reader", "a reader's mutation answers 403",
		"a call without the console's header answers 403", "an open console needs no login",
		"another origin's no-cors fetches were sent", "another origin's cors fetch stops at its preflight",
		"the CSP violation detector works",
		"no dialog opened", "no CSP violation", "no script error",
	} {
		if ok, ran := rep.Checks[name]; !ran || !ok {
			t.Errorf("check %q: ran %v, passed %v", name, ran, ok)
		}
	}
	if !rep.OK || len(rep.Failures) > 0 {
		t.Errorf("console.mjs failures:\n  %s", strings.Join(rep.Failures, "\n  "))
	}
	// The other origin's drops reached the server without authentication
	// and were refused (audited: 2 origins × 2 no-cors fetches, and the
	// cors fetch's preflights), and victim is still there.
	if code, out := restAs("", open.rest, "/v1/namespace/victim/describe", `{}`); code != http.StatusOK {
		t.Errorf("another origin's page dropped victim: describe answers HTTP %d %s", code, out)
	}
	refused := 0
	for _, l := range strings.Split(open.Log(), "\n") {
		if strings.Contains(l, "audit=true") && strings.Contains(l, "op=DropNamespace") && strings.Contains(l, "target=victim") &&
			strings.Contains(l, "outcome=PermissionDenied") && strings.Contains(l, "cross-site request refused") {
			refused++
		}
	}
	if refused < 4 {
		t.Errorf("%d refused cross-site drops of victim in the log, want 4 or more:\n%s", refused, open.Log())
	}
	if len(rep.Dialogs)+len(rep.CSP)+len(rep.PageErrors) > 0 {
		t.Errorf("dialogs %q, CSP violations %q, script errors %q", rep.Dialogs, rep.CSP, rep.PageErrors)
	}
	if t.Failed() {
		b, _ := json.MarshalIndent(rep.Seen, "", "  ")
		t.Logf("what the browser saw: %s", b)
	}
}

// requireBrowser returns the directories of the browser script and of
// LanceDB's, and fails (never skips) when Node.js, their packages or
// Chromium are missing: `make deps` installs the packages, .ci/run
// Chromium.
func requireBrowser(t *testing.T) (browserDir, lancedbDir string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("the console's browser test needs Node.js (node on PATH): %v", err)
	}
	browserDir, _ = filepath.Abs(filepath.Join("..", "..", "interop", "browser"))
	lancedbDir, _ = filepath.Abs(filepath.Join("..", "..", "interop", "lancedb"))
	for _, need := range []struct{ path, fix string }{
		{filepath.Join(browserDir, "node_modules", "playwright-core", "package.json"), "make browser"},
		{filepath.Join(lancedbDir, "node_modules", "@lancedb", "lancedb", "package.json"), "make lancedb"},
		{"/usr/bin/chromium", "apt-get install chromium"},
	} {
		if _, err := os.Stat(need.path); err != nil {
			t.Fatalf("the console's browser test needs %s (%s): %v", need.path, need.fix, err)
		}
	}
	return browserDir, lancedbDir
}

// restAs posts body to the REST surface with token as the bearer, and
// returns the status and the body.
func restAs(token, addr, path, body string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// runNode runs a script in dir to completion and decodes its last stdout
// line into out.
func runNode(t *testing.T, dir string, env []string, out any, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s %v: %v\nstdout: %s\nstderr: %s", script, args, err, stdout, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, stdout, stderr.String())
	}
}

// runConsoleScript runs console.mjs with cfg, makes the changes it asks
// for ({"wait": name}: changes[name]) while it watches, and returns its
// report.
func runConsoleScript(t *testing.T, dir, cfg string, changes map[string]func()) consoleReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "console.mjs", cfg)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
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
	var rep consoleReport
	got := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Wait string `json:"wait"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("console.mjs printed %q: %v\nstderr: %s", sc.Text(), err, stderr.String())
		}
		if line.Wait != "" {
			change, ok := changes[line.Wait]
			if !ok {
				t.Fatalf("console.mjs waits for %q, which the test does not make", line.Wait)
			}
			change()
			if _, err := io.WriteString(stdin, "done\n"); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		got = true
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil || !got {
		t.Fatalf("node console.mjs: %v (report: %v)\nstderr: %s", err, got, stderr.String())
	}
	return rep
}

// The uPlot the console embeds (console/web/vendor/) is, byte for byte,
// the package interop/browser/package.json pins: updating one without the
// other fails here.
func TestConsoleVendorsThePinnedUPlot(t *testing.T) {
	browserDir, _ := requireBrowser(t)
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
		Version      string            `json:"version"`
	}
	readJSON := func(p string) {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &pkg); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	readJSON(filepath.Join(browserDir, "package.json"))
	pinned := pkg.Dependencies["uplot"]
	readJSON(filepath.Join(browserDir, "node_modules", "uplot", "package.json"))
	if pinned == "" || pkg.Version != pinned {
		t.Fatalf("uplot pinned %q, installed %q (make browser)", pinned, pkg.Version)
	}
	vendor := filepath.Join("..", "..", "internal", "console", "web", "vendor")
	for vendored, installed := range map[string]string{
		"uPlot.iife.min.js": filepath.Join("dist", "uPlot.iife.min.js"),
		"uPlot.min.css":     filepath.Join("dist", "uPlot.min.css"),
		"LICENSE":           "LICENSE",
	} {
		got, err := os.ReadFile(filepath.Join(vendor, vendored))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(browserDir, "node_modules", "uplot", installed))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("console/web/vendor/%s is not uplot %s's %s: copy it again", vendored, pinned, installed)
		}
	}
}

// The console's own pages and scripts never turn data into HTML and hold
// nothing the CSP would refuse (inline scripts, handlers or styles): the
// browser test proves it for the pages it visits, this for every file.
func TestConsoleWebWritesNoHTML(t *testing.T) {
	web := filepath.Join("..", "..", "internal", "console", "web")
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|\bstyle=|<script>|<style|\son[a-z]+=`)
	files := 0
	err := filepath.WalkDir(web, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return err
		}
		if ext := filepath.Ext(p); ext != ".js" && ext != ".html" {
			return nil
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := forbidden.FindString(line); m != "" {
				t.Errorf("%s:%d: %q: %s", p, i+1, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("only %d pages and scripts under %s", files, web)
	}
}

package cleanup

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightns/flightns/objstore"
)

// The LanceDB fixture: one table built by plain LanceDB
// (interop/lancedb/cleanup.mjs build), kept pristine, and restored into
// the same directory before each run. The same directory, because a
// branch's manifests record its parent's directory as an absolute base
// path: a copy elsewhere would read (and Lance would protect) the
// original's files, not its own.

// lanceTable is the table's key under the fixture's root.
const lanceTable = "t.lance"

type fixture struct {
	root     string // the directory LanceDB opened; the table is root/t.lance
	pristine string // a copy of root as built
	built    buildReport
	reads    readReport // every version as built
}

type buildReport struct {
	OK       bool
	Failures []string
	Main     [][2]int64            // [version, timestamp ms]
	Branches map[string][][2]int64 // by branch
}

type versionRead struct {
	Version int64
	Count   int64
	Rows    []string
}

type readReport struct {
	OK       bool
	Failures []string
	Main     []versionRead
	Branches map[string]struct {
		Parent   int64
		Versions []versionRead
	}
	Tags map[string]struct {
		Branch  string
		Version int64
		Rows    []string
	}
}

type cleanupRun struct {
	Name          string
	Before, After [][2]int64
	Error         string
}

type cleanupReport struct {
	OK       bool
	Failures []string
	Runs     []cleanupRun
}

var (
	fixtureOnce sync.Once
	theFixture  *fixture
	fixtureErr  string
	fixtureDir  string // removed by TestMain
)

// lanceFixture builds the table once per test binary.
func lanceFixture(t *testing.T) *fixture {
	t.Helper()
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flightns-cleanup-")
		if err != nil {
			fixtureErr = err.Error()
			return
		}
		fixtureDir = dir
		f := &fixture{root: filepath.Join(dir, "db"), pristine: filepath.Join(dir, "pristine")}
		if msg := runNode(&f.built, "build", f.root); msg != "" {
			fixtureErr = msg
			return
		}
		if err := copyTree(f.root, f.pristine); err != nil {
			fixtureErr = err.Error()
			return
		}
		if msg := runNode(&f.reads, "read", f.root); msg != "" {
			fixtureErr = msg
			return
		}
		theFixture = f
	})
	if theFixture == nil {
		t.Fatalf("the LanceDB fixture: %s", fixtureErr)
	}
	if !theFixture.built.OK || !theFixture.reads.OK {
		t.Fatalf("the LanceDB fixture: %+v %+v", theFixture.built.Failures, theFixture.reads.Failures)
	}
	return theFixture
}

// restore puts the pristine table back in place.
func (f *fixture) restore(t *testing.T) {
	t.Helper()
	if err := os.RemoveAll(f.root); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(f.pristine, f.root); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) store(t *testing.T) *objstore.Store {
	t.Helper()
	objs, err := objstore.Open(context.Background(), "file://"+f.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	return objs
}

// files lists the table's files (paths relative to the table).
func (f *fixture) files(t *testing.T) []string {
	t.Helper()
	var out []string
	base := filepath.Join(f.root, lanceTable)
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// read reads every version of the table with LanceDB.
func (f *fixture) read(t *testing.T) readReport {
	t.Helper()
	var r readReport
	if msg := runNode(&r, "read", f.root); msg != "" {
		t.Fatal(msg)
	}
	if !r.OK {
		t.Fatalf("LanceDB read: %v", r.Failures)
	}
	return r
}

// between is a time in ms between the timestamps of two consecutive
// versions of a chain: after version `after`.
func (f *fixture) between(t *testing.T, branch string, after int64) int64 {
	t.Helper()
	vs := f.built.Main
	if branch != "" {
		vs = f.built.Branches[branch]
	}
	for i, v := range vs[:len(vs)-1] {
		if v[0] == after {
			next := vs[i+1][1]
			if next-v[1] < 2 {
				t.Fatalf("versions %d and %d of %q are %d ms apart: no cutoff between them", after, vs[i+1][0], branch, next-v[1])
			}
			return (v[1] + next) / 2
		}
	}
	t.Fatalf("no version %d (and a next) on %q: %v", after, branch, vs)
	return 0
}

// lancedbDir is the interop project, with LanceDB installed.
func lancedbDir() (string, string) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "interop", "lancedb"))
	if err != nil {
		return "", err.Error()
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", "the LanceDB tests need Node.js (node on PATH): " + err.Error()
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lancedb", "lancedb", "package.json")); err != nil {
		return "", "LanceDB is not installed for the interop tests: run `make lancedb`: " + err.Error()
	}
	return dir, ""
}

// runNode runs cleanup.mjs and decodes its report into out; it returns
// what went wrong, or "".
func runNode(out any, args ...string) string {
	dir, msg := lancedbDir()
	if msg != "" {
		return msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"cleanup.mjs"}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	if err != nil || json.Unmarshal([]byte(lines[len(lines)-1]), out) != nil {
		return "node cleanup.mjs " + strings.Join(args, " ") + ": " + errString(err) + "\nstdout: " + string(stdout) + "\nstderr: " + stderr.String()
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "no JSON report"
	}
	return err.Error()
}

// copyTree copies a directory tree, keeping modification times.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(to, info.ModTime(), info.ModTime())
	})
}

// policyAt is the policy of a cleanup with Lance's cutoff (ms): versions
// before it are old; KeepLast 1 (Lance keeps only the latest); Grace as
// given, 0 matching Lance's delete_unverified=true.
func policyAt(cutoffMs int64, grace time.Duration, exact bool) Policy {
	cutoff := time.UnixMilli(cutoffMs)
	return Policy{KeepLast: 1, OlderThan: time.Hour, Now: cutoff.Add(time.Hour), Grace: grace, exactGrace: exact}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

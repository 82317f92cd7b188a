package cleanup

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
)

// The differential test: the same table, cleaned by LanceDB (optimize
// with cleanupOlderThan, on main and then on the branch) and by this
// package with the same cutoff, must be left with the same files, and
// LanceDB must read every kept version of both the same. The only
// difference allowed is the one docs/maintenance.md lists: the
// transaction file of a version kept only because a branch forks from it.

// lanceCleanup runs LanceDB's cleanup on the pristine table (plus
// prepare), on main then on dev, and returns the files and reads after
// it, or the errors it reported ("<name>: <error>", one per line).
func (f *fixture) lanceCleanup(t *testing.T, cutoff int64, deleteUnverified bool, prepare func()) ([]string, readReport, string) {
	t.Helper()
	f.restore(t)
	if prepare != nil {
		prepare()
	}
	var rep cleanupReport
	unverified := "false"
	if deleteUnverified {
		unverified = "true"
	}
	if msg := runNode(&rep, "cleanup", f.root, itoa(cutoff), unverified, "dev"); msg != "" {
		t.Fatal(msg)
	}
	if !rep.OK {
		t.Fatalf("LanceDB cleanup: %v", rep.Failures)
	}
	var errs []string
	for _, r := range rep.Runs {
		if r.Error != "" {
			errs = append(errs, r.Name+": "+r.Error)
			continue
		}
		// optimize must only have pruned (the fixture is compacted).
		for _, v := range r.After {
			if !slices.Contains(r.Before, v) {
				t.Fatalf("LanceDB's optimize of %s made version %v: it did more than prune", r.Name, v)
			}
		}
	}
	if len(errs) > 0 {
		return f.files(t), readReport{}, strings.Join(errs, "\n")
	}
	return f.files(t), f.read(t), ""
}

// ourCleanup runs this package's cleanup on the pristine table (plus
// prepare) and returns the plan, the files and LanceDB's reads.
func (f *fixture) ourCleanup(t *testing.T, p Policy, prepare func()) (*Plan, []string, readReport) {
	t.Helper()
	f.restore(t)
	if prepare != nil {
		prepare()
	}
	objs := f.store(t)
	pl, err := NewPlan(context.Background(), objs, lanceTable, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	res, err := pl.Execute(context.Background(), objs, rec.forget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ManifestsDeleted != pl.Totals.PrunedVersions || res.FilesDeleted != pl.Totals.Files || len(res.Spared) != 0 {
		t.Fatalf("executed %+v of %+v", res, pl.Totals)
	}
	return pl, f.files(t), f.read(t)
}

// forkOnlyTxns are the transaction files (relative to the table) of the
// versions a plan kept only because a branch forks from them. Lance keeps
// such a version's manifest and the files the branch references, but not
// its transaction file (cleanup.rs retain_branch_lineage_files).
func forkOnlyTxns(t *testing.T, f *fixture, pl *Plan) []string {
	t.Helper()
	var out []string
	for _, c := range pl.Chains {
		for _, v := range c.Kept {
			if !strings.HasPrefix(v.Why, "branch ") || strings.Contains(v.Why, ", ") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(f.pristine, filepath.FromSlash(v.Key)))
			if err != nil {
				t.Fatal(err)
			}
			r, err := lancemanifest.ReadReferences(b)
			if err != nil {
				t.Fatal(err)
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(string(c.Dir), lanceTable), "/")
			if rel != "" {
				rel += "/"
			}
			out = append(out, rel+"_transactions/"+r.TransactionFile)
		}
	}
	slices.Sort(out)
	return out
}

func diff(a, b []string) (onlyA, onlyB []string) {
	for _, x := range a {
		if !slices.Contains(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}

func sameReads(t *testing.T, lance, ours readReport) {
	t.Helper()
	if !reflect.DeepEqual(lance.Main, ours.Main) {
		t.Errorf("main reads differ:\nLanceDB's cleanup: %+v\nflightns's: %+v", lance.Main, ours.Main)
	}
	if !reflect.DeepEqual(lance.Branches, ours.Branches) {
		t.Errorf("branch reads differ:\nLanceDB's cleanup: %+v\nflightns's: %+v", lance.Branches, ours.Branches)
	}
	if !reflect.DeepEqual(lance.Tags, ours.Tags) {
		t.Errorf("tags differ:\nLanceDB's cleanup: %+v\nflightns's: %+v", lance.Tags, ours.Tags)
	}
}

// asBuilt checks that every version LanceDB reads after a cleanup reads
// as it did before.
func asBuilt(t *testing.T, f *fixture, r readReport) {
	t.Helper()
	for _, v := range r.Main {
		if i := slices.IndexFunc(f.reads.Main, func(b versionRead) bool { return b.Version == v.Version }); i < 0 || !reflect.DeepEqual(f.reads.Main[i], v) {
			t.Errorf("main@%d reads %+v, not as built", v.Version, v)
		}
	}
	for name, b := range r.Branches {
		for _, v := range b.Versions {
			built := f.reads.Branches[name].Versions
			if i := slices.IndexFunc(built, func(b versionRead) bool { return b.Version == v.Version }); i < 0 || !reflect.DeepEqual(built[i], v) {
				t.Errorf("%s@%d reads %+v, not as built", name, v.Version, v)
			}
		}
	}
}

func TestLanceAndFlightnsCleanupLeaveTheSameTable(t *testing.T) {
	f := lanceFixture(t)
	for _, c := range []struct {
		name   string
		cutoff int64
		pruned map[string][]uint64 // what both prune, by chain
	}{
		{"the cutoff after main v5: the fork point v3 is old", f.between(t, "", 5),
			map[string][]uint64{"": {5, 4, 2, 1}}},
		{"the cutoff after dev v5: main and dev prune, compacted files go", f.between(t, "dev", 5),
			map[string][]uint64{"": {10, 9, 8, 7, 6, 5, 4, 2, 1}, "dev": {5, 4, 3}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lanceFiles, lanceReads, lanceErr := f.lanceCleanup(t, c.cutoff, true, nil)
			if lanceErr != "" {
				t.Fatal(lanceErr)
			}
			pl, ourFiles, ourReads := f.ourCleanup(t, policyAt(c.cutoff, 0, true), nil)
			for _, ch := range pl.Chains {
				if got := versionsOf(ch.Pruned); !slices.Equal(got, c.pruned[ch.Branch]) {
					t.Errorf("%s prunes %v, want %v", chainName(ch.Branch), got, c.pruned[ch.Branch])
				}
			}
			onlyLance, onlyOurs := diff(lanceFiles, ourFiles)
			allowed := forkOnlyTxns(t, f, pl)
			if len(onlyLance) != 0 || !slices.Equal(onlyOurs, allowed) {
				t.Errorf("files left only by LanceDB's cleanup: %v\nonly by flightns's: %v\nallowed: %v", onlyLance, onlyOurs, allowed)
			}
			if len(allowed) != 1 || !strings.HasPrefix(allowed[0], "_transactions/2-") {
				t.Errorf("the fork point v3's transaction, and only it, should differ: %v", allowed)
			}
			sameReads(t, lanceReads, ourReads)
			asBuilt(t, f, ourReads)
			t.Logf("%d versions pruned, %d files deleted (%d bytes); %d files left by both", pl.Totals.PrunedVersions, pl.Totals.Files, pl.Totals.FileBytes, len(lanceFiles))
		})
	}
}

// With their defaults, Lance deletes at once the files that only pruned
// versions referenced (it knows they belong to no write in progress);
// flightns keeps every file younger than the grace period, so it deletes
// only the pruned manifests now, and those files at a later run.
func TestWithTheirDefaultsFlightnsKeepsYoungFilesLanceDeletes(t *testing.T) {
	f := lanceFixture(t)
	cutoff := f.between(t, "dev", 5)
	lanceFiles, lanceReads, lanceErr := f.lanceCleanup(t, cutoff, false, nil)
	if lanceErr != "" {
		t.Fatal(lanceErr)
	}
	exact, _, _ := f.ourCleanup(t, policyAt(cutoff, 0, true), nil)
	pl, ourFiles, ourReads := f.ourCleanup(t, policyAt(cutoff, 0, false), nil)
	if pl.Policy.Grace != DefaultGrace || pl.Totals.Files != 0 || pl.Totals.PrunedVersions != exact.Totals.PrunedVersions {
		t.Fatalf("with the default grace: %+v, %+v", pl.Policy, pl.Totals)
	}
	// Lance deleted what only pruned versions named; flightns kept those,
	// and the fork point's transaction.
	want := forkOnlyTxns(t, f, pl)
	for _, file := range exact.Files {
		if strings.HasPrefix(file.Reason, "referenced only by pruned ") {
			want = append(want, strings.TrimPrefix(file.Key, lanceTable+"/"))
		}
	}
	slices.Sort(want)
	onlyLance, onlyOurs := diff(lanceFiles, ourFiles)
	if len(onlyLance) != 0 || !slices.Equal(onlyOurs, want) {
		t.Errorf("files left only by LanceDB's cleanup: %v\nonly by flightns's: %v\nwant: %v", onlyLance, onlyOurs, want)
	}
	sameReads(t, lanceReads, ourReads)
}

// LanceDB's optimize refuses to prune a tagged version (Lance's
// error_if_tagged_old_versions, which optimize cannot turn off) and then
// deletes nothing of that branch; flightns keeps the tagged version and
// prunes the rest.
func TestATaggedOldVersionStopsLanceButIsKeptByFlightns(t *testing.T) {
	f := lanceFixture(t)
	cutoff := f.between(t, "dev", 5)
	tag := func() {
		var r struct{ OK bool }
		if msg := runNode(&r, "tag", f.root, "old", "2"); msg != "" || !r.OK {
			t.Fatalf("tag: %s", msg)
		}
	}
	outsideTree := func(files []string) []string {
		return slices.DeleteFunc(files, func(f string) bool { return strings.HasPrefix(f, "tree/") })
	}
	f.restore(t)
	tag()
	tagged := outsideTree(f.files(t))
	lanceFiles, _, lanceErr := f.lanceCleanup(t, cutoff, true, tag)
	if !strings.HasPrefix(lanceErr, "main: ") || !strings.Contains(lanceErr, "tagged version(s) have been marked for cleanup") || strings.Contains(lanceErr, "dev: ") {
		t.Fatalf("LanceDB's cleanup with an old tag on main: %q", lanceErr)
	}
	if a, b := diff(outsideTree(lanceFiles), tagged); len(a)+len(b) != 0 {
		t.Fatalf("LanceDB's refused cleanup of main changed its files: %v %v", a, b)
	}

	untagged, _, _ := f.lanceCleanup(t, cutoff, true, nil)
	pl, ourFiles, ourReads := f.ourCleanup(t, policyAt(cutoff, 0, true), tag)
	main := chainOf(t, pl, "")
	if i := slices.IndexFunc(main.Kept, func(v Version) bool { return v.Version == 2 }); i < 0 || main.Kept[i].Why != `tag "old"` {
		t.Fatalf("main keeps %+v", main.Kept)
	}
	// What is left is what Lance leaves without the tag, the fork point's
	// transaction, the tag, and v2 with every file it references.
	want := append(slices.Clone(untagged), forkOnlyTxns(t, f, pl)...)
	want = append(want, "_refs/tags/old.json")
	b, err := os.ReadFile(filepath.Join(f.pristine, lanceTable, "_versions", lancemanifest.ManifestName(lancemanifest.V2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := lancemanifest.ReadReferences(b)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "_versions/"+lancemanifest.ManifestName(lancemanifest.V2, 2), "_transactions/"+r.TransactionFile)
	for _, d := range r.DataFiles {
		want = append(want, "data/"+d.Path)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(ourFiles, want) {
		a, b := diff(ourFiles, want)
		t.Errorf("files: extra %v, missing %v", a, b)
	}
	if got := ourReads.Tags["old"]; got.Version != 2 || !slices.Equal(got.Rows, f.reads.Main[1].Rows) {
		t.Errorf("the tag reads %+v, want v2's %v", got, f.reads.Main[1].Rows)
	}
	asBuilt(t, f, ourReads)
}

// Every file LanceDB wrote is named by one of its manifests, and every
// name a manifest holds is a file: the reference reader misses nothing
// Lance writes.
func TestEveryFileLanceWroteIsNamedByAManifest(t *testing.T) {
	f := lanceFixture(t)
	f.restore(t)
	pl, err := NewPlan(context.Background(), f.store(t), lanceTable, nil, Policy{KeepLast: 1 << 30, exactGrace: true, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Totals.PrunedVersions != 0 || pl.Totals.Files != 0 {
		t.Fatalf("keeping every version, a plan deletes %+v: %+v", pl.Totals, pl.Files)
	}
	files := f.files(t)
	named := map[string]bool{}
	for _, c := range pl.Chains {
		for _, v := range c.Kept {
			b, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(v.Key)))
			if err != nil {
				t.Fatal(err)
			}
			r, err := lancemanifest.ReadReferences(b)
			if err != nil {
				t.Fatal(err)
			}
			dir := strings.TrimPrefix(strings.TrimPrefix(string(c.Dir), lanceTable), "/")
			if dir != "" {
				dir += "/"
			}
			// A file named through a base is in the base's directory: here
			// always main's (the branch's parent).
			in := func(ref lancemanifest.FileRef) string {
				if ref.HasBase {
					if bp := r.BasePaths[0]; len(r.BasePaths) != 1 || bp.ID != ref.BaseID || bp.Path != filepath.Join(f.root, lanceTable) {
						t.Fatalf("%s: base %d of %+v", v.Key, ref.BaseID, r.BasePaths)
					}
					return ""
				}
				return dir
			}
			for _, d := range r.DataFiles {
				named[in(d)+"data/"+d.Path] = true
			}
			for _, d := range r.DeletionFiles {
				named[in(d)+"_deletions/"+d.Path] = true
			}
			named[dir+"_transactions/"+r.TransactionFile] = true
			for _, ix := range r.Indices {
				idir := dir
				if ix.HasBase {
					idir = ""
				}
				for _, file := range files {
					if strings.HasPrefix(file, idir+"_indices/"+ix.UUID+"/") {
						named[file] = true
					}
				}
				named[idir+"_indices/"+ix.UUID+"/"] = true
			}
		}
	}
	for name := range named {
		if strings.HasSuffix(name, "/") {
			if !slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, name) }) {
				t.Errorf("a manifest names index directory %s, which holds no file", name)
			}
		} else if !slices.Contains(files, name) {
			t.Errorf("a manifest names %s, which is not there", name)
		}
	}
	for _, file := range files {
		area := file
		if after, ok := strings.CutPrefix(file, "tree/dev/"); ok {
			area = after
		}
		switch {
		case strings.HasPrefix(area, "_versions/"), strings.HasPrefix(area, "_refs/"):
		case !named[file]:
			t.Errorf("%s is named by no manifest", file)
		}
	}
}

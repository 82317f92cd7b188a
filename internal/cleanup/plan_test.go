package cleanup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// The synthetic tables are made of manifests LanceDB 0.39 wrote
// (lancemanifest/testdata: main v1–v4 and a commit on branch dev that
// forked from v4) and a file for every name they reference, plus files no
// manifest names.
const (
	frag0    = "data/011101110000101000011111f01a554939880cde8fb5ef17c7.lance"
	frag1    = "data/010011110011001001101110433a6543f8bd22a38a92f6346a.lance"
	devFrag  = "tree/dev/data/11011111000001001100000037d16b4d52bc8035ecc2f6f4ff.lance"
	delFile  = "_deletions/0-2-14168484378706923181.arrow"
	indexDir = "_indices/cc5974db-de53-4a3c-9cba-7cd3bd0f801c/"
	txn1     = "_transactions/0-ee453ee0-ffdc-4df2-859b-b5d0b625ce7d.txn"
	txn2     = "_transactions/1-d8a3b3d5-78c8-45c4-a086-39f0dc123e87.txn"
	txn3     = "_transactions/2-42b894e8-50b6-404e-8206-dc04f8ee8613.txn"
	txn4     = "_transactions/3-a4ce732a-835f-4507-adb5-9fa2fc774394.txn"
	devTxn5  = "tree/dev/_transactions/4-0a0ecb0f-c2cb-4928-9693-097bcbb5f74e.txn"
)

// garbage are files no manifest names, in each place Lance's cleanup
// looks, and files in places it does not.
var garbage = []string{
	"data/orphan.lance", "data/orphan/1.blob", "_transactions/9-orphan.txn", "_deletions/9-9-9.arrow", "_deletions/9-9-8.bin",
	"_indices/00000000-0000-0000-0000-000000000000/page_data.lance", "_versions/.tmp_5_abc",
	"tree/dev/data/orphan-dev.lance", "tree/dev/_transactions/9-orphan-dev.txn",
}

// keptAlways are files a cleanup never deletes: not Lance's kind of file
// or not in Lance's place for it.
var keptAlways = []string{
	"data/notes.txt", "_indices/loose.idx", "_blobs/data/x.lance", "_versions/latest_version_hint.json",
	"_versions/_latest.manifest", "_transactions/sub/../x.json", "tree/ghost/data/g.lance",
}

// manifestTimes are the timestamps of v1–v4 and dev's v5.
var manifestTimes = func() map[string]time.Time {
	out := map[string]time.Time{}
	for _, v := range []string{"v1", "v2", "v3", "v4", "dev-v5"} {
		b, err := os.ReadFile(filepath.Join("..", "lancemanifest", "testdata", v+".manifest"))
		if err != nil {
			panic(err)
		}
		r, err := lancemanifest.ReadReferences(b)
		if err != nil {
			panic(err)
		}
		out[v] = r.Timestamp
	}
	return out
}()

// now is the time the tests apply their policies at: a month after the
// manifests were written.
var now = manifestTimes["v4"].Add(30 * 24 * time.Hour)

type table struct {
	t    *testing.T
	dir  string // the store's root
	objs *objstore.Store
	name lancemanifest.Dir
}

func newTable(t *testing.T) *table {
	t.Helper()
	dir := t.TempDir()
	objs, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	tb := &table{t: t, dir: dir, objs: objs, name: "ns/t"}
	for v, f := range map[uint64]string{1: "v1", 2: "v2", 3: "v3", 4: "v4"} {
		tb.putManifest(tb.name, v, tb.testdata(f))
	}
	tb.putManifest(tb.name+"/tree/dev", 5, tb.testdata("dev-v5"))
	tb.put("_refs/branches/dev.json", `{"parentBranch": null, "parentVersion": 4, "createAt": 1796000000, "manifestSize": 1}`)
	for _, f := range []string{frag0, frag1, devFrag, delFile, indexDir + "page_data.lance", indexDir + "page_lookup.lance", txn1, txn2, txn3, txn4, devTxn5} {
		tb.put(f, "x")
	}
	for _, f := range append(slices.Clone(garbage), keptAlways...) {
		if !strings.Contains(f, "..") {
			tb.put(f, "garbage")
		}
	}
	tb.age(40 * 24 * time.Hour)
	return tb
}

func (tb *table) testdata(name string) []byte {
	b, err := os.ReadFile(filepath.Join("..", "lancemanifest", "testdata", name+".manifest"))
	if err != nil {
		tb.t.Fatal(err)
	}
	return b
}

func (tb *table) putManifest(dir lancemanifest.Dir, v uint64, b []byte) string {
	key := dir.Manifest(lancemanifest.V2, v)
	if err := tb.objs.Put(context.Background(), key, b); err != nil {
		tb.t.Fatal(err)
	}
	return key
}

func (tb *table) put(rel, content string) {
	if err := tb.objs.Put(context.Background(), string(tb.name)+"/"+rel, []byte(content)); err != nil {
		tb.t.Fatal(err)
	}
}

// age sets every file's modification time to now-d.
func (tb *table) age(d time.Duration) {
	tb.t.Helper()
	err := filepath.Walk(tb.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		return os.Chtimes(p, now.Add(-d), now.Add(-d))
	})
	if err != nil {
		tb.t.Fatal(err)
	}
}

func (tb *table) touch(rel string, d time.Duration) {
	if err := os.Chtimes(filepath.Join(tb.dir, string(tb.name), rel), now.Add(-d), now.Add(-d)); err != nil {
		tb.t.Fatal(err)
	}
}

// files lists the table's files, relative to its directory.
func (tb *table) files() []string {
	objs, err := tb.objs.ListAll(context.Background(), string(tb.name)+"/")
	if err != nil {
		tb.t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, strings.TrimPrefix(o.Key, string(tb.name)+"/"))
	}
	return out
}

func (tb *table) plan(p Policy, branches ...string) *Plan {
	tb.t.Helper()
	if p.Now.IsZero() {
		p.Now = now
	}
	pl, err := NewPlan(context.Background(), tb.objs, tb.name, branches, p)
	if err != nil {
		tb.t.Fatal(err)
	}
	return pl
}

func versionsOf(vs []Version) []uint64 {
	var out []uint64
	for _, v := range vs {
		out = append(out, v.Version)
	}
	return out
}

func relFiles(pl *Plan) []string {
	var out []string
	for _, f := range pl.Files {
		out = append(out, strings.TrimPrefix(f.Key, string(pl.Table)+"/"))
	}
	return out
}

func chainOf(t *testing.T, pl *Plan, branch string) Chain {
	t.Helper()
	for _, c := range pl.Chains {
		if c.Branch == branch {
			return c
		}
	}
	t.Fatalf("no chain %q in %+v", branch, pl.Chains)
	return Chain{}
}

func TestAPlanKeepsTheLatestTheLastKAndTheForkPoints(t *testing.T) {
	tb := newTable(t)
	pl := tb.plan(Policy{KeepLast: 2})
	main, dev := chainOf(t, pl, ""), chainOf(t, pl, "dev")
	if got := versionsOf(main.Kept); !slices.Equal(got, []uint64{4, 3}) {
		t.Errorf("main keeps %v (%+v)", got, main.Kept)
	}
	if got := versionsOf(main.Pruned); !slices.Equal(got, []uint64{2, 1}) {
		t.Errorf("main prunes %v", got)
	}
	if main.Kept[0].Why != `latest, branch "dev" forks from it` || main.Kept[1].Why != "among the last 2" {
		t.Errorf("why: %q, %q", main.Kept[0].Why, main.Kept[1].Why)
	}
	if got := versionsOf(dev.Kept); !slices.Equal(got, []uint64{5}) || len(dev.Pruned) != 0 || !dev.Managed {
		t.Errorf("dev: %+v", dev)
	}
	// What v1 and v2 alone named (their transactions), and every garbage
	// file Lance's cleanup would delete.
	want := append([]string{txn1, txn2}, garbage...)
	slices.Sort(want)
	if got := relFiles(pl); !slices.Equal(got, want) {
		t.Errorf("deletes\n%v\nwant\n%v", got, want)
	}
	for _, f := range pl.Files {
		switch rel := strings.TrimPrefix(f.Key, string(pl.Table)+"/"); rel {
		case txn1:
			if f.Kind != KindTransaction || f.Reason != "referenced only by pruned main@1" {
				t.Errorf("%s: %v %q", rel, f.Kind, f.Reason)
			}
		case "data/orphan/1.blob", "data/orphan.lance":
			if f.Kind != KindData || f.Reason != "referenced by no manifest" {
				t.Errorf("%s: %v %q", rel, f.Kind, f.Reason)
			}
		case "_versions/.tmp_5_abc":
			if f.Kind != KindTempManifest {
				t.Errorf("%s: %v", rel, f.Kind)
			}
		}
	}
	if pl.Totals.PrunedVersions != 2 || pl.Totals.KeptVersions != 3 || pl.Totals.Files != len(want) || pl.Totals.ManifestBytes == 0 {
		t.Errorf("totals %+v", pl.Totals)
	}
}

func TestAPlanPrunesByAgeButKeepsTaggedVersions(t *testing.T) {
	tb := newTable(t)
	tb.put("_refs/tags/first.json", `{"branch": null, "version": 1, "manifestSize": 1}`)
	tb.put("_refs/tags/on-dev.json", `{"branch": "dev", "version": 5, "manifestSize": 1}`)
	// The cutoff falls between v2 and v3: v3 and v4 are newer.
	cutoff := manifestTimes["v3"].Add(-time.Millisecond)
	pl := tb.plan(Policy{KeepLast: 1, OlderThan: now.Sub(cutoff)})
	main := chainOf(t, pl, "")
	if got := versionsOf(main.Kept); !slices.Equal(got, []uint64{4, 3, 1}) {
		t.Errorf("main keeps %v", got)
	}
	if main.Kept[1].Why != "not older than the cutoff" || main.Kept[2].Why != `tag "first"` {
		t.Errorf("why: %+v", main.Kept)
	}
	if got := versionsOf(main.Pruned); !slices.Equal(got, []uint64{2}) || !strings.HasPrefix(main.Pruned[0].Why, "older than ") {
		t.Errorf("main prunes %+v", main.Pruned)
	}
	if slices.Contains(relFiles(pl), txn1) || !slices.Contains(relFiles(pl), txn2) {
		t.Errorf("deletes %v", relFiles(pl))
	}
	// A version exactly at the cutoff is kept, as Lance keeps it.
	pl = tb.plan(Policy{KeepLast: 1, OlderThan: now.Sub(manifestTimes["v2"])})
	if got := versionsOf(chainOf(t, pl, "").Pruned); !slices.Equal(got, nil) {
		t.Errorf("at the cutoff: prunes %v", got)
	}
}

func TestAForkPointIsKeptOnItsParentChain(t *testing.T) {
	tb := newTable(t)
	tb.put("_refs/branches/dev.json", `{"parentBranch": null, "parentVersion": 2}`)
	tb.putManifest(lancemanifest.Chain{Table: tb.name, Branch: "dev/sub"}.Dir(), 5, tb.testdata("dev-v5"))
	tb.put("_refs/branches/dev%2Fsub.json", `{"parentBranch": "dev", "parentVersion": 5}`)
	pl := tb.plan(Policy{KeepLast: 1})
	if got := versionsOf(chainOf(t, pl, "").Kept); !slices.Equal(got, []uint64{4, 2}) {
		t.Errorf("main keeps %v", got)
	}
	if c := chainOf(t, pl, "dev/sub"); !c.Managed || len(c.Kept) != 1 {
		t.Errorf("dev/sub: %+v", c)
	}
	if c := chainOf(t, pl, "dev"); c.Kept[0].Why != `latest, branch "dev/sub" forks from it` {
		t.Errorf("dev: %+v", c)
	}
}

func TestYoungFilesAreKeptWhateverReferencesThem(t *testing.T) {
	tb := newTable(t)
	tb.touch("data/orphan.lance", time.Hour)
	tb.touch(txn1, 6*24*time.Hour)
	pl := tb.plan(Policy{KeepLast: 2}) // the default grace: 7 days
	got := relFiles(pl)
	if slices.Contains(got, "data/orphan.lance") || slices.Contains(got, txn1) || !slices.Contains(got, txn2) {
		t.Errorf("deletes %v", got)
	}
	if pl.Policy.Grace != DefaultGrace {
		t.Errorf("grace %v", pl.Policy.Grace)
	}
	// Past the grace period, they go.
	pl = tb.plan(Policy{KeepLast: 2, Grace: time.Hour})
	if got := relFiles(pl); !slices.Contains(got, "data/orphan.lance") || !slices.Contains(got, txn1) {
		t.Errorf("deletes %v", got)
	}
}

// A branch names its parent's files through a base path; when every
// version of main that named them is pruned, the branch still keeps them.
func TestFilesABranchInheritsAreKeptWhenItsParentPrunesThem(t *testing.T) {
	tb := newTable(t)
	ctx := context.Background()
	// main v5 restores v1 (frag0 only); the branch "c" is a clone of v4
	// (frag0, frag1, the deletion file, the index) whose record says it
	// forks from v1, so no kept version of main names frag1.
	v5, err := lancemanifest.Restored(tb.testdata("v1"), tb.testdata("v4"), 5, manifestTimes["v4"].Add(time.Second),
		lancemanifest.RestoreTransaction(4, "u5", 1), lancemanifest.TransactionFile(4, "u5"))
	if err != nil {
		t.Fatal(err)
	}
	tb.putManifest(tb.name, 5, v5)
	tb.put("_transactions/"+lancemanifest.TransactionFile(4, "u5"), "x")
	c, err := lancemanifest.Cloned(tb.testdata("v4"), lancemanifest.Clone{Branch: "c", RefPath: "file://" + tb.dir + "/" + string(tb.name),
		Now: manifestTimes["v4"].Add(2 * time.Second), Txn: lancemanifest.CloneTransaction(4, "uc", "", "x", "c"), TxnFile: "4-uc.txn"})
	if err != nil {
		t.Fatal(err)
	}
	tb.putManifest(tb.name+"/tree/c", 4, c)
	tb.put("tree/c/_transactions/4-uc.txn", "x")
	tb.put("_refs/branches/c.json", `{"parentBranch": null, "parentVersion": 1}`)
	tb.put("_refs/branches/dev.json", `{"parentBranch": null, "parentVersion": 1}`)
	tb.age(40 * 24 * time.Hour)
	pl, err := NewPlan(ctx, tb.objs, tb.name, nil, Policy{KeepLast: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got := versionsOf(chainOf(t, pl, "").Kept); !slices.Equal(got, []uint64{5, 1}) {
		t.Errorf("main keeps %v", got)
	}
	for _, f := range []string{frag0, frag1, delFile, indexDir + "page_data.lance", txn1} {
		if slices.Contains(relFiles(pl), f) {
			t.Errorf("deletes %s, which a kept version references", f)
		}
	}
	// v4's own transaction (not inherited) goes.
	if !slices.Contains(relFiles(pl), txn4) {
		t.Errorf("keeps %s", txn4)
	}
}

// A directory under tree/ that holds manifests but that no branch
// records is nobody's to prune: everything of it stays, and what its
// manifests reference stays everywhere.
func TestAnUnrecordedTreeIsKeptWhole(t *testing.T) {
	tb := newTable(t)
	tb.putManifest(tb.name+"/tree/stray", 1, tb.testdata("v1"))
	tb.putManifest(tb.name+"/tree/stray", 2, tb.testdata("v2"))
	tb.put("tree/stray/data/s.lance", "x")
	tb.put("tree/stray/_transactions/9-s.txn", "x")
	tb.age(40 * 24 * time.Hour)
	pl := tb.plan(Policy{KeepLast: 1})
	stray := chainOf(t, pl, "stray")
	if stray.Managed || len(stray.Kept) != 2 || len(stray.Pruned) != 0 || !strings.Contains(stray.Kept[1].Why, "no branch records") {
		t.Errorf("stray: %+v", stray)
	}
	got := relFiles(pl)
	for _, f := range []string{"tree/stray/data/s.lance", "tree/stray/_transactions/9-s.txn", txn1, txn2} {
		if slices.Contains(got, f) {
			t.Errorf("deletes %s", f)
		}
	}
	// Named by the caller, it is a branch like any other.
	pl = tb.plan(Policy{KeepLast: 1}, "stray")
	if c := chainOf(t, pl, "stray"); !c.Managed || !slices.Equal(versionsOf(c.Pruned), []uint64{1}) {
		t.Errorf("stray named: %+v", c)
	}
}

// A branch whose directory lies inside another chain's data/ (a branch
// named "dev/data"): its files are never the outer chain's to delete.
func TestANestedChainsFilesAreNotTheOuterChains(t *testing.T) {
	tb := newTable(t)
	tb.putManifest(tb.name+"/tree/dev/data", 1, tb.testdata("v1"))
	tb.put("tree/dev/data/data/inner.lance", "x")
	tb.age(40 * 24 * time.Hour)
	pl := tb.plan(Policy{KeepLast: 1})
	if slices.Contains(relFiles(pl), "tree/dev/data/data/inner.lance") {
		t.Errorf("deletes the nested chain's file: %v", relFiles(pl))
	}
	// Everything under tree/dev/data/ is the nested chain's now, even
	// dev's own orphan data file; dev's other orphans still go.
	if slices.Contains(relFiles(pl), "tree/dev/data/orphan-dev.lance") || !slices.Contains(relFiles(pl), "tree/dev/_transactions/9-orphan-dev.txn") {
		t.Errorf("deletes %v", relFiles(pl))
	}
}

func TestWhatCannotBeReadFailsThePlan(t *testing.T) {
	for _, c := range []struct {
		name string
		put  func(tb *table)
		want string
	}{
		{"a corrupt manifest", func(tb *table) { tb.putManifest(tb.name, 2, []byte("not a manifest LANC")) }, "cannot read manifest ns/t/_versions/18446744073709551613.manifest"},
		{"a manifest under another version's name", func(tb *table) { tb.putManifest(tb.name, 7, tb.testdata("v1")) }, "its name says version 7, its content 1"},
		{"a staging manifest", func(tb *table) {
			tb.put("_versions/18446744073709551610.manifest-abc", "LANC")
		}, "cannot read manifest"},
		{"a tag file", func(tb *table) { tb.put("_refs/tags/x.json", `{"version": "one"}`) }, "cannot read ref file ns/t/_refs/tags/x.json"},
		{"a branch file", func(tb *table) { tb.put("_refs/branches/x.json", `{"parentBranch": null}`) }, "no parentVersion"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := newTable(t)
			c.put(tb)
			_, err := NewPlan(context.Background(), tb.objs, tb.name, nil, Policy{KeepLast: 1, Now: now})
			if !errors.Is(err, nserror.ErrInvalidTableState) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v", err)
			}
		})
	}
}

func TestPoliciesThatWouldLoseDataAreRefused(t *testing.T) {
	for _, p := range []Policy{
		{KeepLast: 0},
		{KeepLast: -1},
		{KeepLast: 1, OlderThan: -time.Second},
		{KeepLast: 1, Grace: -time.Second},
		{KeepLast: 1, Grace: time.Minute},
	} {
		if err := p.Validate(); !errors.Is(err, nserror.ErrInvalidInput) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	if err := (Policy{KeepLast: 1, Grace: MinGrace}).Validate(); err != nil {
		t.Error(err)
	}
	tb := newTable(t)
	for _, b := range []string{"", "../x", "a//b"} {
		if _, err := NewPlan(context.Background(), tb.objs, tb.name, []string{b}, Policy{KeepLast: 1}); !errors.Is(err, nserror.ErrInvalidInput) {
			t.Errorf("branch %q: %v", b, err)
		}
	}
	// A branch record whose name cannot be a directory of the table names
	// no chain.
	tb.put("_refs/branches/..%2F..%2Fevil.json", `{"parentBranch": null, "parentVersion": 1}`)
	pl := tb.plan(Policy{KeepLast: 1})
	for _, c := range pl.Chains {
		if strings.Contains(string(c.Dir), "..") {
			t.Errorf("chain %+v", c)
		}
	}
	for _, table := range []lancemanifest.Dir{"", "ns/t/", "../x", "ns//t"} {
		if _, err := NewPlan(context.Background(), tb.objs, table, nil, Policy{KeepLast: 1}); !errors.Is(err, nserror.ErrInvalidInput) {
			t.Errorf("table %q: %v", table, err)
		}
	}
}

// recorder records, in order, the forget calls and the deletions.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) forget(_ context.Context, branch string, versions []uint64) error {
	r.add(fmt.Sprintf("forget %s %v", chainName(branch), versions))
	return nil
}

func openRecorded(t *testing.T, dir string, r *recorder) *objstore.Store {
	t.Helper()
	objs, err := objstore.OpenWith(context.Background(), "file://"+dir, objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, phase objstore.Phase) error {
		if op == objstore.OpDelete && phase == objstore.After {
			r.add("delete " + key)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	return objs
}

// checkKeptVersionsRead checks that every version the plan keeps has its
// manifest, and that every file it references (by name) is there.
func checkKeptVersionsRead(t *testing.T, objs *objstore.Store, pl *Plan) {
	t.Helper()
	all, err := objs.ListAll(context.Background(), string(pl.Table)+"/")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, o := range all {
		files[baseName(o.Key)] = true
		if i := strings.Index(o.Key, "/_indices/"); i >= 0 {
			uuid, _, _ := strings.Cut(o.Key[i+len("/_indices/"):], "/")
			files[uuid] = true
		}
	}
	for _, c := range pl.Chains {
		for _, v := range c.Kept {
			b, err := objs.Get(context.Background(), v.Key)
			if err != nil {
				t.Fatalf("kept %s@%d: %v", chainName(c.Branch), v.Version, err)
			}
			r, err := lancemanifest.ReadReferences(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range namesOf(r) {
				if _, name, _ := strings.Cut(n, ":"); !files[name] {
					t.Errorf("kept %s@%d references %s, which is gone", chainName(c.Branch), v.Version, n)
				}
			}
		}
	}
}

func TestExecuteForgetsThenDeletesManifestsThenFiles(t *testing.T) {
	tb := newTable(t)
	rec := &recorder{}
	objs := openRecorded(t, tb.dir, rec)
	pl := tb.plan(Policy{KeepLast: 2})
	var progress []Progress
	res, err := pl.Execute(context.Background(), objs, rec.forget, func(p Progress) { progress = append(progress, p) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Forgotten != 2 || res.ManifestsDeleted != 2 || res.FilesDeleted != len(pl.Files) || len(res.Spared) != 0 ||
		res.BytesDeleted != pl.Totals.ManifestBytes+pl.Totals.FileBytes {
		t.Errorf("result %+v, plan totals %+v", res, pl.Totals)
	}
	if rec.events[0] != "forget main [1 2]" {
		t.Fatalf("first %q", rec.events[0])
	}
	// Every manifest deletion comes before every file deletion.
	lastManifest, firstFile := 0, len(rec.events)
	for i, e := range rec.events[1:] {
		if strings.Contains(e, "/_versions/") && strings.HasSuffix(e, ".manifest") {
			lastManifest = i + 1
		} else if firstFile == len(rec.events) {
			firstFile = i + 1
		}
	}
	if lastManifest != 2 || firstFile != 3 || len(rec.events) != 3+len(pl.Files) {
		t.Errorf("events %v", rec.events)
	}
	if last := progress[len(progress)-1]; last.Phase != PhaseFiles || last.Done != len(pl.Files) || last.Bytes != pl.Totals.FileBytes {
		t.Errorf("progress %+v", progress)
	}
	checkKeptVersionsRead(t, tb.objs, pl)
	left := tb.files()
	for _, f := range append(garbage, txn1, txn2) {
		if slices.Contains(left, f) {
			t.Errorf("%s is left", f)
		}
	}
	for _, f := range keptAlways {
		if !strings.Contains(f, "..") && !slices.Contains(left, f) {
			t.Errorf("%s is gone", f)
		}
	}
	// Done: a second plan finds nothing more to do.
	if again := tb.plan(Policy{KeepLast: 2}); again.Totals.PrunedVersions != 0 || again.Totals.Files != 0 {
		t.Errorf("a second plan: %+v", again.Totals)
	}
}

func TestAForgetThatFailsDeletesNothing(t *testing.T) {
	tb := newTable(t)
	before := tb.files()
	pl := tb.plan(Policy{KeepLast: 1})
	_, err := pl.Execute(context.Background(), tb.objs, func(context.Context, string, []uint64) error { return errors.New("redis down") }, nil)
	if err == nil || !strings.Contains(err.Error(), "redis down") {
		t.Fatal(err)
	}
	if !slices.Equal(tb.files(), before) {
		t.Errorf("files changed")
	}
}

// What is written between the plan and its execution is checked for
// before each deletion phase: a new version's references and a new tag's
// version are spared.
func TestExecuteSparesWhatWasWrittenSinceThePlan(t *testing.T) {
	tb := newTable(t)
	pl := tb.plan(Policy{KeepLast: 2})
	// Since the plan: a version that names an orphan transaction file,
	// and a tag on pruned v1.
	v5, err := lancemanifest.Restored(tb.testdata("v1"), tb.testdata("v4"), 5, now, lancemanifest.RestoreTransaction(4, "u", 1), "9-orphan.txn")
	if err != nil {
		t.Fatal(err)
	}
	tb.putManifest(tb.name, 5, v5)
	forget := func(context.Context, string, []uint64) error {
		tb.put("_refs/tags/late.json", `{"branch": null, "version": 1}`)
		return nil
	}
	res, err := pl.Execute(context.Background(), tb.objs, forget, nil)
	if err != nil {
		t.Fatal(err)
	}
	v1 := tb.name.Manifest(lancemanifest.V2, 1)
	want := []string{v1, string(tb.name) + "/" + txn1, string(tb.name) + "/_transactions/9-orphan.txn"}
	slices.Sort(want)
	if slices.Sort(res.Spared); !slices.Equal(res.Spared, want) {
		t.Errorf("spared %v, want %v", res.Spared, want)
	}
	left := tb.files()
	for _, f := range []string{strings.TrimPrefix(v1, string(tb.name)+"/"), txn1, "_transactions/9-orphan.txn"} {
		if !slices.Contains(left, f) {
			t.Errorf("%s is gone", f)
		}
	}
	if slices.Contains(left, txn2) {
		t.Errorf("%s is left", txn2)
	}
}

// A staging manifest promoted to its final name while the plan reads it
// (flightns finalizing a commit) is read under its final name: the plan
// lists again rather than fail or miss what the version references.
func TestAManifestPromotedWhileThePlanReadsIsReadUnderItsFinalName(t *testing.T) {
	tb := newTable(t)
	ctx := context.Background()
	v5, err := lancemanifest.Restored(tb.testdata("v1"), tb.testdata("v4"), 5, now, lancemanifest.RestoreTransaction(4, "u", 1), "9-orphan.txn")
	if err != nil {
		t.Fatal(err)
	}
	final := tb.name.Manifest(lancemanifest.V2, 5)
	staging := final + "-abc"
	if err := tb.objs.Put(ctx, staging, v5); err != nil {
		t.Fatal(err)
	}
	promoted := false
	objs, err := objstore.OpenWith(ctx, "file://"+tb.dir, objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, phase objstore.Phase) error {
		if op == objstore.OpGet && phase == objstore.Before && key == staging && !promoted {
			promoted = true
			if _, err := tb.objs.CopyIfAbsent(ctx, staging, final); err != nil {
				return err
			}
			return tb.objs.Delete(ctx, staging)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = objs.Close() }()
	pl, err := NewPlan(ctx, objs, tb.name, nil, Policy{KeepLast: 1, Now: now})
	if err != nil || !promoted {
		t.Fatalf("%v (promoted: %v)", err, promoted)
	}
	main := chainOf(t, pl, "")
	if main.Kept[0].Version != 5 || slices.Contains(relFiles(pl), "_transactions/9-orphan.txn") {
		t.Errorf("kept %+v; deletes %v", main.Kept, relFiles(pl))
	}
}

// A tag made on a pruned version after its manifest is gone names a
// version that no longer reads, whatever the cleanup does: the check
// before the files phase goes on (and deletes that version's files).
func TestATagOnAVersionAlreadyDeletedDoesNotStopTheCleanup(t *testing.T) {
	tb := newTable(t)
	pl := tb.plan(Policy{KeepLast: 2})
	v1 := tb.name.Manifest(lancemanifest.V2, 1)
	tagged := false
	objs, err := objstore.OpenWith(context.Background(), "file://"+tb.dir, objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, phase objstore.Phase) error {
		if op == objstore.OpDelete && phase == objstore.After && key == v1 && !tagged {
			tagged = true
			tb.put("_refs/tags/late.json", `{"branch": null, "version": 1}`)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = objs.Close() }()
	res, err := pl.Execute(context.Background(), objs, nil, nil)
	if err != nil || !tagged || res.FilesDeleted != len(pl.Files) || len(res.Spared) != 0 {
		t.Fatalf("%+v %v (tagged %v)", res, err, tagged)
	}
}

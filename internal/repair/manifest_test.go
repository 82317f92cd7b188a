package repair

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/manifesttable"
)

// forge puts rows into __manifest through the commit log, as a copied
// fake row reaches a real segment, and waits until they are durable.
func forge(t *testing.T, svc *namespace.Service, changes ...manifesttable.Change) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seq, err := svc.Table().Append(ctx, changes)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Table().WaitDurable(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

func versionRow(id string, v uint64, path string, size uint64) manifesttable.Change {
	return manifesttable.Change{Row: manifesttable.Row{ObjectType: manifesttable.TypeTableVersion, ObjectID: id, TableVersion: v,
		ManifestPath: path, ManifestSize: size, CommittedAt: time.Now().UTC().Truncate(time.Microsecond)}}
}

// locationOf is a table's directory, relative to the root.
func locationOf(t *testing.T, svc *namespace.Service, id string) string {
	t.Helper()
	r, ok := svc.Table().Object(manifesttable.TypeTable, id)
	if !ok || r.Location == "" {
		t.Fatalf("no table row of %s", id)
	}
	return r.Location
}

// logFiles lists the segment files of the catalog under root.
func logFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "__manifest", "_log", "*"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

func driftOf(rep VerifyReport, kind DriftKind) []Drift {
	var out []Drift
	for _, d := range rep.Drift {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

func TestVerifyOfACleanCatalogFindsNoDriftInRecordsOrManifestFiles(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	table(t, svc, env.Root, "a", 3)
	table(t, svc, env.Root, "b", 1)
	rep, err := Verify(ctx, CatalogOf(svc), false, nil)
	if err != nil || len(rep.Drift) != 0 {
		t.Fatalf("clean catalog: %q, %v", kinds(rep), err)
	}
	// A namespace, two tables, four versions.
	if m := rep.Manifest; m.Rows != 7 || m.Segments == 0 || m.Seq == 0 || m.Snapshot != 0 {
		t.Fatalf("__manifest read from storage: %+v", m)
	}
	// After a snapshot (and segments after it), still clean.
	if err := Compact(ctx, CatalogOf(svc)); err != nil {
		t.Fatal(err)
	}
	table(t, svc, env.Root, "c", 2)
	rep, err = Verify(ctx, CatalogOf(svc), true, nil)
	if err != nil || len(rep.Drift) != 0 {
		t.Fatalf("clean catalog after a snapshot: %q, %v", kinds(rep), err)
	}
	if m := rep.Manifest; m.Snapshot == 0 || m.Snapshots != 1 || m.Rows != 10 || m.Seq <= m.Snapshot {
		t.Fatalf("__manifest read from storage after a snapshot: %+v", m)
	}
	storageOnly, err := VerifyStorage(ctx, env.Objects, env.Catalog, nil)
	if err != nil || len(storageOnly.Drift) != 0 || storageOnly.Manifest != rep.Manifest {
		t.Fatalf("storage only: %+v, %v; want the same __manifest as %+v", storageOnly, err, rep.Manifest)
	}
}

func TestVerifyReportsForgedManifestRowsThatStorageContradicts(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	table(t, svc, env.Root, "a", 2)
	table(t, svc, env.Root, "b", 1)
	a, b := locationOf(t, svc, "ns$a"), locationOf(t, svc, "ns$b")
	forge(t, svc,
		versionRow("ns$a", 7, "etc/passwd", 1),
		versionRow("ns$a", 8, lancemanifest.Dir(b).Manifest(lancemanifest.V2, 1), 8),   // another table's manifest
		versionRow("ns$a", 9, lancemanifest.Dir(a).Manifest(lancemanifest.V2, 9), 8),   // no such manifest
		versionRow("ns$a", 1, lancemanifest.Dir(a).Manifest(lancemanifest.V2, 1), 999), // the real one is 8 bytes
		versionRow("ns$ghost", 1, lancemanifest.Dir(a).Manifest(lancemanifest.V2, 1), 8),
		manifesttable.Change{Row: manifesttable.Row{ObjectType: manifesttable.TypeNamespace, ObjectID: "ns$$bad"}},
		manifesttable.Change{Row: manifesttable.Row{ObjectType: manifesttable.TypeTable, ObjectID: "ns$evil", Location: "../outside"}},
	)
	segments := logFiles(t, env.Root)

	want := "invalid-object-id@0/false invalid-row@0/false row-size-mismatch@1/false row-outside-table@7/false " +
		"row-outside-table@8/false row-missing-manifest@9/false row-without-table@1/false"
	rep, err := Verify(ctx, CatalogOf(svc), false, nil)
	if got := kinds(rep); err != nil || got != want {
		t.Fatalf("report: %q (%v), want %q", got, err, want)
	}
	out := driftOf(rep, RowOutsideTable)
	if s := out[0].String(); !strings.HasPrefix(s, "row-outside-table: table ns$a version 7 (etc/passwd): not inside the table's directory "+a+"/_versions/") {
		t.Errorf("etc/passwd reads %q", s)
	}
	if d := driftOf(rep, InvalidObjectID)[0]; d.Table != "ns$$bad" || d.Object != manifesttable.TypeNamespace || !strings.HasPrefix(d.String(), `invalid-object-id: namespace "ns$$bad": `) {
		t.Errorf("invalid id: %+v, %q", d, d)
	}
	if d := driftOf(rep, InvalidRow)[0]; d.Table != "ns$evil" || !strings.Contains(d.Detail, `"../outside"`) {
		t.Errorf("invalid location: %+v", d)
	}
	if d := driftOf(rep, RowWithoutTable)[0]; d.Table != "ns$ghost" {
		t.Errorf("row without a table: %+v", d)
	}

	// Repair rewrites no history: the same drift, none repaired, and not
	// one segment more.
	rep, err = Verify(ctx, CatalogOf(svc), true, nil)
	if got := kinds(rep); err != nil || got != want {
		t.Fatalf("repair: %q (%v), want %q", got, err, want)
	}
	if after := logFiles(t, env.Root); !slices.Equal(after, segments) {
		t.Errorf("verify --repair wrote segments: %d before, %d after", len(segments), len(after))
	}
	// The storage-only check (for a catalog that does not open) sees the
	// same rows.
	storageOnly, err := VerifyStorage(ctx, env.Objects, env.Catalog, nil)
	if got := kinds(storageOnly); err != nil || got != want {
		t.Fatalf("storage only: %q (%v), want %q", got, err, want)
	}
}

func TestVerifyRederivesVersionRowsMissingFromManifest(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	table(t, svc, env.Root, "a", 3)
	// Version 2's row disappears (its log entry lost, a bad segment); the
	// claim store still records the version as final, and its manifest is
	// in storage.
	forge(t, svc, manifesttable.Change{Delete: true, Row: manifesttable.Row{ObjectType: manifesttable.TypeTableVersion, ObjectID: "ns$a", TableVersion: 2}})
	rep, err := Verify(ctx, CatalogOf(svc), false, nil)
	if got := kinds(rep); err != nil || got != "missing-row@2/false" {
		t.Fatalf("report: %q (%v)", got, err)
	}
	rep, err = Verify(ctx, CatalogOf(svc), true, nil)
	if got := kinds(rep); err != nil || got != "missing-row@2/true" || rep.Unrepaired() != 0 {
		t.Fatalf("repair: %q (%v)", got, err)
	}
	rows := svc.Table().VersionRows("ns$a")
	if len(rows) != 3 || rows[1].TableVersion != 2 || rows[1].ManifestSize != 8 ||
		rows[1].ManifestPath != lancemanifest.Dir(locationOf(t, svc, "ns$a")).Manifest(lancemanifest.V2, 2) {
		t.Fatalf("rows after repair: %+v", rows)
	}
	rep, err = Verify(ctx, CatalogOf(svc), false, nil)
	if err != nil || len(rep.Drift) != 0 {
		t.Fatalf("after repair: %q (%v)", kinds(rep), err)
	}
}

func TestVerifyReportsUnreadableAndForeignManifestFilesAndHolesInTheLog(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	table(t, svc, env.Root, "a", 2)
	// A segment of another catalog, under a name the chain never reaches.
	other := nstest.New(t)
	table(t, other.Open(t), other.Root, "x", 1)
	foreign, err := os.ReadFile(logFiles(t, other.Root)[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(env.Root, "__manifest")
	if err := os.WriteFile(filepath.Join(dir, "_log", "00000000000000000000.parquet"), foreign, 0o644); err != nil {
		t.Fatal(err)
	}
	// A stray file, and a snapshot that is not Parquet.
	if err := os.WriteFile(filepath.Join(dir, "_log", "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "_snapshots"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_snapshots", "00000000000000000001.parquet"), []byte("PAR1 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "foreign-manifest-file@0/false unreadable-manifest-file@0/false unreadable-manifest-file@0/false"
	rep, err := Verify(ctx, CatalogOf(svc), false, nil)
	if got := kinds(rep); err != nil || got != want {
		t.Fatalf("report: %q (%v), want %q", got, err, want)
	}
	if s := rep.Drift[0].String(); !strings.HasPrefix(s, "foreign-manifest-file: __manifest/_log/00000000000000000000.parquet: written for catalog \""+other.Catalog+"\"") {
		t.Errorf("foreign segment reads %q", s)
	}
	if rep.Drift[1].Path != "__manifest/_log/notes.txt" || rep.Drift[2].Path != "__manifest/_snapshots/00000000000000000001.parquet" {
		t.Errorf("unreadable files: %+v", rep.Drift[1:])
	}

	// A segment in the middle of the chain goes missing: the next one no
	// longer continues the state, and the state stops before it.
	segs := logFiles(t, env.Root)
	segs = slices.DeleteFunc(segs, func(p string) bool {
		return strings.HasSuffix(p, "notes.txt") || strings.HasSuffix(p, "/00000000000000000000.parquet")
	})
	if len(segs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(segs))
	}
	if err := os.Remove(segs[len(segs)-2]); err != nil {
		t.Fatal(err)
	}
	rep, err = Verify(ctx, CatalogOf(svc), false, nil)
	// (File drift comes in key order.)
	if got, want := kinds(rep), "foreign-manifest-file@0/false segment-gap@0/false unreadable-manifest-file@0/false unreadable-manifest-file@0/false"; err != nil || got != want {
		t.Fatalf("report after a lost segment: %q (%v), want %q", got, err, want)
	}
	gap := driftOf(rep, SegmentGap)[0]
	if gap.Path != "__manifest/_log/"+filepath.Base(segs[len(segs)-1]) || !strings.Contains(gap.Detail, "are in no segment") {
		t.Errorf("gap: %+v", gap)
	}
}

// Verify covers each Lance branch's version rows as it covers main's: a
// clean branch is clean; a branch row naming main's manifest is outside
// the branch's directory; a branch version recorded final without a row
// is re-derived, on its branch.
func TestVerifyCoversLanceBranches(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	dir := table(t, svc, env.Root, "a", 2)
	a := locationOf(t, svc, "ns$a")
	for v := uint64(2); v <= 3; v++ {
		p := stage(t, filepath.Join(dir, "tree", "dev"), v)
		if _, err := svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"ns", "a"}, Branch: "dev",
			Version: int64(v), ManifestPath: "file://" + p}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Verify(ctx, CatalogOf(svc), false, nil)
	if err != nil || len(rep.Drift) != 0 {
		t.Fatalf("a clean catalog with a branch: %q, %v", kinds(rep), err)
	}
	bad := versionRow("ns$a", 7, lancemanifest.Dir(a).Manifest(lancemanifest.V2, 1), 8)
	bad.Row.Branch = "dev"
	forge(t, svc, bad, manifesttable.Change{Delete: true, Row: manifesttable.Row{ObjectType: manifesttable.TypeTableVersion,
		ObjectID: "ns$a", Branch: "dev", TableVersion: 3}})
	rep, err = Verify(ctx, CatalogOf(svc), true, nil)
	if got := kinds(rep); err != nil || got != "row-outside-table@7/false missing-row@3/true" {
		t.Fatalf("repair: %q (%v)", got, err)
	}
	for _, d := range rep.Drift {
		if d.Branch != "dev" || !strings.Contains(d.String(), "table ns$a branch dev version") {
			t.Errorf("drift not on dev: %+v, %q", d, d)
		}
	}
	rows := svc.Table().BranchVersionRows("ns$a", "dev")
	if len(rows) != 3 || rows[1].TableVersion != 3 || rows[1].ManifestPath != lancemanifest.Dir(lancemanifest.Chain{Table: lancemanifest.Dir(a), Branch: "dev"}.Key()).Manifest(lancemanifest.V2, 3) {
		t.Fatalf("dev's rows after repair: %+v", rows)
	}
	if main := svc.Table().VersionRows("ns$a"); len(main) != 2 {
		t.Fatalf("main's rows: %+v", main)
	}
}

// A branch Lance deleted (its files gone, no request) is missing-manifest
// for every version verify finds recorded; --repair forgets the branch,
// its __manifest rows with it, and the branch can be made again.
func TestVerifyRepairForgetsABranchLanceDeleted(t *testing.T) {
	env := nstest.New(t)
	svc := env.Open(t)
	ctx := context.Background()
	dir := table(t, svc, env.Root, "a", 1)
	devDir := filepath.Join(dir, "tree", "dev")
	for v := uint64(1); v <= 2; v++ {
		if _, err := svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"ns", "a"}, Branch: "dev",
			Version: int64(v), ManifestPath: "file://" + stage(t, devDir, v)}); err != nil {
			t.Fatal(err)
		}
		// A reader finishes the commit (its final manifest may still be
		// on its way when CreateTableVersion answers): Lance deletes a
		// branch whose versions are whole.
		ver := int64(v)
		if _, err := svc.Versions().DescribeTableVersion(ctx, api.DescribeTableVersionRequest{ID: api.ID{"ns", "a"}, Branch: "dev", Version: &ver}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(devDir); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(ctx, CatalogOf(svc), false, nil)
	if got := kinds(rep); err != nil || !strings.HasPrefix(got, "missing-manifest@1/false missing-manifest@2/false") {
		t.Fatalf("report: %q (%v)", got, err)
	}
	rep, err = Verify(ctx, CatalogOf(svc), true, nil)
	if got := kinds(rep); err != nil || !strings.HasPrefix(got, "missing-manifest@1/true missing-manifest@2/true") {
		t.Fatalf("repair: %q (%v)", got, err)
	}
	// The forgotten chain's rows go through the commit log: after them,
	// the catalog is clean again.
	if _, err := svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"after"}}); err != nil {
		t.Fatal(err)
	}
	rep, err = Verify(ctx, CatalogOf(svc), false, nil)
	if err != nil || len(rep.Drift) != 0 || len(svc.Table().BranchVersionRows("ns$a", "dev")) != 0 {
		t.Fatalf("after repair: %q (%v), dev's rows %v", kinds(rep), err, svc.Table().BranchVersionRows("ns$a", "dev"))
	}
	if _, err := svc.Versions().CreateTableVersion(ctx, api.CreateTableVersionRequest{ID: api.ID{"ns", "a"}, Branch: "dev",
		Version: 1, ManifestPath: "file://" + stage(t, devDir, 1)}); err != nil {
		t.Fatalf("dev made again: %v", err)
	}
}

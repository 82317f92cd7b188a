package lancemanifest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func readRefs(t testing.TB, file string) *References {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadReferences(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return r
}

// The names below are the files LanceDB wrote next to these manifests
// (interop/lancedb/fixture.mjs; testdata/README.md).
func TestReferencesOfWhatLanceWrote(t *testing.T) {
	const (
		frag0 = "011101110000101000011111f01a554939880cde8fb5ef17c7.lance"
		frag1 = "010011110011001001101110433a6543f8bd22a38a92f6346a.lance"
		del   = "0-2-14168484378706923181.arrow"
		index = "cc5974db-de53-4a3c-9cba-7cd3bd0f801c"
	)
	for _, c := range []struct {
		file      string
		version   uint64
		branch    string
		data      []string
		deletions []string
		indices   []string
		txn       string
		based     bool // every inherited file names base 0, the parent's root
	}{
		{"v1.manifest", 1, "", []string{frag0}, nil, nil, "0-ee453ee0-ffdc-4df2-859b-b5d0b625ce7d.txn", false},
		{"v2.manifest", 2, "", []string{frag0, frag1}, nil, nil, "1-d8a3b3d5-78c8-45c4-a086-39f0dc123e87.txn", false},
		{"v3.manifest", 3, "", []string{frag0, frag1}, []string{del}, nil, "2-42b894e8-50b6-404e-8206-dc04f8ee8613.txn", false},
		{"v4.manifest", 4, "", []string{frag0, frag1}, []string{del}, []string{index}, "3-a4ce732a-835f-4507-adb5-9fa2fc774394.txn", false},
		{"dev-v5.manifest", 5, "dev", []string{frag0, frag1, "11011111000001001100000037d16b4d52bc8035ecc2f6f4ff.lance"}, []string{del}, []string{index}, "4-0a0ecb0f-c2cb-4928-9693-097bcbb5f74e.txn", true},
		{"lance12/clone-dev-v2.manifest", 2, "dev", []string{"100000101000110110000010cfab82462197a8f327e50c6285.lance", "101100010011101000110011da9b6049f8b580b0aa31ac7a1d.lance"}, nil, nil, "2-a63d6bd7-d01e-49c9-8140-5f775c74dc81.txn", true},
		{"lance12/restore-v3.manifest", 3, "", []string{"10010001011001010000101158b8f54a9a9db1aa52cf1a455d.lance"}, nil, nil, "2-c62df044-604e-400a-bffb-09095ad87b22.txn", false},
	} {
		r := readRefs(t, c.file)
		var data, dels, indices []string
		for _, d := range r.DataFiles {
			data = append(data, d.Path)
		}
		for _, d := range r.DeletionFiles {
			dels = append(dels, d.Path)
		}
		for _, ix := range r.Indices {
			indices = append(indices, ix.UUID)
		}
		if r.Version != c.version || r.Branch != c.branch || !slices.Equal(data, c.data) || !slices.Equal(dels, c.deletions) ||
			!slices.Equal(indices, c.indices) || r.TransactionFile != c.txn || r.Timestamp.Year() != 2026 {
			t.Errorf("%s: %+v", c.file, r)
		}
		if !c.based {
			for _, d := range append(r.DataFiles, r.DeletionFiles...) {
				if d.HasBase {
					t.Errorf("%s: %s names base %d", c.file, d.Path, d.BaseID)
				}
			}
			continue
		}
		// A branch names its parent's files through base 0 (written, not
		// left out: the field is optional), its own without a base.
		if len(r.BasePaths) != 1 || r.BasePaths[0].ID != 0 || !r.BasePaths[0].IsDatasetRoot || r.BasePaths[0].Path == "" {
			t.Errorf("%s: base paths %+v", c.file, r.BasePaths)
		}
		for _, d := range append(r.DataFiles, r.DeletionFiles...) {
			if inherited := d.Path != "11011111000001001100000037d16b4d52bc8035ecc2f6f4ff.lance"; d.HasBase != inherited || d.BaseID != 0 {
				t.Errorf("%s: %+v", c.file, d)
			}
		}
		for _, ix := range r.Indices {
			if !ix.HasBase || ix.Name != "id_idx" {
				t.Errorf("%s: index %+v", c.file, ix)
			}
		}
	}
}

// ReadReferences and Read read the same manifest the same way.
func TestReferencesAgreeWithRead(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.manifest")
	more, _ := filepath.Glob("testdata/lance12/*.manifest")
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Read(b)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ReadReferences(b)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		deletions := 0
		for _, fr := range m.Fragments {
			for _, d := range fr.Files {
				paths = append(paths, d.Path)
			}
			if fr.DeletedRows > 0 {
				deletions++
			}
		}
		var got []string
		for _, d := range r.DataFiles {
			got = append(got, d.Path)
		}
		if r.Version != m.Version || !r.Timestamp.Equal(m.Timestamp) || r.Branch != m.Branch || !slices.Equal(got, paths) ||
			len(r.Indices) != m.Indices || len(r.DeletionFiles) != deletions {
			t.Errorf("%s: references %+v, manifest %+v", f, r, m)
		}
	}
}

// A branch's first manifest, as flightns writes it (Cloned), names every
// file of its source through the new base.
func TestReferencesOfAClone(t *testing.T) {
	src, err := os.ReadFile("testdata/v4.manifest")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Cloned(src, Clone{Branch: "dev", RefPath: "file:///root/t", Now: time.Unix(1796000000, 0), Txn: []byte{}, TxnFile: "4-x.txn"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadReferences(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.DataFiles) != 2 || len(r.DeletionFiles) != 1 || len(r.Indices) != 1 || r.TransactionFile != "4-x.txn" || r.Branch != "dev" {
		t.Fatalf("%+v", r)
	}
	for _, d := range append(r.DataFiles, r.DeletionFiles...) {
		if !d.HasBase || d.BaseID != 0 {
			t.Errorf("%+v has no base", d)
		}
	}
	if !r.Indices[0].HasBase || len(r.BasePaths) != 1 || r.BasePaths[0].Path != "file:///root/t" {
		t.Errorf("%+v", r)
	}
}

func TestDeletionFileNames(t *testing.T) {
	for _, c := range []struct {
		typ  uint64
		want string
	}{{0, "3-7-99.arrow"}, {1, "3-7-99.bin"}} {
		if got, err := DeletionFileName(3, 7, 99, c.typ); err != nil || got != c.want {
			t.Errorf("type %d: %q %v", c.typ, got, err)
		}
	}
	if _, err := DeletionFileName(3, 7, 99, 2); !errors.Is(err, ErrNotManifest) {
		t.Errorf("type 2: %v", err)
	}
}

// hostile builds a manifest file of the given message and index section.
func hostile(msg, index []byte) []byte {
	var f [4]byte
	return assemble(index, nil, f, func(indexAt, _ uint64, hasIndex bool) []byte {
		if hasIndex {
			return append(varintField(fManifestIndexSection, indexAt), msg...)
		}
		return msg
	})
}

func fragment(fields ...[]byte) []byte {
	return bytesField(fManifestFragments, slices.Concat(fields...))
}

// What a cleanup must never do is miss a file a manifest names: a
// reference it cannot name is an error, so the caller keeps everything.
func TestReferencesItCannotNameAreErrors(t *testing.T) {
	uuid := bytesField(fIndexUUID, bytesField(fUUIDBytes, []byte("0123456789abcdef")))
	for _, c := range []struct {
		name       string
		msg, index []byte
		want       string
	}{
		{"a deletion file of an unknown type", fragment(bytesField(fFragmentDeletion, varintField(fDeletionFileType, 2))), nil, "deletion file type 2"},
		{"an index with a short UUID", nil, bytesField(fIndexSectionItem, bytesField(fIndexUUID, bytesField(fUUIDBytes, []byte("short")))), "UUID"},
		{"an index without a UUID", nil, bytesField(fIndexSectionItem, bytesField(fIndexName, []byte("i"))), "UUID"},
		{"fragments as a varint", varintField(fManifestFragments, 1), nil, "wire type"},
		{"the index section as bytes", bytesField(fManifestIndexSection, []byte{1}), nil, "wire type"},
		{"a data file as a varint", fragment(varintField(fFragmentFiles, 1)), nil, "wire type"},
		{"an index item as a varint", nil, varintField(fIndexSectionItem, 1), "wire type"},
		{"a base id past 32 bits", fragment(bytesField(fFragmentFiles, varintField(fDataFileBaseID, 1<<33))), nil, "32 bits"},
		{"an index section past the end", varintField(fManifestIndexSection, 1<<20), nil, "outside"},
	} {
		_, err := ReadReferences(hostile(c.msg, c.index))
		if !errors.Is(err, ErrNotManifest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// And a well-formed one reads.
	r, err := ReadReferences(hostile(slices.Concat(varintField(fManifestVersion, 9),
		fragment(varintField(fFragmentID, 4), bytesField(fFragmentFiles, bytesField(fDataFilePath, []byte("a.lance"))),
			bytesField(fFragmentDeletion, slices.Concat(varintField(fDeletionFileType, 1), varintField(fDeletionReadVersion, 8), varintField(fDeletionID, 5))),
			bytesField(fFragmentExternalRowIDs, bytesField(fExternalFilePath, []byte("_rowids/x.bin"))))),
		bytesField(fIndexSectionItem, uuid)))
	if err != nil || r.Version != 9 || r.DataFiles[0].Path != "a.lance" || r.DeletionFiles[0].Path != "4-8-5.bin" ||
		r.Indices[0].UUID != "30313233-3435-3637-3839-616263646566" || !slices.Equal(r.ExternalFiles, []string{"_rowids/x.bin"}) {
		t.Fatalf("%+v %v", r, err)
	}
}

// FuzzReferences: no bytes make the reader panic, and what it reads is
// consistent (every deletion file named as Lance names them, every index
// a printed UUID). Seeds: the manifests LanceDB wrote, and
// testdata/fuzz/FuzzReferences.
func FuzzReferences(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.manifest")
	more, _ := filepath.Glob("testdata/lance12/*.manifest")
	for _, name := range append(files, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ReadReferences(b)
		if err != nil {
			if !errors.Is(err, ErrNotManifest) {
				t.Fatalf("an error without ErrNotManifest: %v", err)
			}
			return
		}
		for _, d := range r.DeletionFiles {
			if !strings.HasSuffix(d.Path, ".arrow") && !strings.HasSuffix(d.Path, ".bin") {
				t.Fatalf("deletion file %q", d.Path)
			}
		}
		for _, ix := range r.Indices {
			if len(ix.UUID) != 36 || strings.Count(ix.UUID, "-") != 4 {
				t.Fatalf("index UUID %q", ix.UUID)
			}
		}
	})
}

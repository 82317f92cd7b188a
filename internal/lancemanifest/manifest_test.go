package lancemanifest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// The test data are manifests LanceDB 0.39 (Lance 12) wrote with
// interop/lancedb/fixture.mjs: v1 three rows of every mapped type, v2 two
// more rows (a second fragment), v3 one row deleted, v4 a scalar index,
// dev-v5 a commit on the branch dev.
func read(t testing.TB, name string) *Manifest {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name + ".manifest")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Read(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

func TestReadsWhatLanceWrote(t *testing.T) {
	for _, c := range []struct {
		name                          string
		version, rows, deleted, bytes uint64
		fragments, indices            int
		branch                        string
	}{
		{"v1", 1, 3, 0, 3100, 1, 0, ""},
		{"v2", 2, 5, 0, 6200, 2, 0, ""},
		{"v3", 3, 4, 1, 6200, 2, 0, ""},
		{"v4", 4, 4, 1, 6200, 2, 1, ""},
		{"dev-v5", 5, 5, 1, 8191, 3, 1, "dev"},
	} {
		m := read(t, c.name)
		if m.Version != c.version || m.Rows() != c.rows || m.DeletedRows() != c.deleted || m.DataBytes() != c.bytes ||
			len(m.Fragments) != c.fragments || m.Indices != c.indices || m.Branch != c.branch {
			t.Errorf("%s: version %d, rows %d, deleted %d, bytes %d, fragments %d, indices %d, branch %q; want %+v",
				c.name, m.Version, m.Rows(), m.DeletedRows(), m.DataBytes(), len(m.Fragments), m.Indices, m.Branch, c)
		}
		if m.Timestamp.Year() != 2026 || m.WriterLibrary != "lance" || m.WriterVersion == "" {
			t.Errorf("%s: written at %v by %q %q", c.name, m.Timestamp, m.WriterLibrary, m.WriterVersion)
		}
		for _, f := range m.Fragments {
			for _, d := range f.Files {
				if !strings.HasSuffix(d.Path, ".lance") || d.Size == 0 {
					t.Errorf("%s: data file %+v", c.name, d)
				}
			}
		}
	}
}

func TestTheSchemaIsLanceNamespacesJSONArrowSchema(t *testing.T) {
	got, err := json.Marshal(read(t, "v1").Schema())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"fields":[` +
		`{"name":"id","nullable":false,"type":{"type":"int64"}},` +
		`{"name":"score","nullable":true,"type":{"type":"float64"}},` +
		`{"name":"name","nullable":true,"type":{"type":"utf8"}},` +
		`{"name":"vec","nullable":true,"type":{"type":"fixed_size_list","fields":[{"name":"item","nullable":true,"type":{"type":"float32"}}],"length":4}},` +
		`{"name":"meta","nullable":true,"type":{"type":"struct","fields":[{"name":"k","nullable":true,"type":{"type":"utf8"}},{"name":"n","nullable":true,"type":{"type":"int32"}}]}},` +
		`{"name":"tags","nullable":true,"type":{"type":"list","fields":[{"name":"item","nullable":true,"type":{"type":"utf8"}}]}},` +
		`{"name":"at","nullable":true,"type":{"type":"timestamp"}},` +
		`{"name":"day","nullable":true,"type":{"type":"date32"}},` +
		`{"name":"ok","nullable":true,"type":{"type":"bool"}}]}`
	if string(got) != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
}

func TestLogicalTypes(t *testing.T) {
	for logical, want := range map[string]string{
		"decimal:128:10:2":          `{"type":"decimal128","length":10002}`,
		"decimal:256:40:0":          `{"type":"decimal256","length":40000}`,
		"time:ms":                   `{"type":"time32"}`,
		"time:ns":                   `{"type":"time64"}`,
		"duration:s":                `{"type":"duration"}`,
		"fixed_size_binary:16":      `{"type":"fixed_size_binary","length":16}`,
		"dict:string:int32:false":   `{"type":"utf8"}`,
		"large_string":              `{"type":"large_utf8"}`,
		"halffloat":                 `{"type":"float16"}`,
		"fixed_size_list:double:3":  `{"type":"fixed_size_list","fields":[{"name":"item","nullable":true,"type":{"type":"float64"}}],"length":3}`,
		"something_lance_adds:next": `{"type":"something_lance_adds:next"}`,
	} {
		b, _ := json.Marshal(jsonType(logical, nil))
		if string(b) != want {
			t.Errorf("%s: %s, want %s", logical, b, want)
		}
	}
}

// Every malformed file is an ErrNotManifest error, never a panic: cut
// anywhere, a footer pointing anywhere, a length running past the end.
func TestMalformedManifestsAreErrors(t *testing.T) {
	b, err := os.ReadFile("testdata/v4.manifest")
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(b) {
		if _, err := Read(b[:n]); !errors.Is(err, ErrNotManifest) {
			t.Fatalf("the first %d bytes: %v", n, err)
		}
	}
	for _, pos := range []uint64{0, uint64(len(b)), uint64(len(b)) - 17, 1 << 62, ^uint64(0)} {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint64(c[len(c)-16:], pos)
		if _, err := Read(c); err == nil && pos != 0 {
			t.Errorf("footer position %d: read", pos)
		}
	}
	c := append([]byte(nil), b...)
	pos := binary.LittleEndian.Uint64(c[len(c)-16:])
	binary.LittleEndian.PutUint32(c[pos:], 1<<31)
	if _, err := Read(c); !errors.Is(err, ErrNotManifest) {
		t.Errorf("a message length past the end: %v", err)
	}
}

// A field tree with cycles and shared ids cannot make the schema grow
// beyond one JSON field per manifest field.
func TestAFieldTreeWithCyclesStaysSmall(t *testing.T) {
	m := &Manifest{Fields: []Field{{ID: 1, ParentID: -1, Name: "root", LogicalType: "struct"}}}
	for range 50 {
		m.Fields = append(m.Fields, Field{ID: 2, ParentID: 1, LogicalType: "struct"}, Field{ID: 1, ParentID: 2, LogicalType: "struct"})
	}
	b, _ := json.Marshal(m.Schema())
	if n := strings.Count(string(b), `"name"`); n > len(m.Fields) {
		t.Fatalf("%d JSON fields from %d manifest fields", n, len(m.Fields))
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"v1", "v2", "v3", "v4", "dev-v5"} {
		b, err := os.ReadFile("testdata/" + name + ".manifest")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Read(b)
		if err != nil {
			if !errors.Is(err, ErrNotManifest) {
				t.Fatalf("an error without ErrNotManifest: %v", err)
			}
			return
		}
		_ = m.Rows() + m.DeletedRows() + m.DataBytes()
		if _, err := json.Marshal(m.Schema()); err != nil {
			t.Fatal(err)
		}
	})
}

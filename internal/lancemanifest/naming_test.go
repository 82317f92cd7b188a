package lancemanifest

import (
	"errors"
	"testing"

	"github.com/flightns/flightns/nserror"
)

func TestManifestNamesFollowLance(t *testing.T) {
	cases := []struct {
		scheme  NamingScheme
		version uint64
		name    string
	}{
		{V2, 0, "18446744073709551615.manifest"},
		{V2, 1, "18446744073709551614.manifest"},
		{V2, 10, "18446744073709551605.manifest"},
		{V2, 18446744073709551615, "00000000000000000000.manifest"},
		{V1, 0, "0.manifest"},
		{V1, 1, "1.manifest"},
		{V1, 42, "42.manifest"},
	}
	for _, c := range cases {
		if got := ManifestName(c.scheme, c.version); got != c.name {
			t.Errorf("ManifestName(%v, %d) = %q, want %q", c.scheme, c.version, got, c.name)
		}
		m, err := ParseManifestName(c.name)
		if err != nil || m.Version != c.version || m.Scheme != c.scheme || m.Staging {
			t.Errorf("ParseManifestName(%q) = %+v, %v", c.name, m, err)
		}
		staged := c.name + "-0f8b8e1e-5d3c-4b4a-9a55-9d8f0c1e2a3b"
		m, err = ParseManifestName(staged)
		if err != nil || m.Version != c.version || m.Scheme != c.scheme || !m.Staging || m.FinalName() != c.name {
			t.Errorf("ParseManifestName(%q) = %+v, %v", staged, m, err)
		}
	}
}

func TestManifestPaths(t *testing.T) {
	final := Dir("ab12cd34_ns$t").Manifest(V2, 3)
	if final != "ab12cd34_ns$t/_versions/18446744073709551612.manifest" {
		t.Fatalf("ManifestPath = %q", final)
	}
	staging := StagingPath(final)
	table, m, err := ParseManifestPath(staging)
	if err != nil || table != "ab12cd34_ns$t" || m.Version != 3 || !m.Staging {
		t.Fatalf("ParseManifestPath(%q) = %q, %+v, %v", staging, table, m, err)
	}
	if table, m, err := ParseManifestPath("a/b/_versions/7.manifest"); err != nil || table != "a/b" || m.Version != 7 || m.Scheme != V1 {
		t.Fatalf("nested table: %q, %+v, %v", table, m, err)
	}
	if m, err := ParseManifestName("d5.manifest"); err != nil || !m.Detached || m.Version != 5 {
		t.Fatalf("detached: %+v, %v", m, err)
	}
}

func TestBadManifestNamesAreInvalidInput(t *testing.T) {
	for _, name := range []string{"", "manifest", "1.manifes", "1.txt", "x.manifest", "1.manifest-", "-1.manifest",
		"99999999999999999999999.manifest", "01.manifest", "1.2.manifest", "1.manifest.bak", ".manifest"} {
		if _, err := ParseManifestName(name); !errors.Is(err, nserror.ErrInvalidInput) {
			t.Errorf("ParseManifestName(%q) = %v, want InvalidInput", name, err)
		}
	}
	for _, p := range []string{"1.manifest", "_versions/1.manifest", "t/versions/1.manifest", "t/_versions/x"} {
		if _, _, err := ParseManifestPath(p); !errors.Is(err, nserror.ErrInvalidInput) {
			t.Errorf("ParseManifestPath(%q) = %v, want InvalidInput", p, err)
		}
	}
}

func FuzzParseManifestName(f *testing.F) {
	for _, s := range []string{"18446744073709551615.manifest", "1.manifest", "1.manifest-abc", "d3.manifest", "x", "01.manifest"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		m, err := ParseManifestName(name)
		if err != nil {
			return
		}
		// Whatever parses must print back to the final name it came from.
		final := name
		if m.Staging {
			final = name[:len(name)-len(m.Suffix)-1]
		}
		if !m.Detached && m.FinalName() != final {
			t.Fatalf("%q parsed as %+v, which prints as %q", name, m, m.FinalName())
		}
	})
}

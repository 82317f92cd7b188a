package commitlog

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// Every kind a Lua script writes as a literal is one of Kinds: Lua cannot
// import Go, so this is what keeps the scripts and the reader from
// drifting apart.
func TestEveryKindTheScriptsWriteIsAKind(t *testing.T) {
	files, err := filepath.Glob("../redisstate/scripts/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d Lua scripts under ../redisstate/scripts: the test looks in the wrong place", len(files))
	}
	lit := regexp.MustCompile(`'` + KindField + `',\s*'([a-z_]+)'`)
	seen := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range lit.FindAllStringSubmatch(string(raw), -1) {
			seen++
			if !slices.Contains(Kinds, m[1]) {
				t.Errorf("%s writes log entries of kind %q, which commitlog does not define", f, m[1])
			}
		}
	}
	if seen < 4 {
		t.Fatalf("found %d literal kinds in the scripts, expected at least 4: the pattern no longer matches how they write entries", seen)
	}
}

func TestRangesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ranges := rapid.SliceOf(rapid.Custom(func(t *rapid.T) Range {
			return Range{Start: rapid.Uint64().Draw(t, "start"), End: rapid.Uint64().Draw(t, "end")}
		})).Draw(t, "ranges")
		back, err := DecodeRanges(EncodeRanges(ranges))
		if err != nil {
			t.Fatal(err)
		}
		if len(ranges) == 0 && len(back) == 0 {
			return
		}
		if !slices.Equal(ranges, back) {
			t.Fatalf("%v came back as %v", ranges, back)
		}
	})
	if got := EncodeRanges([]Range{{1, 5}, {9, 0}}); got != "1:5;9:" {
		t.Fatalf("EncodeRanges = %q, want the wire form 1:5;9:", got)
	}
	for _, bad := range []string{"1", "a:2", "1:b", "1:2;", ";"} {
		if _, err := DecodeRanges(bad); err == nil {
			t.Errorf("DecodeRanges(%q) accepted it", bad)
		}
	}
	if !InRanges(5, []Range{{1, 5}, {5, 0}}) || InRanges(5, []Range{{1, 5}}) || !InRanges(1, []Range{{1, 2}}) {
		t.Fatal("InRanges: start inclusive, end exclusive, 0 = no end")
	}
}

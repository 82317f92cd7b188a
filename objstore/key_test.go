package objstore

import (
	"path/filepath"
	"strings"
	"testing"
)

func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "a/../b", "/abs", "a//b", "t/_versions/1.manifest-x", ".flightns-tmp-1", "a\\b", "\x00", "é/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if ValidateKey(key) != nil {
			return
		}
		// A valid key never leaves the root, and names itself exactly.
		root := "/srv/root"
		joined := filepath.Join(root, key)
		if !strings.HasPrefix(joined, root+"/") || filepath.Clean(joined) != root+"/"+key {
			t.Fatalf("valid key %q resolves to %q", key, joined)
		}
		if ValidatePrefix(key) != nil || ValidatePrefix(key+"/") != nil {
			t.Fatalf("valid key %q is not a valid prefix", key)
		}
	})
}

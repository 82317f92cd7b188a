package objstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// syncCalls is how many times the disk store was asked to fsync.
func syncCalls(s *Store) int {
	s.disk.gs.mu.Lock()
	defer s.disk.gs.mu.Unlock()
	return s.disk.gs.calls
}

// A promotion on file:// skips the fsync of a source that Durable synced,
// and only while the source is still the file Durable saw: appended to or
// replaced since, it is fsynced again. Either way the destination holds
// the source's bytes as they are when promoted.
func TestAPromotionTrustsDurableOnlyForAnUnchangedSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()

	cases := []struct {
		name   string
		change func(t *testing.T, path string)
		want   string
		syncs  int // fsyncs by the promotion: the source's, then the directory's
	}{
		{"unchanged", func(*testing.T, string) {}, "staged", 1},
		{"appended", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("+more"); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}, "staged+more", 2},
		{"replaced", func(t *testing.T, path string) {
			if err := os.WriteFile(path+".new", []byte("other!"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		}, "other!", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, dst := "t/"+c.name+"/_versions/1.manifest-x", "t/"+c.name+"/_versions/1.manifest"
			if err := s.PutWith(ctx, src, []byte("staged"), WriteOptions{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			before := syncCalls(s)
			synced, err := s.Durable(src)
			if err != nil {
				t.Fatal(err)
			}
			if got := syncCalls(s) - before; got != 1 {
				t.Fatalf("Durable asked for %d fsyncs, want 1", got)
			}
			c.change(t, filepath.Join(dir, filepath.FromSlash(src)))
			before = syncCalls(s)
			if _, err := s.PromoteIfAbsent(ctx, src, dst, WriteOptions{Synced: synced}); err != nil {
				t.Fatal(err)
			}
			if got := syncCalls(s) - before; got != c.syncs {
				t.Errorf("the promotion asked for %d fsyncs, want %d", got, c.syncs)
			}
			got, err := s.Get(ctx, dst)
			if err != nil || string(got) != c.want {
				t.Fatalf("promoted %q (%v), want %q", got, err, c.want)
			}
		})
	}

	// Without Durable's answer, or with a failed one, the source is fsynced.
	// Durable refuses what is not an object of the root, before any fsync.
	before := syncCalls(s)
	for _, key := range []string{"t/missing/_versions/1.manifest-x", "t/unchanged", "../escape", "/etc/passwd", "t/../../x"} {
		if _, err := s.Durable(key); err == nil {
			t.Errorf("Durable(%q) succeeded", key)
		}
	}
	if got := syncCalls(s) - before; got != 0 {
		t.Errorf("Durable of non-objects asked for %d fsyncs, want 0", got)
	}
	if err := s.PutWith(ctx, "t/plain/_versions/1.manifest-x", []byte("staged"), WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	before = syncCalls(s)
	if _, err := s.PromoteIfAbsent(ctx, "t/plain/_versions/1.manifest-x", "t/plain/_versions/1.manifest", WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := syncCalls(s) - before; got != 2 {
		t.Errorf("a promotion without Durable asked for %d fsyncs, want 2", got)
	}
}

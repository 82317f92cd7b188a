package objstore_test

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// A full disk (ENOSPC) is ServiceUnavailable — nothing was written, retry
// later — not Internal; reads and deletes still work.
func TestDiskFullIsServiceUnavailable(t *testing.T) {
	ctx := context.Background()
	full := false
	s, err := objstore.OpenWith(ctx, "file://"+t.TempDir(), objstore.Options{Faults: objstore.DiskFull(func() bool { return full })})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.Put(ctx, "a/x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	full = true
	for name, err := range map[string]error{
		"put":            s.Put(ctx, "a/y", []byte("y")),
		"put-if-absent":  s.PutIfAbsent(ctx, "a/z", []byte("z")),
		"copy-if-absent": func() error { _, err := s.CopyIfAbsent(ctx, "a/x", "a/w"); return err }(),
	} {
		if nserror.CodeOf(err) != nserror.ServiceUnavailable || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("%s on a full disk: %v (code %v), want ServiceUnavailable wrapping ENOSPC", name, err, nserror.CodeOf(err))
		}
	}
	if b, err := s.Get(ctx, "a/x"); err != nil || string(b) != "x" {
		t.Fatalf("get on a full disk: %q %v", b, err)
	}
	if err := s.Delete(ctx, "a/x"); err != nil {
		t.Fatalf("delete on a full disk: %v", err)
	}
}

package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// backends opens one store of each kind, each empty.
func backends(t *testing.T) map[string]*objstore.Store {
	t.Helper()
	ctx := context.Background()
	s3 := s3test.Start(t, "bkt")
	uris := map[string]string{
		"file":        "file://" + t.TempDir(),
		"file-osroot": "file://" + t.TempDir(),
		"mem":         "mem://",
		"s3":          s3.URI("bkt", "root/dir"),
	}
	out := map[string]*objstore.Store{}
	for name, uri := range uris {
		open := objstore.Open
		if name == "file-osroot" {
			open = objstore.OpenThroughOSRoot
		}
		s, err := open(ctx, uri)
		if err != nil {
			t.Fatalf("open %s: %v", uri, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		out[name] = s
	}
	return out
}

func TestBasicOperationsOnEveryBackend(t *testing.T) {
	ctx := context.Background()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Get(ctx, "t/x"); !errors.Is(err, objstore.ErrNotFound) {
				t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
			}
			if err := s.Put(ctx, "t/x", []byte("one")); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, "t/x", []byte("two!")); err != nil {
				t.Fatalf("Put over an existing object: %v", err)
			}
			got, err := s.Get(ctx, "t/x")
			if err != nil || string(got) != "two!" {
				t.Fatalf("Get = %q, %v", got, err)
			}
			a, err := s.Head(ctx, "t/x")
			if err != nil {
				t.Fatal(err)
			}
			if a.Size != 4 || a.ETag == "" || a.Key != "t/x" {
				t.Fatalf("Head = %+v, want size 4 and an ETag", a)
			}
			if _, err := s.Head(ctx, "t"); !errors.Is(err, objstore.ErrNotFound) {
				t.Fatalf("Head of a directory-like prefix: %v, want ErrNotFound", err)
			}
			if err := s.PutWith(ctx, "t/nosync", []byte("staged"), objstore.WriteOptions{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, "t/nosync"); err != nil || string(got) != "staged" {
				t.Fatalf("Get after a NoSync Put = %q, %v", got, err)
			}
			if err := s.Delete(ctx, "t/x"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "t/x"); err != nil {
				t.Fatalf("second Delete: %v, want success (a delete of nothing is done)", err)
			}
			if _, err := s.Head(ctx, "t/x"); !errors.Is(err, objstore.ErrNotFound) {
				t.Fatalf("Head after Delete: %v, want ErrNotFound", err)
			}
			// DeleteMany: one request per thousand keys on S3; missing
			// keys are no error; keys outside the store are refused.
			var many []string
			for i := range 1005 {
				k := fmt.Sprintf("many/%04d", i)
				if i%2 == 0 {
					if err := s.PutWith(ctx, k, []byte("x"), objstore.WriteOptions{NoSync: true}); err != nil {
						t.Fatal(err)
					}
				}
				many = append(many, k)
			}
			if err := s.DeleteMany(ctx, many); err != nil {
				t.Fatalf("DeleteMany: %v", err)
			}
			if left, err := s.ListAll(ctx, "many/"); err != nil || len(left) != 0 {
				t.Fatalf("after DeleteMany: %d objects left, %v", len(left), err)
			}
			if err := s.DeleteMany(ctx, []string{"ok", "../escape"}); !errors.Is(err, nserror.ErrInvalidInput) {
				t.Fatalf("DeleteMany of a bad key: %v, want InvalidInput", err)
			}
			// DeletePrefix: everything under the prefix, past a batch's
			// thousand keys, nothing beside it.
			for i := range 1003 {
				if err := s.PutWith(ctx, fmt.Sprintf("tbl/d%d/%04d", i%3, i), []byte("x"), objstore.WriteOptions{NoSync: true}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.PutWith(ctx, "tblx/keep", []byte("x"), objstore.WriteOptions{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			if n, err := s.DeletePrefix(ctx, "tbl/"); err != nil || n != 1003 {
				t.Fatalf("DeletePrefix: %d deleted, %v; want 1003", n, err)
			}
			if left, err := s.ListAll(ctx, "tbl"); err != nil || len(left) != 1 || left[0].Key != "tblx/keep" {
				t.Fatalf("after DeletePrefix: %v, %v", left, err)
			}
			if _, err := s.DeletePrefix(ctx, "tbl"); !errors.Is(err, nserror.ErrInvalidInput) {
				t.Fatalf("DeletePrefix of a prefix that is not a directory: %v", err)
			}
		})
	}
}

func TestPutIfAbsentKeepsTheFirstWritersBytes(t *testing.T) {
	ctx := context.Background()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			if err := s.PutIfAbsent(ctx, "v/1.manifest", []byte("first")); err != nil {
				t.Fatal(err)
			}
			err := s.PutIfAbsent(ctx, "v/1.manifest", []byte("second"))
			if !errors.Is(err, objstore.ErrAlreadyExists) {
				t.Fatalf("second PutIfAbsent: %v, want ErrAlreadyExists", err)
			}
			if got, _ := s.Get(ctx, "v/1.manifest"); string(got) != "first" {
				t.Fatalf("content = %q, want the first writer's", got)
			}
		})
	}
}

func TestListIsSortedByKeyAcrossDirectoriesAndPages(t *testing.T) {
	ctx := context.Background()
	// "a.b" < "a/x" < "a0" as strings, though a directory walk in name order
	// visits "a" before "a.b".
	keys := []string{"a.b", "a/x", "a/y/z", "a0", "b/c", "ab"}
	for i := range 2100 {
		keys = append(keys, fmt.Sprintf("many/%05d", i))
	}
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			for _, k := range keys {
				if err := s.Put(ctx, k, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			want := append([]string(nil), keys...)
			sort.Strings(want)
			got := keysOf(t, s, "")
			if !equal(got, want) {
				t.Fatalf("List(\"\") gave %d keys, first %v; want %d sorted", len(got), head(got), len(want))
			}
			if got := keysOf(t, s, "a"); !equal(got, []string{"a.b", "a/x", "a/y/z", "a0", "ab"}) {
				t.Fatalf("List(\"a\") = %v", got)
			}
			if got := keysOf(t, s, "a/"); !equal(got, []string{"a/x", "a/y/z"}) {
				t.Fatalf("List(\"a/\") = %v", got)
			}
			if got := keysOf(t, s, "many/0209"); len(got) != 10 || got[0] != "many/02090" {
				t.Fatalf("List(\"many/0209\") = %v", got)
			}
			if got := keysOf(t, s, "nothing/"); len(got) != 0 {
				t.Fatalf("List of an absent prefix = %v", got)
			}
		})
	}
}

func keysOf(t *testing.T, s *objstore.Store, prefix string) []string {
	t.Helper()
	all, err := s.ListAll(context.Background(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	out := make([]string, len(all))
	for i, a := range all {
		out[i] = a.Key
		if a.Size != int64(len(a.Key)) {
			t.Fatalf("List(%q): %s has size %d, want %d", prefix, a.Key, a.Size, len(a.Key))
		}
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}

func TestCopyAndPromoteIfAbsentOnEveryBackend(t *testing.T) {
	ctx := context.Background()
	type materializer func(s *objstore.Store, ctx context.Context, src, dst string) (objstore.CopyResult, error)
	promote := func(s *objstore.Store, ctx context.Context, src, dst string) (objstore.CopyResult, error) {
		return s.PromoteIfAbsent(ctx, src, dst, objstore.WriteOptions{})
	}
	ops := map[string]materializer{"copy": (*objstore.Store).CopyIfAbsent, "promote": promote}
	for opName, op := range ops {
		for name, s := range backends(t) {
			t.Run(opName+"/"+name, func(t *testing.T) {
				staged := "tbl/_versions/1.manifest-aaaa"
				final := "tbl/_versions/1.manifest"
				if err := s.Put(ctx, staged, []byte("winner")); err != nil {
					t.Fatal(err)
				}
				// Fresh: the final object appears with the staged bytes.
				res, err := op(s, ctx, staged, final)
				if err != nil || res != objstore.Copied {
					t.Fatalf("fresh copy = %v, %v; want Copied", res, err)
				}
				if got, _ := s.Get(ctx, final); string(got) != "winner" {
					t.Fatalf("final = %q", got)
				}
				// Repeated (a retry, or a reader helping): idempotent. A promoted
				// source may be gone; then the source is missing, not different.
				if res, err := op(s, ctx, staged, final); err == nil && res != objstore.AlreadyIdentical ||
					err != nil && (opName != "promote" || !errors.Is(err, objstore.ErrNotFound)) {
					t.Fatalf("repeated %s = %v, %v", opName, res, err)
				}
				// Already there with the same bytes from another object.
				twin := "tbl/_versions/1.manifest-bbbb"
				if err := s.Put(ctx, twin, []byte("winner")); err != nil {
					t.Fatal(err)
				}
				if res, err := op(s, ctx, twin, final); err != nil || res != objstore.AlreadyIdentical {
					t.Fatalf("copy of identical bytes = %v, %v; want AlreadyIdentical", res, err)
				}
				// Already there with different bytes: refused, final untouched.
				loser := "tbl/_versions/1.manifest-cccc"
				if err := s.Put(ctx, loser, []byte("loser!")); err != nil {
					t.Fatal(err)
				}
				if _, err := op(s, ctx, loser, final); !errors.Is(err, objstore.ErrAlreadyExists) {
					t.Fatalf("copy over different bytes: %v, want ErrAlreadyExists", err)
				}
				if got, _ := s.Get(ctx, final); string(got) != "winner" {
					t.Fatalf("final after a refused copy = %q, want winner", got)
				}
				// Deleting the staging object leaves the final one.
				if err := s.Delete(ctx, staged); err != nil && !errors.Is(err, objstore.ErrNotFound) {
					t.Fatal(err)
				}
				if got, err := s.Get(ctx, final); err != nil || string(got) != "winner" {
					t.Fatalf("final after deleting staging = %q, %v", got, err)
				}
				// A missing source is NotFound and writes nothing.
				if _, err := op(s, ctx, "tbl/_versions/2.manifest-x", "tbl/_versions/2.manifest"); !errors.Is(err, objstore.ErrNotFound) {
					t.Fatalf("copy of a missing source: %v, want ErrNotFound", err)
				}
				if _, err := s.Head(ctx, "tbl/_versions/2.manifest"); !errors.Is(err, objstore.ErrNotFound) {
					t.Fatalf("a failed copy left an object: %v", err)
				}
			})
		}
	}
}

func TestCreateOnlyRaceAmongGoroutines(t *testing.T) {
	ctx := context.Background()
	for name, s := range backends(t) {
		if name == "mem" {
			continue // process-local by nature; covered by the others' logic
		}
		t.Run(name, func(t *testing.T) {
			const writers, rounds = 32, 20
			for round := range rounds {
				key := fmt.Sprintf("race/%03d.manifest", round)
				var wg sync.WaitGroup
				start := make(chan struct{})
				errs := make([]error, writers)
				for w := range writers {
					wg.Go(func() {
						<-start
						errs[w] = s.PutIfAbsent(ctx, key, []byte(fmt.Sprintf("writer-%02d", w)))
					})
				}
				close(start)
				wg.Wait()
				winner := -1
				for w, err := range errs {
					switch {
					case err == nil && winner >= 0:
						t.Fatalf("round %d: writers %d and %d both won", round, winner, w)
					case err == nil:
						winner = w
					case !errors.Is(err, objstore.ErrAlreadyExists):
						t.Fatalf("round %d: writer %d: %v, want ErrAlreadyExists", round, w, err)
					}
				}
				if winner < 0 {
					t.Fatalf("round %d: nobody won", round)
				}
				got, err := s.Get(ctx, key)
				if err != nil || string(got) != fmt.Sprintf("writer-%02d", winner) {
					t.Fatalf("round %d: content %q, %v; want the winner's (%d)", round, got, err, winner)
				}
			}
		})
	}
}

func TestBadKeysAreInvalidInputBeforeAnyIO(t *testing.T) {
	ctx := context.Background()
	bad := []string{"", "/abs", "a//b", "a/./b", "../x", "a/../../x", "a/", "tab\there", "back\\slash",
		"a/.flightns-tmp-1", strings.Repeat("k", objstore.MaxKeyLen+1), "bad\xffutf8"}
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			for _, k := range bad {
				for op, err := range map[string]error{
					"put":    s.Put(ctx, k, []byte("x")),
					"putia":  s.PutIfAbsent(ctx, k, []byte("x")),
					"delete": s.Delete(ctx, k),
				} {
					if !errors.Is(err, nserror.ErrInvalidInput) {
						t.Errorf("%s(%q) = %v, want InvalidInput", op, k, err)
					}
				}
				if _, err := s.Get(ctx, k); !errors.Is(err, nserror.ErrInvalidInput) {
					t.Errorf("get(%q) = %v, want InvalidInput", k, err)
				}
				if _, err := s.CopyIfAbsent(ctx, "ok", k); !errors.Is(err, nserror.ErrInvalidInput) {
					t.Errorf("copy(ok, %q) = %v, want InvalidInput", k, err)
				}
			}
			if _, err := s.ListAll(ctx, "../"); !errors.Is(err, nserror.ErrInvalidInput) {
				t.Errorf("List(../) = %v, want InvalidInput", err)
			}
			if all, _ := s.ListAll(ctx, ""); len(all) != 0 {
				t.Errorf("bad keys wrote %d objects", len(all))
			}
		})
	}
}

func TestOpenRejectsBadURIs(t *testing.T) {
	ctx := context.Background()
	s3 := s3test.Start(t, "exists")
	cases := []struct{ uri, want string }{
		{"", "no scheme"},
		{"relative/dir", "no scheme"},
		{"gs://bucket", "unsupported scheme \"gs\""},
		{"file://host/dir", "names host"},
		{"file://relative", "names host"},
		{"file:///a/../b", "not clean"},
		{"file:///tmp/x?y=1", "takes no parameters"},
		{"mem://name", "mem:// takes no name"},
		{"s3:///prefix", "names no bucket"},
		{"s3://exists/a/../b?endpoint=" + s3.URL, "bad prefix"},
		{"s3://missing?endpoint=" + s3.URL + "&region=us-east-1&use_path_style=true&disable_https=true", "s3 bucket \"missing\""},
		{"s3://exists?bogus=1", "bogus"},
		{"s3://exists?endpoint=" + s3.URL + "&client_endpoint=minio:9000", "client_endpoint"},
		{"s3://exists?endpoint=" + s3.URL + "&client_endpoint=", "client_endpoint"},
		{"s3://exists?endpoint=" + s3.URL + "&client_endpoint=http://127.0.0.1:9000/?x=1", "client_endpoint"},
		{"::", "missing protocol scheme"},
	}
	for _, c := range cases {
		s, err := objstore.Open(ctx, c.uri)
		if err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded", c.uri)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v; want it to say %q", c.uri, err, c.want)
		}
	}
}

func TestFaultHooksCutBeforeAndAfter(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("injected")
	var phase objstore.Phase
	var armed bool
	s, err := objstore.OpenWith(ctx, "file://"+t.TempDir(), objstore.Options{Faults: func(_ context.Context, op objstore.Op, key string, p objstore.Phase) error {
		if armed && op == objstore.OpPutIfAbsent && p == phase {
			return boom
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	armed, phase = true, objstore.Before
	if err := s.PutIfAbsent(ctx, "k", []byte("x")); !errors.Is(err, boom) {
		t.Fatalf("before-fault: %v", err)
	}
	if _, err := s.Head(ctx, "k"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("a write failed before it ran left an object: %v", err)
	}
	phase = objstore.After
	if err := s.PutIfAbsent(ctx, "k", []byte("x")); !errors.Is(err, boom) {
		t.Fatalf("after-fault: %v", err)
	}
	if got, err := s.Get(ctx, "k"); err != nil || string(got) != "x" {
		t.Fatalf("a write whose reply was lost is not there: %q, %v", got, err)
	}
}

// On both ways of resolving keys (openat2 beneath the root where the
// kernel has it, os.Root elsewhere): a crashed writer's temp file is never
// seen, and no symbolic link leads out of the root, whether absolute,
// relative through "..", in the middle of a key or at its end; a link that
// stays inside is followed, as os.Root follows it.
func TestFileStoreNeverShowsPartialWritesOrEscapes(t *testing.T) {
	onEachResolution(t, checkNoPartialWritesOrEscapes)
}

// onEachResolution runs check on an empty file:// store in a directory of
// its own, once resolving keys with openat2 (which this kernel must
// have) and once through os.Root.
func onEachResolution(t *testing.T, check func(t *testing.T, s *objstore.Store, dir string)) {
	for name, open := range map[string]func(context.Context, string) (*objstore.Store, error){"openat2": objstore.Open, "os.Root": objstore.OpenThroughOSRoot} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := open(context.Background(), "file://"+dir)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			if got, want := objstore.ResolvesBeneath(s), name == "openat2"; got != want {
				t.Fatalf("resolves with openat2: %v, want %v (a kernel before 5.6, or a seccomp profile refusing openat2?)", got, want)
			}
			check(t, s, dir)
		})
	}
}

// A FIFO that someone with access to the directory put at a key's path,
// or where a key's directory belongs, is not an object: reading it returns
// at once (an open for reading would otherwise wait for a writer forever),
// nothing is written below it, and listings leave it out, on both ways of
// resolving.
func TestAFIFOAtAKeyIsNotAnObjectAndBlocksNothing(t *testing.T) {
	onEachResolution(t, func(t *testing.T, s *objstore.Store, dir string) {
		ctx := context.Background()
		if err := os.MkdirAll(filepath.Join(dir, "t", "_versions"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, "t", "_versions", "1.manifest"), 0o644); err != nil {
			t.Fatal(err)
		}
		// And one where a directory belongs.
		if err := syscall.Mkfifo(filepath.Join(dir, "t", "_deletions"), 0o644); err != nil {
			t.Fatal(err)
		}
		const fifo, under = "t/_versions/1.manifest", "t/_deletions/1.arrow"
		if err := s.Put(ctx, "t/data.lance", []byte("d")); err != nil {
			t.Fatal(err)
		}
		notFound := func(err error) bool { return errors.Is(err, objstore.ErrNotFound) }
		refused := func(err error) bool { return err != nil }
		ops := []struct {
			name string
			want func(error) bool
			run  func() error
		}{
			{"Get", notFound, func() error { _, err := s.Get(ctx, fifo); return err }},
			{"Head", notFound, func() error { _, err := s.Head(ctx, fifo); return err }},
			{"GetWithAttrs", notFound, func() error { _, _, err := s.GetWithAttrs(ctx, fifo); return err }},
			{"CopyIfAbsent", refused, func() error { _, err := s.CopyIfAbsent(ctx, fifo, "t/_versions/2.manifest"); return err }},
			{"PromoteIfAbsent", refused, func() error {
				_, err := s.PromoteIfAbsent(ctx, fifo, "t/_versions/3.manifest", objstore.WriteOptions{})
				return err
			}},
			{"ListAll below it", func(err error) bool { return err == nil }, func() error {
				if all, err := s.ListAll(ctx, fifo+"/"); err != nil || len(all) != 0 {
					return fmt.Errorf("listed %v: %w", all, err)
				}
				return nil
			}},
			{"Get below one", notFound, func() error { _, err := s.Get(ctx, under); return err }},
			{"Put below one", refused, func() error { return s.Put(ctx, under, []byte("x")) }},
			{"PutIfAbsent below one", refused, func() error { return s.PutIfAbsent(ctx, under, []byte("x")) }},
			{"CopyIfAbsent below one", refused, func() error { _, err := s.CopyIfAbsent(ctx, "t/data.lance", under); return err }},
			{"PromoteIfAbsent below one", refused, func() error {
				_, err := s.PromoteIfAbsent(ctx, "t/data.lance", under, objstore.WriteOptions{})
				return err
			}},
			{"ListAll of the table", func(err error) bool { return err == nil }, func() error {
				all, err := s.ListAll(ctx, "t/")
				if err != nil || len(all) != 1 || all[0].Key != "t/data.lance" {
					return fmt.Errorf("listed %v: %w", all, err)
				}
				return nil
			}},
		}
		for _, op := range ops {
			done := make(chan error, 1)
			go func() { done <- op.run() }()
			select {
			case err := <-done:
				if !op.want(err) {
					t.Fatalf("%s of a FIFO: %v", op.name, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s of a FIFO has not returned after 20 s: an open waits for a writer", op.name)
			}
		}
	})
}

func checkNoPartialWritesOrEscapes(t *testing.T, s *objstore.Store, dir string) {
	ctx := context.Background()
	// A writer that crashed mid-write leaves only a temp file: invisible.
	if err := os.MkdirAll(filepath.Join(dir, "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t", ".flightns-tmp-deadbeef"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.ListAll(ctx, ""); len(all) != 0 {
		t.Fatalf("a temp file is listed: %v", all)
	}
	// Symbolic links out of the root cannot be read, written or listed.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, outside)
	if err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"escape": outside, "t/up": filepath.Join("..", rel), "leak": filepath.Join(outside, "secret")} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"escape/secret", "t/up/secret", "leak"} {
		if got, err := s.Get(ctx, key); nserror.CodeOf(err) != nserror.PermissionDenied {
			t.Fatalf("read %q through a symlink out of the root: %q, %v; want PermissionDenied", key, got, err)
		}
		if _, err := s.Head(ctx, key); nserror.CodeOf(err) != nserror.PermissionDenied {
			t.Fatalf("stat %q through a symlink out of the root: %v; want PermissionDenied", key, err)
		}
	}
	for _, key := range []string{"escape/new", "t/up/new"} {
		if err := s.Put(ctx, key, []byte("x")); nserror.CodeOf(err) != nserror.PermissionDenied {
			t.Fatalf("wrote %q through a symlink out of the root: %v; want PermissionDenied", key, err)
		}
		if err := s.PutIfAbsent(ctx, key, []byte("x")); nserror.CodeOf(err) != nserror.PermissionDenied {
			t.Fatalf("created %q through a symlink out of the root: %v; want PermissionDenied", key, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("a file appeared outside the root")
	}
	if all, _ := s.ListAll(ctx, ""); len(all) != 0 {
		t.Fatalf("listing followed a symlink out of the root: %v", all)
	}
	// The written bytes are on disk under their key, no sidecar files.
	if err := s.Put(ctx, "t/v/1.manifest", []byte("m")); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "t", "v"))
	if len(ents) != 1 || ents[0].Name() != "1.manifest" {
		t.Fatalf("directory holds %v, want just 1.manifest", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "t", "v", "1.manifest")); !bytes.Equal(b, []byte("m")) {
		t.Fatalf("file holds %q", b)
	}
	// A link that stays inside the root is followed.
	if err := os.Symlink("t", filepath.Join(dir, "in")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "in/v/1.manifest"); err != nil || string(got) != "m" {
		t.Fatalf("read through a symlink inside the root: %q, %v", got, err)
	}
}

func TestPromoteRaceHasOneWinnerAndRenamesOnFile(t *testing.T) {
	ctx := context.Background()
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			const writers = 16
			srcs := make([]string, writers)
			for w := range writers {
				srcs[w] = fmt.Sprintf("p/_versions/1.manifest-%02d", w)
				if err := s.Put(ctx, srcs[w], []byte(fmt.Sprintf("w%02d", w))); err != nil {
					t.Fatal(err)
				}
			}
			results := make([]objstore.CopyResult, writers)
			errs := make([]error, writers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := range writers {
				wg.Go(func() {
					<-start
					results[w], errs[w] = s.PromoteIfAbsent(ctx, srcs[w], "p/_versions/1.manifest", objstore.WriteOptions{})
				})
			}
			close(start)
			wg.Wait()
			winner := -1
			for w := range writers {
				switch {
				case errs[w] == nil && results[w] == objstore.Copied:
					if winner >= 0 {
						t.Fatalf("writers %d and %d both promoted", winner, w)
					}
					winner = w
				case !errors.Is(errs[w], objstore.ErrAlreadyExists):
					t.Fatalf("writer %d: %v, %v", w, results[w], errs[w])
				}
			}
			if winner < 0 {
				t.Fatal("nobody promoted")
			}
			if got, _ := s.Get(ctx, "p/_versions/1.manifest"); string(got) != fmt.Sprintf("w%02d", winner) {
				t.Fatalf("final = %q, want the winner's", got)
			}
			_, err := s.Head(ctx, srcs[winner])
			if strings.HasPrefix(name, "file") && !errors.Is(err, objstore.ErrNotFound) {
				t.Fatalf("on file:// the promoted source should be renamed away: %v", err)
			}
		})
	}
}

// GetWithAttrs answers what Get and Head answer, on every backend (on S3
// from the GET alone), and a missing object is ErrNotFound.
func TestGetWithAttrsIsGetAndHead(t *testing.T) {
	ctx := context.Background()
	for name, s := range backends(t) {
		if err := s.Put(ctx, "a/obj", []byte("some bytes")); err != nil {
			t.Fatal(err)
		}
		data, a, err := s.GetWithAttrs(ctx, "a/obj")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		h, err := s.Head(ctx, "a/obj")
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != "some bytes" || a.Size != 10 || a.ETag != h.ETag || a.Key != "a/obj" {
			t.Errorf("%s: GetWithAttrs = %q %+v; Head = %+v", name, data, a, h)
		}
		if name == "s3" && a.ETag == "" {
			t.Errorf("s3: no ETag from the GET")
		}
		if _, _, err := s.GetWithAttrs(ctx, "a/missing"); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("%s: a missing object: %v", name, err)
		}
	}
}

// The AWS SDK says nothing per request: its lines go to the store's
// logger (debug, unless a warning), never straight to stderr, where
// they printed "Response has no supported checksum" once per GET.
func TestTheS3ClientLogsNothingPerRequestOnStderr(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, "quiet")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w // the SDK's default logger writes to the stderr of its opening
	var logged bytes.Buffer
	s, err := objstore.OpenWith(ctx, srv.URI("quiet", ""), objstore.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err == nil {
		for i := range 20 {
			// Written as Lance writes its manifests: without a checksum,
			// so the store has none to send back.
			k := fmt.Sprintf("k%d", i)
			if _, err = srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("quiet"), Key: aws.String(k), Body: strings.NewReader("x")},
				func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }); err != nil {
				break
			}
			if _, err = s.Get(ctx, k); err != nil {
				break
			}
		}
		_ = s.Close()
	}
	os.Stderr = stderr
	_ = w.Close()
	printed, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(printed) > 0 || logged.Len() > 0 {
		t.Fatalf("20 PUTs and GETs printed %q on stderr and logged %q at info level", printed, logged.String())
	}
}

// Every parameter gocloud.dev reads in an s3:// URI is read (here the
// legacy path-style spelling and accelerate), a bad value or an unknown
// parameter is InvalidInput, and the store then works as any other.
func TestS3URIParametersAreGoclouds(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, "params")
	base := strings.Replace(srv.URI("params", "p"), "use_path_style=true", "s3ForcePathStyle=true", 1)
	s, err := objstore.Open(ctx, base+"&accelerate=false")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.PutWith(ctx, "k", []byte("v"), objstore.WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get(ctx, "k"); err != nil || string(b) != "v" {
		t.Fatalf("Get: %q %v", b, err)
	}
	for _, bad := range []string{base + "&use_path_style=maybe", base + "&accelerate=sometimes", base + "&nonsense=1"} {
		if _, err := objstore.Open(ctx, bad); !errors.Is(err, nserror.ErrInvalidInput) {
			t.Errorf("Open(%s): %v, want InvalidInput", bad, err)
		}
	}
}

// client_endpoint is the engines' endpoint alone: gocloud, which refuses
// parameters it does not know, never sees it, and the store works at
// endpoint while it names a host that does not resolve.
func TestTheClientEndpointIsNotTheStores(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, "engines")
	uri := srv.URI("engines", "p") + "&" + objstore.ParamClientEndpoint + "=" + url.QueryEscape("http://engines.invalid:9000")
	s, err := objstore.Open(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if s.URI() != uri {
		t.Errorf("URI() = %s, want %s", s.URI(), uri)
	}
	if err := s.PutWith(ctx, "k", []byte("v"), objstore.WriteOptions{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get(ctx, "k"); err != nil || string(b) != "v" {
		t.Fatalf("Get: %q %v", b, err)
	}
}

// A write's Gate runs right before its destination can become visible:
// when it fails, the write gives up with its error and the destination
// stays absent (a claim that no longer stands writes nothing).
func TestAFailingGateWritesNothing(t *testing.T) {
	ctx := context.Background()
	refused := errors.New("the claim no longer stands")
	for name, s := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ran := 0
			gate := objstore.WriteOptions{Gate: func() error { ran++; return refused }}
			if err := s.PutIfAbsentWith(ctx, "g/_txn/1.json", []byte("x"), gate); !errors.Is(err, refused) {
				t.Fatalf("PutIfAbsentWith under a failing gate: %v", err)
			}
			if err := s.Put(ctx, "g/_versions/1.manifest-s", []byte("staged")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.PromoteIfAbsent(ctx, "g/_versions/1.manifest-s", "g/_versions/1.manifest", gate); !errors.Is(err, refused) {
				t.Fatalf("PromoteIfAbsent under a failing gate: %v", err)
			}
			for _, k := range []string{"g/_txn/1.json", "g/_versions/1.manifest"} {
				if _, err := s.Get(ctx, k); !errors.Is(err, objstore.ErrNotFound) {
					t.Errorf("%s after a refused write: %v", k, err)
				}
			}
			if ran != 2 {
				t.Errorf("the gate ran %d times, want once per write", ran)
			}
			// A gate that passes lets the promotion through.
			if _, err := s.PromoteIfAbsent(ctx, "g/_versions/1.manifest-s", "g/_versions/1.manifest",
				objstore.WriteOptions{Gate: func() error { return nil }}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

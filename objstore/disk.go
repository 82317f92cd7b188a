package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// diskBucket is a gocloud.dev/blob driver for a local directory whose
// create-only writes are safe across processes.
//
// A write goes to a hidden temp file beside its target (tempPrefix), which is
// fsynced and then either link(2)ed to the target (create-only: the kernel
// refuses with EEXIST when the name is taken, whichever process holds it) or
// renamed over it (plain Put). The directory is fsynced before Close
// returns, so a reported write survives a crash, and a reader only ever sees
// a complete file. Every path is resolved beneath the root directory, by
// openat2(2) where the kernel has it and by os.Root elsewhere
// (disk_beneath.go): no "..", absolute path or symbolic link can leave it.
type diskBucket struct {
	root *os.Root
	dir  string
	gs   *groupSync
	// rootDir is the root directory, open for openat2 and syncfs.
	rootDir *os.File
	// beneath: keys are resolved by openat2 (RESOLVE_BENEATH), not os.Root.
	beneath bool
}

var errDiskExists = errors.New("object already exists")

func openDisk(dir string) (*blob.Bucket, *diskBucket, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating root directory %s: %w", dir, err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("opening root directory %s: %w", dir, err)
	}
	rd, err := r.Open(".")
	if err != nil {
		_ = r.Close()
		return nil, nil, fmt.Errorf("opening root directory %s: %w", dir, err)
	}
	d := &diskBucket{root: r, dir: dir, rootDir: rd, beneath: openat2Works(rd)}
	d.gs = &groupSync{fsync: d.fsync, dir: rd}
	return blob.NewBucket(d), d, nil
}

func (b *diskBucket) ErrorCode(err error) gcerrors.ErrorCode {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return gcerrors.NotFound
	case errors.Is(err, errDiskExists), errors.Is(err, fs.ErrExist):
		return gcerrors.FailedPrecondition
	case errors.Is(err, errBadDiskKey):
		return gcerrors.InvalidArgument
	case escapes(err):
		return gcerrors.PermissionDenied
	}
	return gcerrors.Unknown
}

// escapes reports whether err is a path refused for leaving the root
// (through a symbolic link): openat2's EXDEV, or os.Root's refusal, which
// has no exported error of its own.
func escapes(err error) bool {
	var pe *fs.PathError
	return errors.Is(err, errPathEscapes) || errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes")
}

var errBadDiskKey = errors.New("invalid key")

// checkKey guards the driver against keys that did not come through the
// Store's validation (the blob API is public).
func checkKey(key string) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("%w: %w", errBadDiskKey, err)
	}
	return nil
}

func (b *diskBucket) As(any) bool             { return false }
func (b *diskBucket) ErrorAs(error, any) bool { return false }
func (b *diskBucket) Close() error {
	_ = b.rootDir.Close()
	return b.root.Close()
}
func (b *diskBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("signed URLs are not supported on file://")
}

// etagOf spells an ETag the way Rust's object_store (and so Lance) does for
// local files: inode, modification time in microseconds, size, in hex.
func etagOf(fi fs.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%x-%x-%x", ino, fi.ModTime().UnixMicro(), fi.Size())
}

// statObject returns the attributes of the object at key: a regular file
// (anything else is not an object).
func (b *diskBucket) statObject(key string) (fs.FileInfo, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	fi, err := b.stat(key)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "stat", Path: key, Err: fs.ErrNotExist}
	}
	return fi, nil
}

func (b *diskBucket) Attributes(_ context.Context, key string) (*driver.Attributes, error) {
	fi, err := b.statObject(key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{
		ContentType: "application/octet-stream",
		ModTime:     fi.ModTime(),
		Size:        fi.Size(),
		ETag:        etagOf(fi),
	}, nil
}

type diskReader struct {
	f     *os.File
	r     io.Reader
	attrs driver.ReaderAttributes
}

func (r *diskReader) Read(p []byte) (int, error)           { return r.r.Read(p) }
func (r *diskReader) Close() error                         { return r.f.Close() }
func (r *diskReader) Attributes() *driver.ReaderAttributes { return &r.attrs }
func (r *diskReader) As(any) bool                          { return false }

func (b *diskBucket) NewRangeReader(_ context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, err := b.open(key, readOnly, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: key, Err: fs.ErrNotExist}
	}
	if err == nil && offset > 0 {
		_, err = f.Seek(offset, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	var r io.Reader = f
	if length >= 0 {
		r = io.LimitReader(f, length)
	}
	return &diskReader{f: f, r: r, attrs: driver.ReaderAttributes{
		ContentType: "application/octet-stream",
		ModTime:     fi.ModTime(),
		Size:        fi.Size(),
	}}, nil
}

// diskWriter writes to a temp file and publishes it on Close.
type diskWriter struct {
	ctx        context.Context
	b          *diskBucket
	f          *os.File
	tmp, key   string
	ifNotExist bool
}

// createTemp creates the hidden temp file that will become key.
func (b *diskBucket) createTemp(key string) (*os.File, string, error) {
	if err := checkKey(key); err != nil {
		return nil, "", err
	}
	dir := path.Dir(key)
	if err := b.mkdirAllSync(dir); err != nil {
		return nil, "", err
	}
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, tempPrefix+hex.EncodeToString(rnd[:]))
	f, err := b.open(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	return f, tmp, err
}

func (b *diskBucket) NewTypedWriter(ctx context.Context, key, _ string, opts *driver.WriterOptions) (driver.Writer, error) {
	f, tmp, err := b.createTemp(key)
	if err != nil {
		return nil, err
	}
	w := &diskWriter{ctx: ctx, b: b, f: f, tmp: tmp, key: key, ifNotExist: opts.IfNotExist}
	if opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(func(any) bool { return false }); err != nil {
			w.abort()
			return nil, err
		}
	}
	return w, nil
}

func (w *diskWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

func (w *diskWriter) abort() {
	_ = w.f.Close()
	_ = w.b.root.Remove(w.tmp)
}

func (w *diskWriter) Close() error {
	if err := w.ctx.Err(); err != nil {
		w.abort()
		return err
	}
	if err := w.f.Close(); err != nil {
		_ = w.b.root.Remove(w.tmp)
		return err
	}
	return w.b.publish(w.tmp, w.key, w.ifNotExist, false, nil)
}

// writeFile writes data as the object key in one go (the Store's path; the
// blob API streams through diskWriter).
func (b *diskBucket) writeFile(key string, data []byte, ifNotExist, noSync bool, before func() error) error {
	f, tmp, err := b.createTemp(key)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = b.root.Remove(tmp)
		return err
	}
	return b.publish(tmp, key, ifNotExist, noSync, before)
}

// publish makes a complete temp file durable and visible under key: fsync
// it, move it into place — create-only with renameat2(RENAME_NOREPLACE),
// which the kernel refuses when the name is taken, whichever process holds
// it — and fsync the directory. With noSync it only moves it. before,
// if set, runs right before the move; its error leaves key untouched.
func (b *diskBucket) publish(tmp, key string, ifNotExist, noSync bool, before func() error) error {
	if !noSync {
		if err := b.gs.sync(tmp); err != nil {
			_ = b.root.Remove(tmp)
			return err
		}
	}
	if before != nil {
		if err := before(); err != nil {
			_ = b.root.Remove(tmp)
			return err
		}
	}
	var err error
	if ifNotExist {
		err = b.renameNoReplace(tmp, key)
	} else {
		err = b.rename(tmp, key, 0)
	}
	if err != nil {
		_ = b.root.Remove(tmp)
		return err
	}
	if noSync {
		return nil
	}
	return b.gs.sync(path.Dir(key))
}

// renameNoReplace renames src to dst unless dst exists (errDiskExists).
func (b *diskBucket) renameNoReplace(src, dst string) error {
	err := b.rename(src, dst, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("%s: %w", dst, errDiskExists)
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		// A filesystem without RENAME_NOREPLACE: link(2) is create-only too.
		if err := b.root.Link(src, dst); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s: %w", dst, errDiskExists)
			}
			return err
		}
		return b.root.Remove(src)
	}
	return err
}

// rename renames src to dst with renameat2(2)'s flags. The parent
// directories are resolved beneath the root; the names renamed are single
// path components, which renameat2 never follows.
func (b *diskBucket) rename(src, dst string, flags uint) error {
	return b.withDir(path.Dir(src), func(sd int) error {
		renameIn := func(dd int) error {
			if err := unix.Renameat2(sd, path.Base(src), dd, path.Base(dst), flags); err != nil {
				return &fs.PathError{Op: "rename", Path: src, Err: err}
			}
			return nil
		}
		if path.Dir(dst) == path.Dir(src) {
			return renameIn(sd)
		}
		return b.withDir(path.Dir(dst), renameIn)
	})
}

// linkIfAbsent publishes the existing object src under dst as well,
// create-only, without copying bytes: src is fsynced, hard-linked to dst,
// and dst's directory fsynced. It is the file:// fast path of CopyIfAbsent.
func (b *diskBucket) linkIfAbsent(src, dst string, before func() error) error {
	if err := checkKey(src); err != nil {
		return err
	}
	if err := checkKey(dst); err != nil {
		return err
	}
	// The bytes must be durable before the final name can be.
	if err := b.gs.sync(src); err != nil {
		return err
	}
	if err := b.mkdirAllSync(path.Dir(dst)); err != nil {
		return err
	}
	if err := before(); err != nil {
		return err
	}
	if err := b.root.Link(src, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", dst, errDiskExists)
		}
		return err
	}
	return b.gs.sync(path.Dir(dst))
}

// promoteIfAbsent moves the object src to dst, create-only: src is fsynced
// (unless synced, from syncObject, is still what src is), renamed
// (RENAME_NOREPLACE) and dst's directory fsynced. It is the file:// path of
// PromoteIfAbsent: one directory operation instead of link+unlink. before
// runs right before the rename.
func (b *diskBucket) promoteIfAbsent(src, dst string, synced fs.FileInfo, before func() error) error {
	if err := checkKey(src); err != nil {
		return err
	}
	if err := checkKey(dst); err != nil {
		return err
	}
	if !b.unchanged(src, synced) {
		if err := b.gs.sync(src); err != nil {
			return err
		}
	}
	if path.Dir(dst) != path.Dir(src) {
		if err := b.mkdirAllSync(path.Dir(dst)); err != nil {
			return err
		}
	}
	if err := before(); err != nil {
		return err
	}
	if err := b.renameNoReplace(src, dst); err != nil {
		return err
	}
	return b.gs.sync(path.Dir(dst))
}

// syncObject fsyncs the object at key and returns its attributes from
// before the fsync began: a write after them changes what unchanged sees.
func (b *diskBucket) syncObject(key string) (fs.FileInfo, error) {
	fi, err := b.statObject(key)
	if err != nil {
		return nil, err
	}
	if err := b.gs.sync(key); err != nil {
		return nil, err
	}
	return fi, nil
}

// unchanged reports whether key is still the file synced describes (same
// inode, size and modification time), so that its fsync still holds.
func (b *diskBucket) unchanged(key string, synced fs.FileInfo) bool {
	if synced == nil {
		return false
	}
	fi, err := b.stat(key)
	return err == nil && os.SameFile(fi, synced) && fi.Size() == synced.Size() && fi.ModTime().Equal(synced.ModTime())
}

// readFile reads a whole regular file.
func (b *diskBucket) readFile(key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, err := b.open(key, readOnly, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: key, Err: fs.ErrNotExist}
	}
	data := make([]byte, fi.Size())
	_, err = io.ReadFull(f, data)
	return data, err
}

// mkdirAllSync creates dir and its missing parents, fsyncing each parent
// that gained an entry, so a new object's directory survives a crash too.
func (b *diskBucket) mkdirAllSync(dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	if fi, err := b.stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	parent := path.Dir(dir)
	if err := b.mkdirAllSync(parent); err != nil {
		return err
	}
	if err := b.root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return b.gs.sync(parent)
}

func (b *diskBucket) Copy(ctx context.Context, dstKey, srcKey string, _ *driver.CopyOptions) error {
	if err := checkKey(srcKey); err != nil {
		return err
	}
	data, err := b.readFile(srcKey)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.writeFile(dstKey, data, false, false, nil)
}

func (b *diskBucket) Delete(_ context.Context, key string, _ *driver.DeleteOptions) error {
	if err := checkKey(key); err != nil {
		return err
	}
	fi, err := b.root.Lstat(key)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return &fs.PathError{Op: "delete", Path: key, Err: fs.ErrNotExist}
	}
	return b.root.Remove(key)
}

// ListPaged lists keys in lexicographic order. It walks directories depth
// first, ordering the entries of each directory as their keys order (a
// directory "a" sorts as "a/"), so the walk itself yields sorted keys and a
// page costs only the directories it touches: subtrees wholly before the
// page token or outside the prefix are never opened.
func (b *diskBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if opts.Delimiter != "" && opts.Delimiter != "/" {
		return nil, fmt.Errorf("%w: file:// lists only with delimiter \"/\", not %q", errBadDiskKey, opts.Delimiter)
	}
	if err := ValidatePrefix(opts.Prefix); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadDiskKey, err)
	}
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = 1000
	}
	l := &diskLister{ctx: ctx, b: b, prefix: opts.Prefix, delim: opts.Delimiter != "", after: string(opts.PageToken), size: pageSize}
	start := ""
	if i := strings.LastIndex(opts.Prefix, "/"); i >= 0 {
		start = opts.Prefix[:i+1]
	}
	err := l.walk(start)
	if errors.Is(err, errPageFull) {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return &l.page, nil
}

var errPageFull = errors.New("page full")

type diskLister struct {
	ctx    context.Context
	b      *diskBucket
	prefix string
	delim  bool
	after  string
	size   int
	page   driver.ListPage
}

type dirEntry struct {
	key   string // full key; directories end with "/"
	isDir bool
	info  func() (fs.FileInfo, error)
}

func (l *diskLister) readDir(dirKey string) ([]dirEntry, error) {
	name := strings.TrimSuffix(dirKey, "/")
	if name == "" {
		name = "."
	}
	// Through os.Root: its files' entries read their attributes in the
	// root too (a file of openat2's has no name to read them by).
	d, err := l.b.openDirOSRoot(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents, err := d.ReadDir(-1)
	_ = d.Close()
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, 0, len(ents))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		de := dirEntry{key: dirKey + e.Name(), info: e.Info}
		kind := e.Type()
		if kind&fs.ModeSymlink != 0 {
			// Follow links the way os.Root does; an escaping or dangling link
			// is not listed.
			fi, err := l.b.stat(de.key)
			if err != nil {
				continue
			}
			kind = fi.Mode().Type()
			de.info = func() (fs.FileInfo, error) { return fi, nil }
		}
		// Only a regular file is an object (readFile refuses anything else):
		// a FIFO, socket or device is not listed either.
		if de.isDir = kind.IsDir(); !de.isDir && !kind.IsRegular() {
			continue
		}
		if de.isDir {
			de.key += "/"
		}
		out = append(out, de)
	}
	slices.SortFunc(out, func(a, b dirEntry) int { return strings.Compare(a.key, b.key) })
	return out, nil
}

func (l *diskLister) walk(dirKey string) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	ents, err := l.readDir(dirKey)
	if err != nil {
		return err
	}
	for _, e := range ents {
		inPrefix := strings.HasPrefix(e.key, l.prefix)
		if !e.isDir {
			if inPrefix && e.key > l.after {
				if err := l.add(e); err != nil {
					return err
				}
			}
			continue
		}
		if !inPrefix && !strings.HasPrefix(l.prefix, e.key) {
			continue
		}
		// Every key below e starts with e.key: skip the subtree when the page
		// token lies past all of them.
		if l.after > e.key && !strings.HasPrefix(l.after, e.key) {
			continue
		}
		if l.delim && inPrefix {
			nonEmpty, err := l.hasObject(e.key)
			if err != nil {
				return err
			}
			if nonEmpty && e.key > l.after {
				if err := l.add(dirEntry{key: e.key, isDir: true}); err != nil {
					return err
				}
			}
			continue
		}
		if err := l.walk(e.key); err != nil {
			return err
		}
	}
	return nil
}

func (l *diskLister) add(e dirEntry) error {
	if len(l.page.Objects) == l.size {
		l.page.NextPageToken = []byte(l.page.Objects[l.size-1].Key)
		return errPageFull
	}
	obj := &driver.ListObject{Key: e.key, IsDir: e.isDir}
	if !e.isDir {
		fi, err := e.info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while listing
		}
		if err != nil {
			return err
		}
		obj.Size, obj.ModTime = fi.Size(), fi.ModTime()
	}
	l.page.Objects = append(l.page.Objects, obj)
	return nil
}

// hasObject reports whether the directory dirKey holds an object anywhere
// below it (S3 has no empty directories, so neither do our listings).
func (l *diskLister) hasObject(dirKey string) (bool, error) {
	ents, err := l.readDir(dirKey)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if !e.isDir {
			return true, nil
		}
		if ok, err := l.hasObject(e.key); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

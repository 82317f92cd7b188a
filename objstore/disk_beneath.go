package objstore

import (
	"errors"
	"io/fs"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Resolving a key below the root in one system call.
//
// os.Root resolves a path one component at a time, an open(2) and a
// close(2) for each directory on the way, so a manifest four directories
// deep costs nine system calls before the one that matters, and a commit
// on file:// makes a dozen such resolutions. Linux's openat2(2) with
// RESOLVE_BENEATH resolves the whole path in the kernel and refuses (EXDEV)
// any resolution that would leave the root directory, whether through "..",
// an absolute path or a symbolic link, and RESOLVE_NO_MAGICLINKS refuses
// /proc's links. Symbolic links that stay inside are followed, as os.Root
// follows them. That is os.Root's promise, kept by the kernel in one call.
//
// Where openat2 is missing (a kernel before 5.6, or a seccomp profile that
// refuses it), the bucket resolves through os.Root as before: the probe at
// open decides (diskBucket.beneath).

// resolveBeneath is how every key is resolved under the root by openat2.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// noOpenat2 lets tests turn openat2 off for the stores they open next,
// to run the os.Root path on a kernel that has openat2.
var noOpenat2 atomic.Bool

// readOnly opens a key to read it. O_NONBLOCK changes nothing for a
// regular file, and keeps a FIFO that someone with access to the
// directory put at a key's path from blocking the open until a writer
// comes: the open returns, and the file is refused as not an object.
const readOnly = os.O_RDONLY | unix.O_NONBLOCK

// errPathEscapes is a key whose resolution would leave the root.
var errPathEscapes = errors.New("path escapes from the root")

// openat2Works reports whether openat2 resolves beneath dir here.
func openat2Works(dir *os.File) bool {
	if noOpenat2.Load() {
		return false
	}
	fd, err := unix.Openat2(int(dir.Fd()), ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveBeneath})
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}

// openFd opens name below the root with openat2 (b.beneath must be set);
// perm matters only with O_CREAT. It retries EINTR, and EAGAIN, which the
// kernel returns when a rename raced with resolving ".." and it could not
// prove the result beneath the root.
func (b *diskBucket) openFd(name string, flags int, perm uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveBeneath}
	if flags&unix.O_CREAT != 0 {
		how.Mode = uint64(perm)
	}
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(int(b.rootDir.Fd()), name, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN) && tries < 16:
			continue
		case errors.Is(err, unix.EXDEV):
			err = errPathEscapes
		}
		return -1, &fs.PathError{Op: "openat2", Path: name, Err: err}
	}
}

// open opens name below the root as os.Root.OpenFile does.
func (b *diskBucket) open(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if !b.beneath {
		return b.root.OpenFile(name, flag, perm)
	}
	fd, err := b.openFd(name, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// stat is os.Root.Stat: the attributes of what name resolves to.
func (b *diskBucket) stat(name string) (fs.FileInfo, error) {
	if !b.beneath {
		return b.root.Stat(name)
	}
	fd, err := b.openFd(name, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer func() { _ = f.Close() }()
	return f.Stat()
}

// withDir calls fn with a descriptor of the directory dir below the root,
// for the *at system calls of names inside it.
func (b *diskBucket) withDir(dir string, fn func(fd int) error) error {
	if !b.beneath {
		d, err := b.openDirOSRoot(dir)
		if err != nil {
			return err
		}
		defer func() { _ = d.Close() }()
		return fn(int(d.Fd()))
	}
	fd, err := b.openFd(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	return fn(fd)
}

// openDirOSRoot opens the directory name below the root through os.Root,
// for reading its entries or naming files in it. O_DIRECTORY: anything
// else at that path — a FIFO put or swapped in there, whose open would
// wait for a writer — is refused (ENOTDIR) at once.
func (b *diskBucket) openDirOSRoot(name string) (*os.File, error) {
	return b.root.OpenFile(name, os.O_RDONLY|unix.O_DIRECTORY, 0)
}

// fsync makes the file or directory name durable.
func (b *diskBucket) fsync(name string) error {
	if !b.beneath {
		f, err := b.root.OpenFile(name, readOnly, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	fd, err := b.openFd(name, readOnly, 0)
	if err != nil {
		return err
	}
	for {
		err = unix.Fsync(fd)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "fsync", Path: name, Err: err}
	}
	return nil
}

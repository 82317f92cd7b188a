package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// uid and gid are the image's user, flightns. Kubernetes' runAsNonRoot
// needs a numeric user; 10001 is outside the ranges distributions give
// system and login users.
const uid, gid = 10001, 10001

// epoch is every entry's modification time: reproducible layers.
var epoch = time.Unix(0, 0).UTC()

func main() {
	flightns := flag.String("flightns", "bin/flightns", "the server binary (built for the image's platform)")
	redis := flag.String("redis", "/usr/bin/redis-server", "the redis-server binary")
	certs := flag.String("certs", "/etc/ssl/certs/ca-certificates.crt", "the CA certificate bundle")
	zoneinfo := flag.String("zoneinfo", "/usr/share/zoneinfo", "the time zone database")
	out := flag.String("o", "rootfs.tar", "the tar to write")
	flag.Parse()
	if err := run(*flightns, *redis, *certs, *zoneinfo, *out); err != nil {
		fmt.Fprintln(os.Stderr, "rootfs:", err)
		os.Exit(1)
	}
}

func run(flightns, redis, certs, zoneinfo, out string) error {
	libs := map[string]bool{}
	for _, bin := range []string{flightns, redis} {
		l, err := sharedLibraries(bin)
		if err != nil {
			return err
		}
		for _, p := range l {
			libs[p] = true
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := &writer{tw: tar.NewWriter(f), dirs: map[string]bool{}}
	w.dir("/tmp", 0o1777, 0, 0)
	w.dir("/data", 0o750, uid, gid)
	w.file("/etc/passwd", []byte("root:x:0:0:root:/root:/sbin/nologin\nflightns:x:10001:10001:flightns:/data:/sbin/nologin\n"), 0o644, 0, 0)
	w.file("/etc/group", []byte("root:x:0:\nflightns:x:10001:\n"), 0o644, 0, 0)
	w.file("/etc/nsswitch.conf", []byte("hosts: files dns\n"), 0o644, 0, 0)
	w.copy(flightns, "/usr/local/bin/flightns", 0o755)
	w.copy(redis, "/usr/bin/redis-server", 0o755)
	for _, l := range slices.Sorted(maps.Keys(libs)) {
		w.copy(l, l, 0o755)
	}
	w.copy(certs, "/etc/ssl/certs/ca-certificates.crt", 0o644)
	w.tree(zoneinfo, "/usr/share/zoneinfo")
	if w.err == nil {
		w.err = w.tw.Close()
	}
	if err := f.Close(); w.err == nil {
		w.err = err
	}
	return w.err
}

// sharedLibraries lists what ldd says bin loads: each library's path and
// the dynamic loader's, as the binary names them (the loader by its
// absolute path, which is the ELF interpreter).
func sharedLibraries(bin string) ([]string, error) {
	cmd := exec.Command("ldd", bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w: %s", bin, err, stderr.String())
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if _, rest, ok := strings.Cut(line, "=> "); ok {
			line = rest
		}
		p, _, _ := strings.Cut(line, " (")
		if strings.HasPrefix(p, "/") {
			out = append(out, p)
		} else if !strings.HasPrefix(p, "linux-vdso") && !strings.Contains(p, "statically linked") {
			return nil, fmt.Errorf("ldd %s: cannot place %q", bin, line)
		}
	}
	return out, sc.Err()
}

// writer writes tar entries, each parent directory first, and keeps the
// first error.
type writer struct {
	tw   *tar.Writer
	dirs map[string]bool
	err  error
}

func (w *writer) parents(p string) {
	d := filepath.Dir(p)
	if d == "/" || w.dirs[d] {
		return
	}
	w.parents(d)
	w.dir(d, 0o755, 0, 0)
}

func (w *writer) dir(p string, mode int64, owner, group int) {
	if w.err != nil || w.dirs[p] {
		return
	}
	w.parents(p)
	w.dirs[p] = true
	w.err = w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: mode,
		Uid: owner, Gid: group, ModTime: epoch, Format: tar.FormatPAX})
}

func (w *writer) file(p string, b []byte, mode int64, owner, group int) {
	if w.err != nil {
		return
	}
	w.parents(p)
	w.err = w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: mode, Size: int64(len(b)),
		Uid: owner, Gid: group, ModTime: epoch, Format: tar.FormatPAX})
	if w.err == nil {
		_, w.err = w.tw.Write(b)
	}
}

// copy adds the file at src (symbolic links followed) as p, owned by
// root.
func (w *writer) copy(src, p string, mode int64) {
	if w.err != nil {
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		w.err = err
		return
	}
	w.file(p, b, mode, 0, 0)
}

// tree adds the regular files under src as the tree p, in name order;
// symbolic links inside it are added as the files they name.
func (w *writer) tree(src, p string) {
	if w.err != nil {
		return
	}
	w.err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(p, rel)
		if d.IsDir() {
			w.dir(dst, 0o755, 0, 0)
			return w.err
		}
		info, err := os.Stat(path)
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		w.copy(path, dst, 0o644)
		return w.err
	})
}

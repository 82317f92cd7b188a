package privateredis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flightns/flightns/internal/redisurl"
)

// holdEnv makes the test binary a lock holder (see holdLock) instead of
// running the tests.
const holdEnv = "PRIVATEREDIS_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdEnv); path != "" {
		holdLock(path)
	}
	os.Exit(m.Run())
}

// holdLock is the body of a holder process: it flocks path as Open does,
// says "held", and keeps the lock until its stdin closes or it is killed.
func holdLock(path string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startHolder runs a process that holds data's lock until it is killed.
func startHolder(t *testing.T, data string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+filepath.Join(data, lockName))
	stdin, err := cmd.StdinPipe() // closed when the test ends: the holder exits
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("the holder process says %q (%v), want held", line, err)
	}
	return cmd
}

// open opens data's private Redis, closed when the test ends.
func open(t *testing.T, data string, share bool) *Private {
	t.Helper()
	p, err := Open(context.Background(), data, share, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// client connects to url as flightns does.
func client(t *testing.T, url string) redis.UniversalClient {
	t.Helper()
	c, _, err := redisurl.Client(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustPing(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := client(t, url).Ping(ctx).Result(); got != "PONG" || err != nil {
		t.Fatalf("PING at %s: %q %v", url, got, err)
	}
}

// lockedErr is the refusal a second server gets, word for word (the
// serve tests and operators match it).
func lockedErr(data string) string {
	return "another flightns process uses the data directory " + data +
		" (its lock flightns.lock is held); stop it, or pass --data or --redis"
}

func wantLocked(t *testing.T, err error, data string) {
	t.Helper()
	if !errors.Is(err, ErrLocked) || err.Error() != lockedErr(data) {
		t.Fatalf("Open of a locked directory: %v, want ErrLocked: %s", err, lockedErr(data))
	}
}

func readURLFile(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, redisDir, urlName))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// redisChildren is the pids of this process's redis-server children.
func redisChildren(t *testing.T) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces, not ")".
		s := string(stat)
		comm := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if ppid, _ := strconv.Atoi(fields[1]); ppid == os.Getpid() && comm == "redis-server" {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestOpenStartsAServerThatAnswersAtItsPublishedURL(t *testing.T) {
	data := t.TempDir()
	sock := filepath.Join(data, redisDir, sockName)
	if len(sock) > maxSocketPath {
		t.Fatalf("test setup: %s does not fit in a socket address; shorten the test's name or $TMPDIR", sock)
	}
	p := open(t, data, false)
	if p.Shared() || p.Server() == nil {
		t.Fatalf("Open of a free directory: shared %v, server %v; want its own server", p.Shared(), p.Server())
	}
	if want := "unix://" + sock; p.URL() != want {
		t.Errorf("URL %q, want %q (the socket in the data directory)", p.URL(), want)
	}
	if got := readURLFile(t, data); got != p.URL()+"\n" {
		t.Errorf("redis.url holds %q, want %q", got, p.URL()+"\n")
	}
	mustPing(t, p.URL())
	if kids := redisChildren(t); !slices.Equal(kids, []int{p.Server().Pid()}) {
		t.Errorf("redis-server children %v, want just %d", kids, p.Server().Pid())
	}
}

func TestASecondOpenIsRefusedOrSharesTheFirstsServer(t *testing.T) {
	data := t.TempDir()
	first := open(t, data, false)

	_, err := Open(context.Background(), data, false, nil)
	wantLocked(t, err, data)

	shared := open(t, data, true)
	if !shared.Shared() || shared.Server() != nil {
		t.Fatalf("Open(share) of a held directory: shared %v, server %v; want the first's", shared.Shared(), shared.Server())
	}
	if shared.URL() != first.URL() {
		t.Errorf("shared URL %q, want the first's %q", shared.URL(), first.URL())
	}
	if kids := redisChildren(t); !slices.Equal(kids, []int{first.Server().Pid()}) {
		t.Errorf("redis-server children %v, want only the first's %d: sharing must start none", kids, first.Server().Pid())
	}

	// Closing the sharer leaves the first's server, URL and lock alone.
	if err := shared.Close(); err != nil {
		t.Fatal(err)
	}
	mustPing(t, first.URL())
	if got := readURLFile(t, data); got != first.URL()+"\n" {
		t.Errorf("after the sharer's Close redis.url holds %q, want %q", got, first.URL()+"\n")
	}
	_, err = Open(context.Background(), data, false, nil)
	wantLocked(t, err, data)
}

func TestATooLongDataDirectoryGetsItsSocketInATempDirThatCloseRemoves(t *testing.T) {
	data := filepath.Join(t.TempDir(), strings.Repeat("d", maxSocketPath))
	p := open(t, data, false)
	sock, ok := strings.CutPrefix(p.URL(), "unix://")
	if !ok || len(sock) > maxSocketPath {
		t.Fatalf("URL %q: want a unix:// socket of at most %d bytes", p.URL(), maxSocketPath)
	}
	sockDir := filepath.Dir(sock)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) }) // should the test fail before Close
	if filepath.Dir(sockDir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(sockDir), "flightns-redis-") {
		t.Fatalf("socket %s: want it in a flightns-redis-* directory of %s", sock, os.TempDir())
	}
	mustPing(t, p.URL())
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sockDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close the socket's directory %s: %v, want it removed", sockDir, err)
	}
}

func TestCloseUnpublishesStopsTheServerAndReleasesTheLock(t *testing.T) {
	data := t.TempDir()
	p := open(t, data, false)
	pid := p.Server().Pid()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, redisDir, urlName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close redis.url: %v, want it removed", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after Close the redis-server %d: kill 0 says %v, want it gone", pid, err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	again := open(t, data, false)
	if again.Shared() {
		t.Fatal("Open after Close shares a server, want its own: the lock was not released")
	}
	mustPing(t, again.URL())
}

func TestALockOfADeadProcessIsNoObstacle(t *testing.T) {
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, redisDir), 0o755); err != nil {
		t.Fatal(err)
	}
	holder := startHolder(t, data)

	// Alive, it holds the lock: refused even when sharing, since it
	// published no URL.
	for _, share := range []bool{false, true} {
		_, err := Open(context.Background(), data, share, nil)
		wantLocked(t, err, data)
	}

	// It dies without a goodbye, leaving the URL of its server behind.
	stale := "unix:///nonexistent/redis.sock\n"
	if err := os.WriteFile(filepath.Join(data, redisDir, urlName), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()

	p := open(t, data, true)
	if p.Shared() {
		t.Fatalf("Open after the holder died shares %s, want a server of its own", p.URL())
	}
	if got := readURLFile(t, data); got != p.URL()+"\n" {
		t.Errorf("redis.url holds %q, want the new server's %q", got, p.URL()+"\n")
	}
	mustPing(t, p.URL())
}

func TestDataSurvivesCloseAndOpen(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	p := open(t, data, false)
	if err := client(t, p.URL()).Set(ctx, "k", "acknowledged", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	again := open(t, data, false)
	if got, err := client(t, again.URL()).Get(ctx, "k").Result(); got != "acknowledged" || err != nil {
		t.Fatalf("after Close and Open GET k = %q %v, want acknowledged", got, err)
	}
}

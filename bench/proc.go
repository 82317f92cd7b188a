package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// childProc is a flightns child process a scenario runs, and its log.
type childProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	ready  chan struct{}
	exited chan struct{}
	err    error // of Wait
	once   sync.Once
}

func newChildProc(cmd *exec.Cmd) childProc {
	return childProc{cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{})}
}

// tail is the last n lines of the log.
func (p *childProc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines[max(0, len(p.lines)-n):], "\n")
}

// stop sends SIGTERM and waits up to limit for the exit, then kills. Only
// the first call acts; the error says whether it exited in time and
// cleanly.
func (p *childProc) stop(limit time.Duration) error {
	var err error
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			if p.err != nil {
				err = fmt.Errorf("flightns serve exited after SIGTERM: %w", p.err)
			}
		case <-time.After(limit):
			_ = p.cmd.Process.Kill()
			<-p.exited
			err = fmt.Errorf("flightns serve did not exit within %s of SIGTERM; killed", limit)
		}
	})
	return err
}

// follow reads the process's log from stderr, keeping its last maxLines
// lines (onLine, if set, sees each line under p.mu), and waits until it
// logs "flightns ready"; it stops the process when that does not come.
func (p *childProc) follow(ctx context.Context, stderr io.Reader, maxLines int, onLine func(string)) error {
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			l := sc.Text()
			p.mu.Lock()
			if onLine != nil {
				onLine(l)
			}
			p.lines = append(p.lines, l)
			if len(p.lines) > maxLines {
				p.lines = p.lines[len(p.lines)-maxLines:]
			}
			p.mu.Unlock()
			if !signalled && strings.Contains(l, "flightns ready") {
				signalled = true
				close(p.ready)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-p.ready:
		return nil
	case <-p.exited:
		return fmt.Errorf("flightns serve exited before it was ready (%w):\n%s", p.err, p.tail(30))
	case <-time.After(2 * time.Minute):
		_ = p.stop(5 * time.Second)
		return fmt.Errorf("flightns serve was not ready within 2 minutes:\n%s", p.tail(30))
	case <-ctx.Done():
		_ = p.stop(5 * time.Second)
		return ctx.Err()
	}
}

// flightnsBinary is the flightns executable the serving scenarios run;
// empty is $FLIGHTNS_BINARY, else the flightns beside this executable
// (flightns-bench). Tests set it.
var flightnsBinary string

// servingBinary finds the flightns executable the scenario serves with.
func servingBinary(scenario string) (string, error) {
	if flightnsBinary != "" {
		return flightnsBinary, nil
	}
	if b := os.Getenv("FLIGHTNS_BINARY"); b != "" {
		return b, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	beside := filepath.Join(filepath.Dir(exe), "flightns")
	if _, err := os.Stat(beside); err != nil {
		return "", fmt.Errorf("the %s benchmark serves with the flightns binary: build it beside %s (make build), or set FLIGHTNS_BINARY", scenario, filepath.Base(exe))
	}
	return beside, nil
}

// procTicks is a process's CPU time (utime + stime) in clock ticks, 0
// if it is gone.
func procTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	j := strings.LastIndexByte(s, ')') // after "pid (comm)"
	if j < 0 {
		return 0
	}
	f := strings.Fields(s[j+1:]) // state ppid … utime (12th) stime (13th)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}

// procCPU is the CPU time a process's threads have run, from the
// scheduler's nanosecond accounting (/proc/<pid>/task/*/schedstat), 0 if
// it is gone: fine enough to divide among a few dozen operations, where
// clock ticks (10 ms) are not.
func procCPU(pid int) time.Duration {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total time.Duration
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		ns, _, _ := strings.Cut(string(b), " ")
		n, _ := strconv.ParseInt(ns, 10, 64)
		total += time.Duration(n)
	}
	return total
}

package threads

import (
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Pin keeps another process to the CPUs given.
func TestPinKeepsAnotherProcessToTheCPUs(t *testing.T) {
	mine, err := Mine()
	if err != nil || len(mine) == 0 {
		t.Fatalf("Mine: %v, %v", mine, err)
	}
	want := mine[len(mine)-1:]
	cmd := exec.Command("sh", "-c", "while :; do sleep 0.01; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := Pin(cmd.Process.Pid, want); err != nil {
		t.Fatal(err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(cmd.Process.Pid, &set); err != nil {
		t.Fatal(err)
	}
	for _, c := range mine {
		if set.IsSet(c) != slices.Contains(want, c) {
			t.Fatalf("after Pin(%v) the child may run on CPU %d: %v", want, c, set.IsSet(c))
		}
	}
}

// Each reaches every thread of this process, each once.
func TestEachReachesEveryThreadOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	started := make(chan int, 8)
	for range 4 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started <- unix.Gettid()
			<-stop
		})
	}
	tids := []int{<-started, <-started, <-started, <-started}
	err := Each(0, func(tid int) error {
		mu.Lock()
		defer mu.Unlock()
		if seen[tid] {
			t.Errorf("thread %d reached twice", tid)
		}
		seen[tid] = true
		return nil
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		if !seen[tid] {
			t.Errorf("thread %d was not reached", tid)
		}
	}
}

// Idle puts every thread of another process under SCHED_IDLE.
func TestIdleSchedulesEveryThreadOfAnotherProcessLast(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do sleep 0.01; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := Idle(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := Each(cmd.Process.Pid, func(tid int) error {
		n++
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			return err
		}
		if a.Policy != unix.SCHED_IDLE {
			t.Errorf("thread %d has policy %d, want SCHED_IDLE (%d)", tid, a.Policy, unix.SCHED_IDLE)
		}
		return nil
	}); err != nil || n == 0 {
		t.Fatalf("%d threads: %v", n, err)
	}
}

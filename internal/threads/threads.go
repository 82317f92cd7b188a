package threads

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Each calls fn once for every thread of process pid (0: this process),
// in passes over its threads until one finds no thread not yet seen. A
// thread that exits before fn reaches it is skipped: fn's unix.ESRCH is
// ignored.
func Each(pid int, fn func(tid int) error) error {
	dir := "/proc/self/task"
	if pid != 0 {
		dir = fmt.Sprintf("/proc/%d/task", pid)
	}
	done := map[int]bool{}
	for {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("threads: listing the threads of %s: %w", dir, err)
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh, done[tid] = true, true
			if err := fn(tid); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
		}
		if !fresh {
			return nil
		}
	}
}

// Pin keeps every thread of process pid (0: this process), and so every
// thread they make, to cpus.
func Pin(pid int, cpus []int) error {
	return Each(pid, func(tid int) error { return PinThread(tid, cpus) })
}

// PinThread keeps thread tid to cpus.
func PinThread(tid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(tid, &set); err != nil {
		return fmt.Errorf("threads: keeping thread %d to CPUs %v: %w", tid, cpus, err)
	}
	return nil
}

// Idle runs every thread of process pid (0: this process), and so every
// thread they make, under SCHED_IDLE: a core runs them only when no
// other thread of the machine wants it.
func Idle(pid int) error {
	return Each(pid, IdleThread)
}

// IdleThread runs thread tid under SCHED_IDLE.
func IdleThread(tid int) error {
	if err := unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_IDLE}, 0); err != nil {
		return fmt.Errorf("threads: scheduling thread %d as idle: %w", tid, err)
	}
	return nil
}

// Mine lists the CPUs this process's calling thread may run on.
func Mine() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("threads: reading this thread's CPUs: %w", err)
	}
	var mine []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			mine = append(mine, c)
		}
	}
	return mine, nil
}

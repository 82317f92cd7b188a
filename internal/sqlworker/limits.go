package sqlworker

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flightns/flightns/internal/threads"
)

// LimitSelf bounds the calling process as spec says, before it allocates
// much:
//
//   - its data segment (RLIMIT_DATA, which Linux counts over every
//     private writable mapping, so malloc and mmap fail beyond it) to
//     spec.DataLimit bytes (0: no limit);
//   - every thread it has (and so every thread they create) to the CPUs
//     spec.CPUs (none: any), and, if spec.Idle, under SCHED_IDLE: a core
//     runs them only when no other thread of the machine wants it, and a
//     waking thread of the server takes the core at once.
//
// Measured on 2 cores (docs/flight.md): at nice 19 the worker still took
// 1.3 cores while the server waited on fsyncs, and commits under runaway
// queries kept 0.74–0.82 of their rate; SCHED_IDLE alone kept 0.7 for a
// single committer (each commit's many wake-ups then preempt a query
// first); SCHED_IDLE on one of the two cores kept 0.9–1.0.
func LimitSelf(spec Spec) error {
	if spec.DataLimit > 0 {
		lim := unix.Rlimit{Cur: uint64(spec.DataLimit), Max: uint64(spec.DataLimit)}
		if err := unix.Setrlimit(unix.RLIMIT_DATA, &lim); err != nil {
			return fmt.Errorf("sqlworker: limiting the data segment to %d bytes: %w", spec.DataLimit, err)
		}
	}
	if len(spec.CPUs) == 0 && !spec.Idle {
		return nil
	}
	// One pass over the threads sets both.
	return threads.Each(0, func(tid int) error {
		if len(spec.CPUs) > 0 {
			if err := threads.PinThread(tid, spec.CPUs); err != nil {
				return fmt.Errorf("sqlworker: %w", err)
			}
		}
		if spec.Idle {
			if err := threads.IdleThread(tid); err != nil {
				return fmt.Errorf("sqlworker: %w", err)
			}
		}
		return nil
	})
}

// WorkerCPUs chooses the CPUs of the worker among those the calling
// process may use: the last n of them, or, for n ≤ 0, all but the first
// (all, when there is only one). It returns nil when that is all of them
// (no need to pin).
func WorkerCPUs(n int) ([]int, error) {
	mine, err := threads.Mine()
	if err != nil {
		return nil, fmt.Errorf("sqlworker: %w", err)
	}
	if n <= 0 {
		n = len(mine) - 1
	}
	if n <= 0 || n >= len(mine) {
		return nil, nil
	}
	return mine[len(mine)-n:], nil
}

// residentBytes is the resident set size of process pid.
func residentBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("sqlworker: no VmRSS for process %d", pid)
}

package sqlworker

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LimitSelf bounds the calling process, before it allocates much: its data
// segment (RLIMIT_DATA, which Linux counts over every private writable
// mapping, so malloc and mmap fail beyond it) to dataLimit bytes (0: no
// limit), and the scheduling priority of every thread it has (and so of
// every thread they create) to nice.
func LimitSelf(dataLimit int64, nice int) error {
	if dataLimit > 0 {
		lim := unix.Rlimit{Cur: uint64(dataLimit), Max: uint64(dataLimit)}
		if err := unix.Setrlimit(unix.RLIMIT_DATA, &lim); err != nil {
			return fmt.Errorf("sqlworker: limiting the data segment to %d bytes: %w", dataLimit, err)
		}
	}
	if nice != 0 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("sqlworker: listing threads: %w", err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
				return fmt.Errorf("sqlworker: lowering thread %d's priority: %w", tid, err)
			}
		}
	}
	return nil
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

// ParseSize reads a size the way DuckDB writes them: a number and a unit,
// B, KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024),
// case-insensitive.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: want a number and a unit such as 512MB or 4GiB", s)
	}
	mult := map[string]float64{"": 1, "b": 1, "bytes": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	return int64(f * mult), nil
}

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
)

// profileDirEnv names a directory: when it is set, `flightns serve` and
// the SQL worker it starts each write a CPU profile of their whole run
// there, as <command>-<pid>.pprof (for `go tool pprof`), and at the end
// the allocations of the run, as <command>-<pid>.allocs.pprof. It is how
// the benchmarks' server-side CPU is profiled; there is no profiling
// endpoint on any listener.
const profileDirEnv = "FLIGHTNS_CPU_PROFILE_DIR"

// startProfile starts the CPU profile profileDirEnv asks for, if it asks,
// and returns what stops it and writes it out. A profile that cannot be
// started is reported on stderr and the command runs without it.
func startProfile(command string, stderr io.Writer) (stop func()) {
	dir := os.Getenv(profileDirEnv)
	if dir == "" {
		return func() {}
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", command, os.Getpid()))
	f, err := createProfile(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
		if err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns %s: no CPU profile (%s): %v\n", command, profileDirEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns %s: writing the CPU profile %s: %v\n", command, path, err)
		}
		allocs := strings.TrimSuffix(path, ".pprof") + ".allocs.pprof"
		if err := writeAllocs(allocs); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns %s: writing the allocation profile %s: %v\n", command, allocs, err)
		}
	}
}

// writeAllocs writes the allocations made since the start (sampled, as
// the runtime samples them) to path.
func writeAllocs(path string) error {
	f, err := createProfile(path)
	if err != nil {
		return err
	}
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// createProfile creates a profile's file, never over an existing one.
func createProfile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

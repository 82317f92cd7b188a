package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// benchCmd runs flightns-bench, the benchmark command, from beside this
// executable: the server binary links none of the measuring machinery.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
		return 1
	}
	path := filepath.Join(filepath.Dir(self), "flightns-bench")
	if _, err := os.Stat(path); err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns bench: the benchmarks are the command flightns-bench, and %s is missing: build it with `make build` (or: go build -tags duckdb_arrow -o %s ./cmd/flightns-bench)\n", path, path)
		return 1
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	// A stop (SIGINT/SIGTERM here) reaches the benchmarks as an interrupt,
	// so that they stop their servers and write what they have.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
		return 1
	}
	return 0
}

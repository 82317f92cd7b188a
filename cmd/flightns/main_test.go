package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionHelpAndUnknownCommands(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"version"}, 0, "flightns dev (", ""},
		{[]string{"help"}, 0, "flightns serve [flags]", ""},
		{nil, 2, "", "Usage:"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"serve", "--help"}, 0, "", "-redis"},
		{[]string{"serve", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
			t.Errorf("flightns %v: code %d, stdout %q, stderr %q", c.args, code, out.String(), errb.String())
		}
	}
}

// TestServerLinksNoMeasuringMachinery holds the server binary to what
// serving needs: the benchmarks, the test helpers, the MinIO runner, the
// fault proxy and the plotting library live in flightns-bench.
func TestServerLinksNoMeasuringMachinery(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "duckdb_arrow", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/flightns/flightns/bench", "/internal/testutil", "/internal/minioproc", "/internal/s3proxy", "gonum.org/v1/plot", "gofakes3"} {
			if strings.Contains(dep, banned) {
				t.Errorf("cmd/flightns links %s", dep)
			}
		}
	}
}

func TestBenchRunsFlightnsBenchBesideIt(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, "bench", "--list")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "flightns-bench is missing: build it with `make build`") {
		t.Fatalf("flightns bench with no flightns-bench beside it: %v, stderr %q", err, stderr.String())
	}
	// Beside it, the arguments and the exit code pass through.
	script := filepath.Join(filepath.Dir(binary), "flightns-bench")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"bench $*\"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Remove(script) }()
	stdout.Reset()
	cmd = exec.Command(binary, "bench", "--list", "--quick")
	cmd.Stdout = &stdout
	err = cmd.Run()
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || stdout.String() != "bench --list --quick\n" {
		t.Fatalf("flightns bench through flightns-bench: %v, stdout %q", err, stdout.String())
	}
}

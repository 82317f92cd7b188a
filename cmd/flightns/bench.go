package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/bench"
)

func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarios := fs.String("scenario", "", "comma-separated scenarios to run (default: all); --list shows them")
	clients := fs.String("clients", "1,8,16,32", "comma-separated client counts")
	duration := fs.Duration("duration", 3*time.Second, "length of each measurement")
	out := fs.String("out", "", "write the JSON report here (default: bench-results/<time>.json; - for stdout)")
	list := fs.Bool("list", false, "list the scenarios and exit")
	manifestRows := fs.String("manifest-rows", "1000000", "comma-separated __manifest sizes for the manifest scenario")
	backends := fs.String("backends", "", "comma-separated object-store backends to measure: mem, file, s3 (default: all)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	persistence := fs.String("redis-persistence", "none", "persistence of the benchmark's Redis: none, everysec or always")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *list {
		for _, s := range bench.Scenarios() {
			_, _ = fmt.Fprintf(stdout, "%-24s %s\n", s.Name, s.Description)
		}
		return 0
	}
	cfg := bench.Config{Duration: *duration, Progress: stderr, RedisPersistence: *persistence}
	for _, r := range strings.Split(*manifestRows, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n < 1000 {
			_, _ = fmt.Fprintf(stderr, "flightns bench: --manifest-rows: %q is not a number of rows (≥ 1000)\n", r)
			return 2
		}
		cfg.ManifestRows = append(cfg.ManifestRows, n)
	}
	if *backends != "" {
		cfg.Backends = strings.Split(*backends, ",")
	}
	if *scenarios != "" {
		cfg.Scenarios = strings.Split(*scenarios, ",")
	}
	for _, c := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			_, _ = fmt.Fprintf(stderr, "flightns bench: --clients: %q is not a positive number\n", c)
			return 2
		}
		cfg.Clients = append(cfg.Clients, n)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
			return 1
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
		return 1
	}
	w := stdout
	path := *out
	if path == "" {
		path = filepath.Join("bench-results", rep.StartedAt.Format("20060102T150405Z")+".json")
	}
	if path != "-" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
			return 1
		}
		f, err := os.Create(path)
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
			return 1
		}
		defer func() { _ = f.Close() }()
		w = f
		_, _ = fmt.Fprintf(stderr, "report: %s\n", path)
	}
	if err := rep.WriteJSON(w); err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
		return 1
	}
	return 0
}

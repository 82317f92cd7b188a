package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/flightns/flightns/bench"
)

func main() {
	if code, ok := bench.SubscriberHost(); ok { // a child of feed-commits
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the benchmarks a command line asks for and returns the exit
// code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarios := fs.String("scenario", "", "comma-separated scenarios to run (default: all); --list shows them")
	clients := fs.String("clients", "", "comma-separated client counts (default: 1,8,32,128; with --quick 1,8)")
	duration := fs.Duration("duration", 0, "length of each measurement (default: 3s; with --quick 500ms)")
	quick := fs.Bool("quick", false, "a short smoke run: 1 and 8 clients, 500ms per measurement, the object-store, commit and namespace scenarios (flags given explicitly win)")
	out := fs.String("out", "", "write the JSON report here (default: bench-results/<time>.json; - for stdout)")
	chart := fs.String("chart", "", "write the PNG chart here (default: the report's path with .png; none when the report goes to stdout)")
	list := fs.Bool("list", false, "list the scenarios and exit")
	replot := fs.String("replot", "", "draw the chart of an existing JSON report (to --chart, or beside it) and exit")
	manifestRows := fs.String("manifest-rows", "", "comma-separated __manifest sizes for the manifest and flight scenarios (default: 1000000; with --quick 100000)")
	txnTables := fs.String("txn-tables", "2,4,16", "comma-separated table counts of the multi-table transactions")
	backends := fs.String("backends", "", "comma-separated backends to measure: mem, file, tmpfs, s3, minio, minio+10ms, minio-copy+10ms, tmpfs-split (default: all a scenario has)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	persistence := fs.String("redis-persistence", "none", "persistence of the benchmark's Redis: none, everysec or always")
	processes := fs.String("processes", "", "comma-separated LanceDB writer processes of the lance scenarios (default: 1,4)")
	rounds := fs.Int("rounds", 0, "alternating rounds of each lance workload, the median reported (default: 3)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "flightns bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *replot != "" {
		return replotCmd(*replot, *chart, stderr)
	}
	if *list {
		for _, s := range bench.Scenarios() {
			_, _ = fmt.Fprintf(stdout, "%-24s %s\n", s.Name, s.Description)
		}
		return 0
	}
	// One line per finished measurement, under a progress bar when
	// stderr is a terminal.
	cfg := bench.Config{Duration: *duration, Quick: *quick, Progress: stderr, ProgressBar: isTerminal(stderr), RedisPersistence: *persistence}
	var ok bool
	if cfg.ManifestRows, ok = parseCounts(stderr, "--manifest-rows", *manifestRows, 1000); !ok {
		return 2
	}
	if cfg.TxnTables, ok = parseCounts(stderr, "--txn-tables", *txnTables, 2); !ok {
		return 2
	}
	if cfg.Clients, ok = parseCounts(stderr, "--clients", *clients, 1); !ok {
		return 2
	}
	if cfg.Processes, ok = parseCounts(stderr, "--processes", *processes, 1); !ok {
		return 2
	}
	cfg.Rounds = *rounds
	if *backends != "" {
		cfg.Backends = strings.Split(*backends, ",")
	}
	if *scenarios != "" {
		cfg.Scenarios = strings.Split(*scenarios, ",")
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
	path := *out
	if path == "" {
		path = filepath.Join("bench-results", rep.StartedAt.Format("20060102T150405Z")+".json")
	}
	chartPath := *chart
	if chartPath == "" && path != "-" {
		chartPath = strings.TrimSuffix(path, filepath.Ext(path)) + ".png"
	}
	if path == "-" {
		if err := rep.WriteJSON(stdout); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
			return 1
		}
	} else {
		if err := writeFile(path, rep.WriteJSON); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
			return 1
		}
		_, _ = fmt.Fprintf(stderr, "report: %s\n", path)
	}
	if chartPath != "" {
		if err := writeFile(chartPath, rep.WriteChart); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns bench: chart: %v\n", err)
			return 1
		}
		_, _ = fmt.Fprintf(stderr, "chart: %s\n", chartPath)
	}
	return 0
}

// replotCmd draws the chart of the JSON report at path.
func replotCmd(path, chartPath string, stderr io.Writer) int {
	b, err := os.ReadFile(path)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns bench: %v\n", err)
		return 1
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns bench: %s is not a report: %v\n", path, err)
		return 1
	}
	if chartPath == "" {
		chartPath = strings.TrimSuffix(path, filepath.Ext(path)) + ".png"
	}
	if err := writeFile(chartPath, rep.WriteChart); err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns bench: chart: %v\n", err)
		return 1
	}
	_, _ = fmt.Fprintf(stderr, "chart: %s\n", chartPath)
	return 0
}

// parseCounts parses a comma-separated list of counts of at least least;
// an empty list is nil (the default).
func parseCounts(stderr io.Writer, flagName, list string, least int) ([]int, bool) {
	if strings.TrimSpace(list) == "" {
		return nil, true
	}
	var out []int
	for _, c := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < least {
			_, _ = fmt.Fprintf(stderr, "flightns bench: %s: %q is not a number ≥ %d\n", flagName, c, least)
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// writeFile creates path (and its directory) and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// isTerminal reports whether w is a terminal: the progress bar is drawn
// only there.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
)

// version and commit are set at build time with -ldflags
// "-X main.version=… -X main.commit=…" (make image does); a plain build
// takes the commit from the module's VCS stamp.
var version, commit = "dev", ""

const usage = `flightns — a catalog and commit coordinator for Lance tables

Usage:
  flightns serve [flags]          run the server (see "flightns serve --help")
  flightns query [flags] "<SQL>"  run SQL over the catalog of a running server (Flight SQL)
  flightns ns <op> [flags]        namespaces of a running server: list, create, describe, drop
  flightns table <op> [flags]     tables of a running server: list, describe, declare, versions, drop, deregister
  flightns changes [flags]        the catalog's change feed, one event per line (--follow: as it happens)
  flightns admin <cmd> [flags]    repair and maintenance: recover, compact, verify, gc
  flightns hash-password          print the bcrypt hash of a password (read from stdin) for --auth-file
  flightns bench [flags]          measure throughput and latency, write a JSON report
  flightns version                print the version
  flightns help                   print this text
`

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first SIGINT/SIGTERM asks for a graceful stop; a second one
		// exits at once (the private Redis dies with us: its parent-death
		// signal).
		<-sigs
		cancel()
		sig := <-sigs
		_, _ = fmt.Fprintf(os.Stderr, "flightns: second signal (%v): exiting now\n", sig)
		os.Exit(130)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		_, _ = fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		defer startProfile("serve", stderr)()
		return serve(ctx, args[1:], stdout, stderr)
	case "bench":
		return benchCmd(ctx, args[1:], stdout, stderr)
	case "admin":
		return adminCmd(ctx, args[1:], stdout, stderr)
	case "query":
		return queryCmd(ctx, args[1:], stdout, stderr)
	case "ns":
		return nsCmd(ctx, args[1:], stdout, stderr)
	case "table":
		return tableCmd(ctx, args[1:], stdout, stderr)
	case "changes":
		return changesCmd(ctx, args[1:], stdout, stderr)
	case "hash-password":
		return hashPasswordCmd(args[1:], os.Stdin, stdout, stderr)
	case "sql-worker": // started by serve; not in the usage
		defer startProfile("sql-worker", stderr)()
		return sqlWorkerCmd(ctx, stderr)
	case "version", "--version", "-version":
		_, _ = fmt.Fprintf(stdout, "flightns %s (%s%s %s/%s)\n", version, commitNote(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	case "help", "--help", "-help", "-h":
		_, _ = fmt.Fprint(stdout, usage)
		return 0
	default:
		_, _ = fmt.Fprintf(stderr, "flightns: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// commitNote is "commit <hash>, " for version's line: the stamped commit,
// or the VCS revision Go records in a build from a checkout; "" for none.
func commitNote() string {
	c := commit
	if c == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		return ""
	}
	return "commit " + c + ", "
}

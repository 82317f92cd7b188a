package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/client"
	"github.com/flightns/flightns/nserror"
)

const changesUsage = `Usage: flightns changes [--after N] [--follow] [--format json|table] [flags]

The catalog's change feed, one event per line, in catalog sequence order:
what the caller may read, after sequence N (0: from the oldest kept).
Without --follow it prints the history through the newest change and
ends; with --follow it keeps printing as changes happen, reconnecting and
resuming after the last sequence it read when the server goes away (a
restart, another replica behind the same URL), until interrupted.
--namespace, --table (ids joined by --delimiter) and --type narrow it.

Flags:
`

// changesCmd is flightns changes.
func changesCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("changes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { _, _ = fmt.Fprint(stderr, changesUsage); fs.PrintDefaults() }
	var cf clientFlags
	cf.register(fs)
	after := fs.Uint64("after", 0, "print the changes after this catalog sequence")
	follow := fs.Bool("follow", false, "keep printing changes as they happen, across server restarts, until interrupted")
	format := fs.String("format", "json", "json (one JSON event per line) or table")
	delim := fs.String("delimiter", ".", "the separator of names in --namespace and --table")
	ns := fs.String("namespace", "", "only the events of objects in this namespace's subtree")
	table := fs.String("table", "", "only the events of this table")
	var types listFlag
	fs.Var(&types, "type", "only events of this type (repeatable): namespace.created, table.version.created, …")
	if _, code := parseInterleaved(fs, args); code >= 0 {
		return code
	}
	if *format != "json" && *format != "table" {
		_, _ = fmt.Fprintf(stderr, "flightns changes: --format is json or table, not %q\n", *format)
		return 2
	}
	req := api.ChangesRequest{After: *after, Types: types}
	if *ns != "" {
		req.Namespace = strings.Split(*ns, *delim)
	}
	if *table != "" {
		req.Table = strings.Split(*table, *delim)
	}
	c, err := client.New(client.Config{URL: cf.restURL, Token: cf.token, User: cf.user, Password: cf.password, InsecureSkipVerify: cf.skipVerify})
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns changes: %v\n", err)
		return 2
	}
	emit := func(ev api.Event) error { return printEvent(stdout, ev, *format) }
	if !*follow {
		ctx, cancel := context.WithTimeout(ctx, cf.timeout)
		defer cancel()
		if _, err := c.Changes(ctx, req, false, emit); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns changes: %v\n", describe(err))
			return 1
		}
		return 0
	}
	wait := 500 * time.Millisecond
	for {
		through, err := c.Changes(ctx, req, true, emit)
		if through > req.After {
			req.After, wait = through, 500*time.Millisecond
		}
		if ctx.Err() != nil {
			return 0 // interrupted
		}
		var ne *nserror.Error
		if errors.As(err, &ne) && ne.Code != nserror.ServiceUnavailable && ne.Code != nserror.Internal {
			_, _ = fmt.Fprintf(stderr, "flightns changes: %v\n", describe(err))
			return 1 // a refusal: reconnecting would not change it
		}
		_, _ = fmt.Fprintf(stderr, "flightns changes: the feed ended after sequence %d (%v); reconnecting in %v\n", req.After, err, wait)
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// printEvent prints one event as a line of JSON or of a table.
func printEvent(w io.Writer, ev api.Event, format string) error {
	if format == "json" {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	what := ev.ID.String()
	if len(ev.ID) == 0 {
		what = ev.Location
	}
	var detail []string
	if len(ev.From) > 0 {
		detail = append(detail, "from "+ev.From.String())
	}
	if ev.Version > 0 {
		detail = append(detail, fmt.Sprintf("v%d", ev.Version))
	}
	if ev.Branch != "" {
		detail = append(detail, "branch "+ev.Branch)
	}
	if len(ev.Versions) > 0 {
		detail = append(detail, fmt.Sprintf("versions %v", ev.Versions))
	}
	if ev.Tag != "" {
		detail = append(detail, "tag "+ev.Tag)
	}
	if ev.FromVersion > 0 {
		detail = append(detail, fmt.Sprintf("from %s@%d", cmp.Or(ev.FromBranch, "main"), ev.FromVersion))
	}
	if ev.Grantee != "" || ev.Group != "" {
		who := "principal " + ev.Grantee
		if ev.Group != "" {
			who = "group " + ev.Group
		}
		detail = append(detail, strings.TrimSpace(who+" "+ev.Role))
	}
	if ev.Files > 0 {
		detail = append(detail, fmt.Sprintf("%d files, %d bytes deleted", ev.Files, ev.Bytes))
	}
	if ev.LostThrough > 0 {
		detail = append(detail, fmt.Sprintf("lost through %d", ev.LostThrough))
	}
	if ev.TxnID != "" {
		detail = append(detail, "txn "+ev.TxnID)
	}
	_, err := fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", ev.Seq, ev.Time.Format(time.RFC3339Nano), ev.Type, what, ev.Principal, strings.Join(detail, " "))
	return err
}

// listFlag collects the values of a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

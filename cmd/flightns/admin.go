package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/obs"
	"github.com/flightns/flightns/internal/repair"
	"github.com/flightns/flightns/server"
)

const adminUsage = `Usage: flightns admin <command> [flags]

Repair and maintenance of a catalog, run next to (or instead of) a server.
They open the catalog themselves: --data/--root/--redis/--catalog as for
"flightns serve". With no --redis they use the running server's private
Redis, or start the data directory's own when no server runs.

Commands:
  recover   rebuild Redis state from object storage (--if-needed: only when lost)
  compact   write a __manifest snapshot now
  verify    check every table's version records against its manifests in
            storage, and the __manifest table's segments and snapshots (read
            from storage, never from the SQL engine) against both; --repair
            fixes what it can (exit 1 while drift remains); --format json
  repair    make a catalog whose __manifest files are damaged whole again:
            keep the newest readable snapshot and the segments after it,
            quarantine every other file (never delete), re-derive what is
            past it from Redis and storage, verify, snapshot; reports what
            could not be recovered (--dry-run plans only; --format json).
            Stop every server of the catalog first.
  gc        delete orphaned staging manifests older than --older-than,
            files a stale writer left in a dropped table's directory, and
            what drops kept past --drop-retention (default 7 days; 0: every
            drop kept) (--dry-run lists them)
  cleanup [--dry-run] [--older-than D [--retain-versions K]] [TABLE…]
            clean up old versions now: of the tables named (names joined by
            --delimiter, default "."), or of every table a retention policy
            (flightns.cleanup.older_than, retain_versions) reaches; tagged
            versions, branch bases and each branch's latest stay
            (--format json)
  dropped   list the drops kept recoverable (--format json)
  undrop (--table T | --namespace NS) [--drop-id ID]
            put a dropped table, or a namespace with everything its drop
            removed, back with its versions, branches and tags (names
            joined by --delimiter, default "."); the newest drop of it
            unless --drop-id names one (admin dropped lists them)
  revoke-sessions --name N
            end every session (login bearer) of user N issued until now, on
            every server of the catalog within seconds; N logs in again to
            get a new one (remove N from --auth-file to keep it out)
  grant --namespace NS --role R (--principal N | --group G)
            give role R (read, write or admin) on namespace NS and all it
            holds (NS: names joined by --delimiter, default "."; empty: the
            whole catalog) to principal N or to every member of group G, in
            place of what it held there; every server applies it within
            seconds. Give a principal role none in --auth-file (or map no
            role to its OIDC groups) to limit it to its grants.
  revoke-grant --namespace NS (--principal N | --group G)
            take that away
  grants    list the grants (--format json)
`

func adminCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		_, _ = fmt.Fprint(stderr, adminUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	name := args[0]
	fs := flag.NewFlagSet("admin "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf server.Store
	registerStore(fs, &sf)
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn or error")
	var run func(ctx context.Context, svc *namespace.Service, d *server.Deps) int
	// fallback, when set, runs instead of failing when the store and Redis
	// open but the catalog does not.
	var fallback func(ctx context.Context, d *server.Deps, openErr error) int
	// raw, when set, runs instead of opening the catalog.
	var raw func(ctx context.Context, d *server.Deps, log *slog.Logger) int
	format := "text"
	switch name {
	case "repair":
		dry := fs.Bool("dry-run", false, "say what would be quarantined and recovered; change nothing")
		fs.StringVar(&format, "format", "text", "report format: text or json")
		raw = func(ctx context.Context, d *server.Deps, log *slog.Logger) int {
			bar, progress := bar(stderr, "repairing")
			rep, err := repair.Repair(ctx, repair.RepairOptions{Objects: d.Store, Redis: d.Redis, Catalog: sf.Catalog, DryRun: *dry, Now: time.Now(),
				Progress: progress, Open: func(ctx context.Context) (*namespace.Service, error) { return d.OpenCatalog(ctx, log) }})
			_ = bar.Finish()
			if format == "json" {
				b, _ := json.MarshalIndent(rep, "", "  ")
				_, _ = fmt.Fprintln(stdout, string(b))
			} else {
				_, _ = fmt.Fprint(stdout, rep.String())
			}
			if err != nil {
				_, _ = fmt.Fprintf(stderr, "flightns admin repair: %v\n", err)
				return 1
			}
			return 0
		}
	case "recover":
		ifNeeded := fs.Bool("if-needed", false, "recover only when Redis lost the catalog's state (default: always rebuild)")
		run = func(ctx context.Context, svc *namespace.Service, d *server.Deps) int {
			done := spinner(stderr, "recovering Redis state from storage")
			st, err := repair.Recover(ctx, repair.CatalogOf(svc), !*ifNeeded)
			done()
			if err != nil {
				_, _ = fmt.Fprintf(stderr, "flightns admin recover: %v\n", err)
				return 1
			}
			_, _ = fmt.Fprintf(stdout, "recovered: %d transaction records (%d rolled forward, %d voided, %d stuck), %d tables re-seeded, in %v\n",
				st.Transactions, st.RolledForward, st.Voided, st.Stuck, st.TablesReseeded, st.Duration.Round(time.Millisecond))
			return 0
		}
	case "compact":
		run = func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
			done := spinner(stderr, "writing a __manifest snapshot")
			err := repair.Compact(ctx, repair.CatalogOf(svc))
			done()
			if err != nil {
				_, _ = fmt.Fprintf(stderr, "flightns admin compact: %v\n", err)
				return 1
			}
			_, _ = fmt.Fprintf(stdout, "compacted: snapshot at catalog sequence %d\n", svc.Table().Visible())
			return 0
		}
	case "verify":
		fix := fs.Bool("repair", false, "repair the drift: forget records of deleted manifests, record manifests above the head, re-derive missing __manifest version rows")
		fs.StringVar(&format, "format", "text", "report format: text (one line per drift, then a summary) or json (one object)")
		run = func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
			bar, progress := bar(stderr, "verifying tables")
			rep, err := repair.Verify(ctx, repair.CatalogOf(svc), *fix, progress)
			_ = bar.Finish()
			if err != nil {
				_, _ = fmt.Fprintf(stderr, "flightns admin verify: %v\n", err)
				return 1
			}
			return printVerify(stdout, stderr, format, rep, "")
		}
		// A catalog that does not open (a server would refuse to load a
		// segment or a snapshot) is still checked: its __manifest in
		// storage alone says which files are wrong.
		fallback = func(ctx context.Context, d *server.Deps, openErr error) int {
			_, _ = fmt.Fprintf(stderr, "flightns admin verify: %v\nchecking __manifest in storage alone\n", openErr)
			bar, progress := bar(stderr, "verifying tables")
			rep, err := repair.VerifyStorage(ctx, d.Store, sf.Catalog, progress)
			_ = bar.Finish()
			if err != nil {
				_, _ = fmt.Fprintf(stderr, "flightns admin verify: %v\n", err)
				return 1
			}
			printVerify(stdout, stderr, format, rep, openErr.Error())
			return 1
		}
	case "revoke-sessions":
		raw = revokeSessions(fs.String("name", "", "the user whose sessions end"), stdout, stderr)
	case "grant", "revoke-grant", "grants":
		run = grantsCmd(name, fs, &format, stdout, stderr)
	case "undrop":
		run = undropCmd(fs, stdout, stderr)
	case "dropped":
		fs.StringVar(&format, "format", "text", "text (one drop a line) or json")
		run = droppedCmd(&format, dropRetentionFlag(fs), stdout, stderr)
	case "gc":
		run = gcCmd(fs, stdout, stderr)
	case "cleanup":
		run = cleanupCmd(fs, &format, stdout, stderr)
	default:
		_, _ = fmt.Fprintf(stderr, "flightns admin: unknown command %q\n\n%s", name, adminUsage)
		return 2
	}
	if code, ok := parseAdmin(fs, args[1:], &format, stderr); !ok {
		return code
	}
	log, err := obs.NewLogger(stderr, "text", *logLevel)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns admin: %v\n", err)
		return 2
	}
	deps, err := server.OpenDeps(ctx, sf, log, true, nil)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns admin %s: %v\n", name, err)
		return 1
	}
	defer deps.Close(log)
	if raw != nil {
		return raw(ctx, deps, log)
	}
	svc, err := deps.OpenCatalog(ctx, log)
	if err != nil {
		if fallback != nil {
			return fallback(ctx, deps, err)
		}
		_, _ = fmt.Fprintf(stderr, "flightns admin %s: %v\n", name, err)
		return 1
	}
	defer func() { _ = svc.Close() }()
	return run(ctx, svc, deps)
}

// printVerify writes a verify report in format (text or json) and returns
// the exit code: 1 while drift is left unrepaired. openErr, when set, says
// the catalog did not open and only storage was checked.
func printVerify(stdout, stderr io.Writer, format string, rep repair.VerifyReport, openErr string) int {
	code := 0
	if rep.Unrepaired() > 0 {
		code = 1
	}
	if format == "json" {
		out := struct {
			repair.VerifyReport
			DriftCount  int    `json:"drift_count"`
			Left        int    `json:"left"`
			StorageOnly bool   `json:"storage_only,omitempty"`
			OpenError   string `json:"open_error,omitempty"`
		}{rep, len(rep.Drift), rep.Unrepaired(), openErr != "", openErr}
		if out.Drift == nil {
			out.Drift = []repair.Drift{}
		}
		if out.Pruned == nil {
			out.Pruned = []repair.Drift{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns admin verify: %v\n", err)
			return 1
		}
		return code
	}
	for _, d := range rep.Drift {
		_, _ = fmt.Fprintln(stdout, d)
	}
	m := rep.Manifest
	_, _ = fmt.Fprintf(stdout, "__manifest in storage: %d rows at catalog sequence %d (snapshot %d, then segments; %d snapshot and %d segment files checked)\n",
		m.Rows, m.Seq, m.Snapshot, m.Snapshots, m.Segments)
	if openErr != "" {
		_, _ = fmt.Fprintf(stdout, "verified __manifest in storage only (the catalog does not open): %d drift, %d left\n", len(rep.Drift), rep.Unrepaired())
		return 1
	}
	if len(rep.Pruned) > 0 {
		_, _ = fmt.Fprintf(stdout, "pruned by Lance's cleanup (not drift; their records left the catalog): %s\n", prunedSummary(rep.Pruned))
	}
	_, _ = fmt.Fprintf(stdout, "verified %d tables, %d version records: %d drift, %d left\n", rep.Tables, rep.Versions, len(rep.Drift), rep.Unrepaired())
	return code
}

// prunedSummary is one line for pruned versions: per table and branch,
// how many and the range they span.
func prunedSummary(pruned []repair.Drift) string {
	type chain struct{ table, branch string }
	var order []chain
	spans := map[chain][3]uint64{} // count, lowest, highest
	for _, p := range pruned {
		c := chain{p.Table, p.Branch}
		sp, ok := spans[c]
		if !ok {
			order = append(order, c)
			sp = [3]uint64{0, p.Version, p.Version}
		}
		sp[0]++
		sp[1], sp[2] = min(sp[1], p.Version), max(sp[2], p.Version)
		spans[c] = sp
	}
	var parts []string
	for _, c := range order {
		sp := spans[c]
		name := strconv.Quote(c.table)
		if c.branch != "" {
			name += " branch " + strconv.Quote(c.branch)
		}
		parts = append(parts, fmt.Sprintf("%s: %d versions in %d..%d", name, sp[0], sp[1], sp[2]))
	}
	return strings.Join(parts, "; ")
}

// isTerminal reports whether f (a writer or a reader) is a terminal:
// progress is drawn only there (redirected output and logs get the
// result alone), and a password is asked for only there.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// bar is a progress bar over tables on w, and the callback that moves it.
func bar(w io.Writer, what string) (*progressbar.ProgressBar, repair.Progress) {
	b := progressbar.NewOptions(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what), progressbar.OptionSetVisibility(isTerminal(w)),
		progressbar.OptionShowCount(), progressbar.OptionSetItsString("tables"), progressbar.OptionShowIts(),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	return b, func(done, total int) {
		if total > 0 {
			b.ChangeMax(total)
		}
		_ = b.Set(done)
	}
}

// spinner shows a spinner on w until the returned func is called.
func spinner(w io.Writer, what string) func() {
	b := progressbar.NewOptions(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionSetVisibility(isTerminal(w)), progressbar.OptionSpinnerType(14), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				_ = b.Finish()
				return
			case <-t.C:
				_ = b.Add(1)
			}
		}
	}()
	return func() { close(stop); <-done }
}

// revokeSessions is "admin revoke-sessions": every session of *who
// issued until now ends.
func revokeSessions(who *string, stdout, stderr io.Writer) func(ctx context.Context, d *server.Deps, _ *slog.Logger) int {
	return func(ctx context.Context, d *server.Deps, _ *slog.Logger) int {
		if *who == "" {
			_, _ = fmt.Fprintln(stderr, "flightns admin revoke-sessions: --name is required")
			return 2
		}
		if err := d.RevokeSessions(ctx, *who); err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns admin revoke-sessions: %v\n", err)
			return 1
		}
		_, _ = fmt.Fprintf(stdout, "every session of %q issued until now is revoked\n", *who)
		return 0
	}
}

// parseAdmin parses an admin command's flags; ok false ends the command
// with code (0 after -help).
func parseAdmin(fs *flag.FlagSet, args []string, format *string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if *format != "text" && *format != "json" {
		_, _ = fmt.Fprintf(stderr, "%s: --format %q: want text or json\n", "flightns "+fs.Name(), *format)
		return 2, false
	}
	return 0, true
}

// grantsCmd is "admin grant", "admin revoke-grant" and "admin grants".
func grantsCmd(name string, fs *flag.FlagSet, format *string, stdout, stderr io.Writer) func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
	if name == "grants" {
		fs.StringVar(format, "format", "text", "text (one grant a line) or json")
		return func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
			gs, err := svc.Access().Grants(ctx)
			if err != nil {
				_, _ = fmt.Fprintf(stderr, "flightns admin grants: %v\n", err)
				return 1
			}
			if *format == "json" {
				if gs == nil {
					gs = auth.Grants{}
				}
				_ = json.NewEncoder(stdout).Encode(gs)
				return 0
			}
			for _, g := range gs {
				_, _ = fmt.Fprintln(stdout, g)
			}
			return 0
		}
	}
	g := grantFlags(fs, name == "grant")
	return func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
		grant, err := g()
		if err == nil {
			if name == "grant" {
				err = svc.Access().Grant(ctx, grant)
			} else {
				err = svc.Access().Revoke(ctx, grant)
			}
		}
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns admin %s: %v\n", name, err)
			return 1
		}
		if name == "grant" {
			_, _ = fmt.Fprintf(stdout, "granted %s\n", grant)
		} else {
			_, _ = fmt.Fprintf(stdout, "revoked: %s\n", strings.TrimPrefix(grant.String(), "read "))
		}
		return 0
	}
}

// grantFlags registers the flags of a grant (its role only when role)
// and returns what reads the grant they give.
func grantFlags(fs *flag.FlagSet, role bool) func() (auth.Grant, error) {
	ns := fs.String("namespace", "", "the namespace (empty: the whole catalog)")
	delim := fs.String("delimiter", ".", "joins the names of --namespace")
	who := fs.String("principal", "", "the principal (a user, token, certificate or OIDC subject name)")
	group := fs.String("group", "", "the group (an OIDC group, or one the auth file gives)")
	r := new(string)
	if role {
		r = fs.String("role", "", "read, write or admin")
	}
	return func() (auth.Grant, error) {
		g := auth.Grant{Principal: *who, Group: *group, Role: auth.Read}
		if *ns != "" {
			g.Namespace = strings.Split(*ns, *delim)
		}
		if role {
			var err error
			if g.Role, err = auth.ParseRole(*r); err != nil {
				return g, err
			}
			if g.Role == auth.None {
				return g, errors.New("--role none gives nothing: revoke-grant takes a grant away")
			}
		}
		return g, nil
	}
}

// gcCmd is "admin gc": orphaned staging manifests, a stale writer's
// leftovers in dropped tables' directories, and drops past the retention.
func gcCmd(fs *flag.FlagSet, stdout, stderr io.Writer) func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
	retention := dropRetentionFlag(fs)
	window := fs.Duration("older-than", 24*time.Hour, "safety window: only staging objects older than this are orphans (commits in flight are younger)")
	dry := fs.Bool("dry-run", false, "list the orphans, delete nothing")
	return func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
		if *retention < 0 {
			_, _ = fmt.Fprintln(stderr, "flightns admin gc: --drop-retention must not be negative")
			return 2
		}
		bar, progress := bar(stderr, "scanning tables")
		rep, err := repair.GC(ctx, repair.CatalogOf(svc), *window, *dry, time.Now(), progress)
		_ = bar.Finish()
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns admin gc: %v\n", err)
			return 1
		}
		for _, k := range rep.Orphaned {
			_, _ = fmt.Fprintln(stdout, "orphan:", k)
		}
		for _, k := range rep.Leftovers {
			_, _ = fmt.Fprintln(stdout, "left in a dropped table:", k)
		}
		_, _ = fmt.Fprintf(stdout, "%d tables, %d staging objects, %d orphaned, %d deleted\n", rep.Tables, rep.Staging, len(rep.Orphaned), rep.Deleted)
		_, _ = fmt.Fprintf(stdout, "%d dropped table locations, %d files left in them, %d locations forgotten\n", rep.Dropped, len(rep.Leftovers), rep.Cleared)
		purge, err := svc.Drops().PurgeTrash(ctx, time.Now().Add(-*retention), *dry)
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns admin gc: purging drops: %v\n", err)
			return 1
		}
		for _, id := range purge.Purged {
			_, _ = fmt.Fprintln(stdout, "drop past the retention:", id)
		}
		_, _ = fmt.Fprintf(stdout, "%d drops kept, %d past the retention purged, %d table locations deleted, %d spared (a live table owns them)\n",
			purge.Records, len(purge.Purged), purge.Locations, purge.Spared)
		return 0
	}
}

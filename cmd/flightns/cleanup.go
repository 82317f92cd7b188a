package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/repair"
	"github.com/flightns/flightns/server"
)

// cleanupCmd is "admin cleanup [TABLE…]": a cleanup of the tables named,
// or of every table a retention policy applies to, now.
func cleanupCmd(fs *flag.FlagSet, format *string, stdout, stderr io.Writer) func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
	dry := fs.Bool("dry-run", false, "say what would be deleted; delete nothing")
	olderThan := fs.String("older-than", "", `replace the tables' retention for this run: versions older than this go ("7d", "36h")`)
	retain := fs.Int("retain-versions", 0, "with --older-than: keep at least the last K versions of each branch (default: the tables' own, else 1)")
	delim := fs.String("delimiter", ".", "joins the names of a TABLE")
	fs.StringVar(format, "format", "text", "report format: text (a line per table) or json")
	return func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
		fail := func(err error) int {
			_, _ = fmt.Fprintf(stderr, "flightns admin cleanup: %v\n", err)
			return 1
		}
		if *delim == "" {
			return fail(errors.New("--delimiter must not be empty"))
		}
		var ids []api.ID
		for _, t := range fs.Args() {
			ids = append(ids, strings.Split(t, *delim))
		}
		if len(ids) == 0 {
			// Every table a retention policy reaches (or every table,
			// with --older-than).
			all, err := repair.Tables(ctx, repair.CatalogOf(svc))
			if err != nil {
				return fail(err)
			}
			for _, t := range all {
				id, err := api.ParseID(t.ID, "")
				if err != nil {
					continue
				}
				if _, ok, err := svc.Versions().RetentionOf(ctx, id); err == nil && (ok || *olderThan != "") {
					ids = append(ids, id)
				}
			}
		}
		req := api.CleanupTableRequest{DryRun: *dry, OlderThan: *olderThan}
		if *retain != 0 {
			req.RetainVersions = retain
		}
		type result struct {
			Table string `json:"table"`
			*api.CleanupTableResponse
			Error string `json:"error,omitempty"`
		}
		results := []result{}
		code := 0
		bar, progress := bar(stderr, "cleaning up")
		for i, id := range ids {
			req.ID = id
			resp, err := svc.CleanupTable(ctx, req)
			r := result{Table: id.String(), CleanupTableResponse: resp}
			if err != nil {
				r.Error, code = err.Error(), 1
			}
			results = append(results, r)
			progress(i+1, len(ids))
		}
		_ = bar.Finish()
		if *format == "json" {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(results)
			return code
		}
		for _, r := range results {
			name := strconv.Quote(r.Table)
			switch {
			case r.Error != "":
				_, _ = fmt.Fprintf(stdout, "%s: %s\n", name, r.Error)
			case r.DryRun:
				_, _ = fmt.Fprintf(stdout, "%s: would prune %d versions (keeping %d) and delete %d files (%d bytes)\n",
					name, prunedCount(r.Pruned), r.KeptVersions, r.Files, r.FileBytes)
			default:
				_, _ = fmt.Fprintf(stdout, "%s: pruned %d versions (kept %d), deleted %d objects (%d bytes)\n",
					name, prunedCount(r.Pruned), r.KeptVersions, r.FilesDeleted, r.BytesDeleted)
			}
		}
		if len(results) == 0 {
			_, _ = fmt.Fprintln(stdout, "no table has a retention policy (set "+namespace.PropCleanupOlderThan+", or give --older-than)")
		}
		return code
	}
}

// prunedCount counts the versions of every branch.
func prunedCount(pruned map[string][]uint64) int {
	n := 0
	for _, vs := range pruned {
		n += len(vs)
	}
	return n
}

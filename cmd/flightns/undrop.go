package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/server"
)

// undropCmd is "admin undrop": put a dropped table or namespace back.
func undropCmd(fs *flag.FlagSet, stdout, stderr io.Writer) func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
	table := fs.String("table", "", "the dropped table (names joined by --delimiter)")
	ns := fs.String("namespace", "", "the dropped namespace (names joined by --delimiter)")
	delim := fs.String("delimiter", ".", "joins the names of --table and --namespace")
	dropID := fs.String("drop-id", "", "which drop of it (admin dropped lists them; default: the newest)")
	return func(ctx context.Context, svc *namespace.Service, _ *server.Deps) int {
		var resp *api.UndropResponse
		var err error
		switch {
		case (*table == "") == (*ns == ""):
			err = errors.New("name one of --table and --namespace")
		case *delim == "":
			err = errors.New("--delimiter must not be empty")
		case *table != "":
			resp, err = svc.Drops().UndropTable(ctx, api.UndropTableRequest{ID: strings.Split(*table, *delim), DropID: *dropID})
		default:
			resp, err = svc.Drops().UndropNamespace(ctx, api.UndropNamespaceRequest{ID: strings.Split(*ns, *delim), DropID: *dropID})
		}
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns admin undrop: %v\n", err)
			return 1
		}
		_, _ = fmt.Fprintf(stdout, "undropped %s: %d namespaces, %d tables\n", resp.DropID, len(resp.Namespaces), len(resp.Tables))
		return 0
	}
}

// droppedCmd is "admin dropped": the drops kept recoverable.
func droppedCmd(format *string, retention *time.Duration, stdout, stderr io.Writer) func(ctx context.Context, svc *namespace.Service, d *server.Deps) int {
	return func(ctx context.Context, _ *namespace.Service, d *server.Deps) int {
		all, err := namespace.ListTrash(ctx, d.Store)
		if err != nil {
			_, _ = fmt.Fprintf(stderr, "flightns admin dropped: %v\n", err)
			return 1
		}
		if *format == "json" {
			if all == nil {
				all = []namespace.Trash{}
			}
			_ = json.NewEncoder(stdout).Encode(all)
			return 0
		}
		for _, t := range all {
			_, _ = fmt.Fprintf(stdout, "%s  %-9s %s  dropped %s, purged after %s, %d objects\n", t.DropID, t.Type, api.ID(t.ID).String(),
				t.DroppedAt.Format(time.RFC3339), t.DroppedAt.Add(*retention).Format(time.RFC3339), len(t.Rows))
		}
		return 0
	}
}

// dropRetentionFlag registers --drop-retention, as serve has it.
func dropRetentionFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("drop-retention", envDuration("FLIGHTNS_DROP_RETENTION", server.DefaultDropRetention),
		"how long a drop stays recoverable (admin undrop) before gc purges it; 0: drops delete at once [$FLIGHTNS_DROP_RETENTION]")
}

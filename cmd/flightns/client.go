package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/client"
	"github.com/flightns/flightns/nserror"
)

// clientFlags say how to reach and authenticate to a running server.
type clientFlags struct {
	flightAddr string
	restURL    string
	token      string
	user       string
	password   string
	tls        bool
	skipVerify bool
	timeout    time.Duration
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.flightAddr, "flight", envOr("FLIGHTNS_FLIGHT", "127.0.0.1:31337"), "Flight SQL address of the server [$FLIGHTNS_FLIGHT]")
	fs.StringVar(&c.restURL, "rest", envOr("FLIGHTNS_REST", client.DefaultURL), "REST URL of the server [$FLIGHTNS_REST]")
	fs.StringVar(&c.token, "token", os.Getenv("FLIGHTNS_TOKEN"), "bearer token [$FLIGHTNS_TOKEN]")
	fs.StringVar(&c.user, "user", os.Getenv("FLIGHTNS_USER"), "user name for basic authentication [$FLIGHTNS_USER]")
	fs.StringVar(&c.password, "password", os.Getenv("FLIGHTNS_PASSWORD"), "password for basic authentication [$FLIGHTNS_PASSWORD]")
	fs.BoolVar(&c.tls, "tls", false, "connect to Flight with TLS (REST: use an https:// URL)")
	fs.BoolVar(&c.skipVerify, "tls-skip-verify", false, "do not verify the server's certificate (testing only)")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "give up after this long")
}

const nsUsage = `Usage: flightns ns <op> [flags] [ID]

Namespaces of a running server, over its Lance Namespace REST surface.
An ID is its names joined by --delimiter (default "."); none is the root.

Ops:
  list [ID]                    the namespaces directly inside ID
  create ID [--property k=v]   create a namespace
  describe ID                  its properties (JSON)
  drop ID [--cascade]          drop it (--cascade: with everything inside)
`

const tableUsage = `Usage: flightns table <op> [flags] ID

Tables of a running server, over its Lance Namespace REST surface.
An ID is its names joined by --delimiter (default ".").

Ops:
  list [NS]                    the tables directly inside namespace NS
  describe ID                  location, properties and latest version (JSON)
  declare ID [--location L]    declare a table (a location, no data yet)
  versions ID                  its versions, newest first
  drop ID                      forget it and delete its data
  deregister ID                forget it; its data stays
`

// parseInterleaved parses flags that may come before or after the
// positional arguments, which it returns; code is the exit code when
// parsing ends the command (help: 0, a bad flag: 2), else -1.
func parseInterleaved(fs *flag.FlagSet, args []string) (pos []string, code int) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0
			}
			return nil, 2
		}
		if fs.NArg() == 0 {
			return pos, -1
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// kvFlag collects repeated k=v flags.
type kvFlag map[string]string

func (k kvFlag) String() string { return fmt.Sprint(map[string]string(k)) }
func (k kvFlag) Set(s string) error {
	key, v, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("%q is not key=value", s)
	}
	k[key] = v
	return nil
}

// restOp is one REST operation of the ns and table commands: it runs on
// the object id (nil: the root) with the client and prints the reply.
type restOp struct {
	idReq bool
	run   func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error
}

func nsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	props := kvFlag{}
	cascade := false
	ops := map[string]restOp{
		"list": {run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			r, err := c.ListNamespaces(ctx, api.ListNamespacesRequest{ID: id})
			if err != nil {
				return err
			}
			return printNames(out, r.Namespaces)
		}},
		"create": {idReq: true, run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			return printJSON(out)(c.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: id, Properties: api.Properties(props)}))
		}},
		"describe": {idReq: true, run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			return printJSON(out)(c.DescribeNamespace(ctx, api.DescribeNamespaceRequest{ID: id}))
		}},
		"drop": {idReq: true, run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			req := api.DropNamespaceRequest{ID: id}
			if cascade {
				req.Behavior = api.BehaviorCascade
			}
			return printJSON(out)(c.DropNamespace(ctx, req))
		}},
	}
	return restCmd(ctx, "ns", nsUsage, ops, args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.Var(props, "property", "a property key=value (repeatable; create)")
		fs.BoolVar(&cascade, "cascade", false, "drop everything inside too (drop)")
	})
}

func tableCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	location := ""
	descending := true
	ops := map[string]restOp{
		"list": {run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			r, err := c.ListTables(ctx, api.ListTablesRequest{ID: id})
			if err != nil {
				return err
			}
			return printNames(out, r.Tables)
		}},
		"describe": {idReq: true, run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			return printJSON(out)(c.DescribeTable(ctx, api.DescribeTableRequest{ID: id}))
		}},
		"declare": {idReq: true, run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			return printJSON(out)(c.DeclareTable(ctx, api.DeclareTableRequest{ID: id, Location: location}))
		}},
		"versions": {idReq: true, run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			r, err := c.ListTableVersions(ctx, api.ListTableVersionsRequest{ID: id, Descending: &descending})
			if err != nil {
				return err
			}
			printVersions(out, r.Versions)
			return nil
		}},
		"drop": {idReq: true, run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			return printJSON(out)(c.DropTable(ctx, api.DropTableRequest{ID: id}))
		}},
		"deregister": {idReq: true, run: func(ctx context.Context, c *client.Client, id api.ID, out io.Writer) error {
			return printJSON(out)(c.DeregisterTable(ctx, api.DeregisterTableRequest{ID: id}))
		}},
	}
	return restCmd(ctx, "table", tableUsage, ops, args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&location, "location", "", "the table's directory, inside the catalog root (declare; default: chosen by the server)")
	})
}

func restCmd(ctx context.Context, name, usage string, ops map[string]restOp, args []string, stdout, stderr io.Writer, extra func(*flag.FlagSet)) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		_, _ = fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	op, ok := ops[args[0]]
	if !ok {
		_, _ = fmt.Fprintf(stderr, "flightns %s: unknown op %q\n\n%s", name, args[0], usage)
		return 2
	}
	fs := flag.NewFlagSet(name+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clientFlags
	cf.register(fs)
	delim := fs.String("delimiter", ".", "joins the names of an ID")
	extra(fs)
	pos, code := parseInterleaved(fs, args[1:])
	if code >= 0 {
		return code
	}
	if len(pos) > 1 || (op.idReq && len(pos) == 0) {
		_, _ = fmt.Fprint(stderr, usage)
		return 2
	}
	var id api.ID
	if len(pos) == 1 && pos[0] != "" {
		id = strings.Split(pos[0], *delim)
	}
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	c, err := client.New(client.Config{URL: cf.restURL, Token: cf.token, User: cf.user, Password: cf.password, InsecureSkipVerify: cf.skipVerify})
	if err == nil {
		err = op.run(ctx, c, id, stdout)
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns %s %s: %v\n", name, args[0], describe(err))
		return 1
	}
	return 0
}

// describe is an error of the client as the CLI prints it: a Lance
// Namespace error with its code and HTTP status.
func describe(err error) string {
	var ne *nserror.Error
	var se *client.StatusError
	if errors.As(err, &ne) && errors.As(err, &se) {
		return fmt.Sprintf("%s (code %d, HTTP %d)", ne.Message, int(ne.Code), se.StatusCode)
	}
	return err.Error()
}

// printJSON prints the reply of a call, as indented JSON, or its error.
func printJSON(out io.Writer) func(reply any, err error) error {
	return func(reply any, err error) error {
		if err != nil {
			return err
		}
		b, err := json.MarshalIndent(reply, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
}

// printNames prints names, one a line.
func printNames(out io.Writer, names []string) error {
	for _, n := range names {
		if _, err := fmt.Fprintln(out, n); err != nil {
			return err
		}
	}
	return nil
}

// printVersions prints versions as a table.
func printVersions(out io.Writer, versions []api.TableVersion) {
	var rows [][]string
	for _, v := range versions {
		size, at := "", ""
		if v.ManifestSize != nil {
			size = fmt.Sprint(*v.ManifestSize)
		}
		if v.TimestampMillis != nil {
			at = time.UnixMilli(*v.TimestampMillis).UTC().Format(time.RFC3339)
		}
		rows = append(rows, []string{fmt.Sprint(v.Version), at, size, v.ManifestPath})
	}
	printTable(out, []string{"version", "committed_at", "size", "manifest_path"}, rows)
}

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/flightns/flightns/internal/console"
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
	fs.StringVar(&c.restURL, "rest", envOr("FLIGHTNS_REST", "http://127.0.0.1:31338"), "REST URL of the server [$FLIGHTNS_REST]")
	fs.StringVar(&c.token, "token", os.Getenv("FLIGHTNS_TOKEN"), "bearer token [$FLIGHTNS_TOKEN]")
	fs.StringVar(&c.user, "user", os.Getenv("FLIGHTNS_USER"), "user name for basic authentication [$FLIGHTNS_USER]")
	fs.StringVar(&c.password, "password", os.Getenv("FLIGHTNS_PASSWORD"), "password for basic authentication [$FLIGHTNS_PASSWORD]")
	fs.BoolVar(&c.tls, "tls", false, "connect to Flight with TLS (REST: use an https:// URL)")
	fs.BoolVar(&c.skipVerify, "tls-skip-verify", false, "do not verify the server's certificate (testing only)")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "give up after this long")
}

// authHeader is the Authorization header value, or "" without credentials.
func (c *clientFlags) authHeader() string {
	switch {
	case c.token != "":
		return "Bearer " + c.token
	case c.user != "":
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.user+":"+c.password))
	}
	return ""
}

func queryCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		_, _ = fmt.Fprint(stderr, "Usage: flightns query [flags] \"<SQL>\"\n\nRuns one read-only SQL statement over the catalog (__manifest, namespaces, tables,\ntable_versions, …) of a running server through Flight SQL.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.register(fs)
	format := fs.String("format", "table", "output: table (aligned text), csv, json (an array of objects) or arrow (an Arrow IPC stream)")
	pos, code := parseInterleaved(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	switch *format {
	case "table", "csv", "json", "arrow":
	default:
		_, _ = fmt.Fprintf(stderr, "flightns query: --format %q: want table, csv, json or arrow\n", *format)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	if err := runQuery(ctx, cf, pos[0], *format, stdout); err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns query: %v\n", err)
		return 1
	}
	return 0
}

func runQuery(ctx context.Context, cf clientFlags, sql, format string, out io.Writer) error {
	creds := insecure.NewCredentials()
	if cf.tls {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: cf.skipVerify})
	}
	c, err := flightsql.NewClient(cf.flightAddr, nil, nil, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	switch {
	case cf.token != "":
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+cf.token)
	case cf.user != "":
		if ctx, err = c.Client.AuthenticateBasicToken(ctx, cf.user, cf.password); err != nil {
			return fmt.Errorf("authenticating as %s: %w", cf.user, err)
		}
	}
	info, err := c.Execute(ctx, sql)
	if err != nil {
		return err
	}
	w := newResultWriter(format, out)
	for _, ep := range info.Endpoint {
		rdr, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			return err
		}
		for rdr.Next() {
			if err := w.write(rdr.RecordBatch()); err != nil {
				rdr.Release()
				return err
			}
		}
		err = rdr.Err()
		if w.schema == nil {
			w.schema = rdr.Schema()
		}
		rdr.Release()
		if err != nil {
			return err
		}
	}
	return w.close()
}

// resultWriter writes record batches in one of the output formats.
type resultWriter struct {
	format string
	out    io.Writer
	schema *arrow.Schema

	rows  [][]string         // table: every cell, to align the columns
	csv   *console.CSVWriter // formulas neutralized
	json  int                // json: objects written
	arrow *ipc.Writer
}

func newResultWriter(format string, out io.Writer) *resultWriter {
	return &resultWriter{format: format, out: out}
}

func (w *resultWriter) write(rec arrow.RecordBatch) error {
	if w.schema == nil {
		w.schema = rec.Schema()
	}
	switch w.format {
	case "arrow":
		if w.arrow == nil {
			w.arrow = ipc.NewWriter(w.out, ipc.WithSchema(rec.Schema()))
		}
		return w.arrow.Write(rec)
	case "csv":
		if w.csv == nil {
			w.csv = console.NewCSVWriter(w.out, rec.Schema())
		}
		return w.csv.Write(rec)
	case "json":
		for i := 0; i < int(rec.NumRows()); i++ {
			obj := make(map[string]any, rec.NumCols())
			for j, f := range rec.Schema().Fields() {
				obj[f.Name] = rec.Column(j).GetOneForMarshal(i)
			}
			b, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			sep := ",\n "
			if w.json == 0 {
				sep = "["
			}
			w.json++
			if _, err := fmt.Fprintf(w.out, "%s%s", sep, b); err != nil {
				return err
			}
		}
	default:
		for i := 0; i < int(rec.NumRows()); i++ {
			w.rows = append(w.rows, rowStrings(rec, i))
		}
	}
	return nil
}

func (w *resultWriter) close() error {
	switch w.format {
	case "arrow":
		if w.arrow == nil {
			if w.schema == nil {
				return nil
			}
			w.arrow = ipc.NewWriter(w.out, ipc.WithSchema(w.schema))
		}
		return w.arrow.Close()
	case "csv":
		if w.csv == nil {
			if w.schema == nil {
				return nil
			}
			w.csv = console.NewCSVWriter(w.out, w.schema)
		}
		return w.csv.Flush()
	case "json":
		if w.json == 0 {
			_, err := fmt.Fprintln(w.out, "[]")
			return err
		}
		_, err := fmt.Fprintln(w.out, "]")
		return err
	}
	var head []string
	if w.schema != nil {
		head = fieldNames(w.schema)
	}
	printTable(w.out, head, w.rows)
	_, err := fmt.Fprintf(w.out, "(%d rows)\n", len(w.rows))
	return err
}

func fieldNames(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}

func rowStrings(rec arrow.RecordBatch, i int) []string {
	out := make([]string, rec.NumCols())
	for j := range out {
		col := rec.Column(j)
		if col.IsNull(i) {
			out[j] = "NULL"
		} else {
			out[j] = col.ValueStr(i)
		}
	}
	return out
}

// printTable prints an aligned table with a header rule.
func printTable(out io.Writer, head []string, rows [][]string) {
	width := make([]int, len(head))
	for j, h := range head {
		width[j] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for j, c := range r {
			if j < len(width) {
				width[j] = max(width[j], utf8.RuneCountInString(c))
			}
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for j, c := range cells {
			if j > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(c)
			if j < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", width[j]-utf8.RuneCountInString(c)))
			}
		}
		_, _ = fmt.Fprintln(out, b.String())
	}
	line(head)
	rule := make([]string, len(head))
	for j := range rule {
		rule[j] = strings.Repeat("-", width[j])
	}
	_, _ = fmt.Fprintln(out, strings.Join(rule, "-+-"))
	for _, r := range rows {
		line(r)
	}
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

// restOp is one REST operation of the ns and table commands.
type restOp struct {
	path  string // "namespace/{id}/create"
	body  func() any
	print func(out io.Writer, reply []byte) error
	idReq bool
}

func nsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	props := kvFlag{}
	cascade := false
	ops := map[string]restOp{
		"list": {path: "namespace/{id}/list", print: printList("namespaces")},
		"create": {path: "namespace/{id}/create", idReq: true, body: func() any {
			return map[string]any{"properties": map[string]string(props)}
		}},
		"describe": {path: "namespace/{id}/describe", idReq: true},
		"drop": {path: "namespace/{id}/drop", idReq: true, body: func() any {
			if cascade {
				return map[string]any{"behavior": "Cascade"}
			}
			return map[string]any{}
		}},
	}
	return restCmd(ctx, "ns", nsUsage, ops, args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.Var(props, "property", "a property key=value (repeatable; create)")
		fs.BoolVar(&cascade, "cascade", false, "drop everything inside too (drop)")
	})
}

func tableCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	location := ""
	ops := map[string]restOp{
		"list":     {path: "namespace/{id}/table/list", print: printList("tables")},
		"describe": {path: "table/{id}/describe", idReq: true},
		"declare": {path: "table/{id}/declare", idReq: true, body: func() any {
			if location != "" {
				return map[string]any{"location": location}
			}
			return map[string]any{}
		}},
		"versions":   {path: "table/{id}/version/list", idReq: true, body: func() any { return map[string]any{"descending": true} }, print: printVersions},
		"drop":       {path: "table/{id}/drop", idReq: true},
		"deregister": {path: "table/{id}/deregister", idReq: true},
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
	var names []string
	if len(pos) == 1 && pos[0] != "" {
		names = strings.Split(pos[0], *delim)
	}
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	reply, err := restDo(ctx, cf, op, names)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns %s %s: %v\n", name, args[0], err)
		return 1
	}
	pr := op.print
	if pr == nil {
		pr = printJSON
	}
	if err := pr(stdout, reply); err != nil {
		_, _ = fmt.Fprintf(stderr, "flightns %s %s: %v\n", name, args[0], err)
		return 1
	}
	return 0
}

// restDo posts the operation and returns the reply body; an error reply
// becomes an error naming its Lance Namespace code.
func restDo(ctx context.Context, cf clientFlags, op restOp, names []string) ([]byte, error) {
	id := "$" // the root: the delimiter alone
	if len(names) > 0 {
		id = strings.Join(names, "$")
	}
	u := strings.TrimSuffix(cf.restURL, "/") + "/v1/" + strings.Replace(op.path, "{id}", url.PathEscape(id), 1)
	var body any = map[string]any{}
	if op.body != nil {
		body = op.body()
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if h := cf.authHeader(); h != "" {
		req.Header.Set("Authorization", h)
	}
	hc := http.DefaultClient
	if cf.skipVerify {
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
			Code  *int   `json:"code"`
		}
		if json.Unmarshal(reply, &e) == nil && e.Code != nil {
			return nil, fmt.Errorf("%s (code %d, HTTP %d)", e.Error, *e.Code, resp.StatusCode)
		}
		return nil, fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(reply))
	}
	return reply, nil
}

func printJSON(out io.Writer, reply []byte) error {
	if len(bytes.TrimSpace(reply)) == 0 {
		_, err := fmt.Fprintln(out, "ok")
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, reply, "", "  "); err != nil {
		_, err = out.Write(reply)
		return err
	}
	buf.WriteByte('\n')
	_, err := buf.WriteTo(out)
	return err
}

// printList prints the names of a list reply's field, one a line.
func printList(field string) func(io.Writer, []byte) error {
	return func(out io.Writer, reply []byte) error {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(reply, &m); err != nil {
			return err
		}
		var names []string
		if raw, ok := m[field]; ok {
			if err := json.Unmarshal(raw, &names); err != nil {
				return err
			}
		}
		for _, n := range names {
			if _, err := fmt.Fprintln(out, n); err != nil {
				return err
			}
		}
		return nil
	}
}

// printVersions prints a version list as a table.
func printVersions(out io.Writer, reply []byte) error {
	var r struct {
		Versions []struct {
			Version         int64  `json:"version"`
			ManifestPath    string `json:"manifest_path"`
			ManifestSize    *int64 `json:"manifest_size"`
			TimestampMillis *int64 `json:"timestamp_millis"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(reply, &r); err != nil {
		return err
	}
	var rows [][]string
	for _, v := range r.Versions {
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
	return nil
}

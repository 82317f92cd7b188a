package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
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

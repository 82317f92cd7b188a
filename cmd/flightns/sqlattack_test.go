package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/nserror"
)

// The SQL attacks of issue 14, as an outside attacker holding a read-role
// token tries them against the real server binary, on every SQL path:
// GetFlightInfo (Execute) and DoGet, GetSchema, prepared statements with
// and without parameters, DoPut (ExecuteUpdate) and `flightns query`.
// After every attempt the refusal is checked (gRPC code and the Lance code
// in its ErrorInfo, a message naming the statement), and so is everything
// an attack could have changed: the __manifest rows, the files under the
// catalog root, and the SQL engine's own objects and settings as a query
// sees them; then an ordinary query must work. One server serves all of
// it; it is restarted only where the restart is the point.

const (
	attackReadToken  = "sqlattack-read-token"
	attackWriteToken = "sqlattack-write-token"
	// prompt is how long a request that must not wait for an attacker's
	// leftovers may take (the issue saw 10 s and 20 s).
	prompt = 3 * time.Second
	// queryLimit bounds every query of the test's own (they are tiny): a
	// server that stopped answering fails the test, it does not hang it.
	queryLimit = 10 * time.Second
)

// The SQL paths an attacker has.
const (
	pathExecute        = "execute"         // GetFlightInfo(CommandStatementQuery), then DoGet
	pathSchema         = "schema"          // GetSchema(CommandStatementQuery)
	pathPrepared       = "prepared"        // CreatePreparedStatement, then GetFlightInfo and DoGet
	pathPreparedParams = "prepared-params" // the same with a parameter bound by DoPut
	pathUpdate         = "update"          // DoPut(CommandStatementUpdate)
	pathCLI            = "cli"             // flightns query
)

var allPaths = []string{pathExecute, pathSchema, pathPrepared, pathPreparedParams, pathUpdate, pathCLI}

// attackEnv is one flightns server with an auth file, the catalog the
// test built on it (its model), and clients.
type attackEnv struct {
	top  *testing.T // the server and its clients live as long as the whole test
	work string
	args []string
	s    *serverProc
	fc   *flightsql.Client

	namespaces map[string]bool
	tables     map[string]string   // id -> location
	versions   map[string][]uint64 // table id -> committed versions
	history    map[string]bool     // every object id that ever legitimately existed
	engine0    []string            // the engine's objects and settings on a fresh server
	broken     string              // why the server is no longer usable ("": it is)
}

func newAttackEnv(t *testing.T) *attackEnv {
	t.Helper()
	work := t.TempDir()
	authFile := filepath.Join(work, "auth.json")
	auth := fmt.Sprintf(`{"tokens":[{"token":%q,"name":"attacker","role":"read"},{"token":%q,"name":"etl","role":"write"}]}`,
		attackReadToken, attackWriteToken)
	if err := os.WriteFile(authFile, []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &attackEnv{top: t, work: work, args: []string{"--auth-file", authFile},
		namespaces: map[string]bool{}, tables: map[string]string{}, versions: map[string][]uint64{}, history: map[string]bool{}}
	e.start(t)
	return e
}

// start runs the server (again) and connects a Flight SQL client; both
// belong to the whole test, not to the subtest that (re)starts them.
func (e *attackEnv) start(t *testing.T) {
	t.Helper()
	e.s = startServer(e.top, e.work, nil, e.args...)
	fc, err := flightsql.NewClient(e.s.flight, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	e.fc = fc
	e.top.Cleanup(func() { _ = fc.Close() })
}

// stop stops the server with SIGTERM; it must exit cleanly within limit.
func (e *attackEnv) stop(t *testing.T, limit time.Duration) {
	t.Helper()
	_ = e.fc.Close()
	start := time.Now()
	e.s.stop()
	if took := time.Since(start); took > limit {
		t.Errorf("shutdown took %v, want at most %v", took.Round(time.Millisecond), limit)
	}
}

func (e *attackEnv) root() string { return filepath.Join(e.work, "flightns-data", "root") }

// readCtx is a context carrying the attacker's read-role token.
func readCtx(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+attackReadToken), cancel
}

// rest posts body to path with the write-role token and returns the HTTP
// status, the body and how long the answer took.
func (e *attackEnv) rest(t *testing.T, path, body string) (int, []byte, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+e.s.rest+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+attackWriteToken)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, time.Since(start)
}

// mustRest is rest that requires 200 within limit (0: any time).
func (e *attackEnv) mustRest(t *testing.T, path, body string, limit time.Duration) []byte {
	t.Helper()
	code, b, took := e.rest(t, path, body)
	if code != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d %s", path, code, b)
	}
	if limit > 0 && took > limit {
		t.Errorf("POST %s took %v, want at most %v", path, took.Round(time.Millisecond), limit)
	}
	return b
}

func (e *attackEnv) createNamespace(t *testing.T, id string, limit time.Duration) {
	t.Helper()
	e.mustRest(t, "/v1/namespace/"+id+"/create", `{}`, limit)
	e.namespaces[id] = true
	e.history[id] = true
}

func (e *attackEnv) declare(t *testing.T, id string) {
	t.Helper()
	var d struct{ Location string }
	if err := json.Unmarshal(e.mustRest(t, "/v1/table/"+id+"/declare", `{}`, 0), &d); err != nil || d.Location == "" {
		t.Fatalf("declare %s: %q %v", id, d.Location, err)
	}
	e.tables[id] = d.Location
	e.history[id] = true
}

func (e *attackEnv) commit(t *testing.T, id string, v uint64) {
	t.Helper()
	content := fmt.Sprintf("manifest %s v%d", id, v)
	p := stageVersion(t, e.tables[id], v, content)
	e.mustRest(t, "/v1/table/"+id+"/version/create", fmt.Sprintf(`{"version":%d,"manifest_path":%q,"manifest_size":%d}`, v, p, len(content)), 0)
	e.versions[id] = append(e.versions[id], v)
}

// rename renames table id (a$b$c) to newName in its namespace, over REST.
func (e *attackEnv) rename(t *testing.T, id, newName string, limit time.Duration) {
	t.Helper()
	e.mustRest(t, "/v1/table/"+id+"/rename", fmt.Sprintf(`{"new_table_name":%q}`, newName), limit)
	newID := id[:strings.LastIndexByte(id, '$')+1] + newName
	e.tables[newID] = e.tables[id]
	e.versions[newID] = e.versions[id]
	delete(e.tables, id)
	delete(e.versions, id)
	e.history[newID] = true
}

func (e *attackEnv) seed(t *testing.T) {
	t.Helper()
	for _, ns := range []string{"prod", "prod$sales", "other"} {
		e.createNamespace(t, ns, 0)
	}
	for id, n := range map[string]uint64{"prod$sales$orders": 3, "prod$sales$victim": 2, "prod$sales$second": 1, "other$t": 1} {
		e.declare(t, id)
		for v := uint64(1); v <= n; v++ {
			e.commit(t, id, v)
		}
	}
}

// query runs sql over Flight SQL as the attacker (GetFlightInfo, DoGet of
// every endpoint) and returns its rows, each row's cells joined by "|",
// and the catalog sequence the server named.
func (e *attackEnv) query(sql string) ([]string, string, error) {
	ctx, cancel := readCtx(queryLimit)
	defer cancel()
	info, err := e.fc.Execute(ctx, sql)
	if err != nil {
		return nil, "", err
	}
	return e.fetch(ctx, info)
}

// fetch reads every endpoint of info.
func (e *attackEnv) fetch(ctx context.Context, info *flight.FlightInfo) ([]string, string, error) {
	var rows []string
	seq := ""
	for _, ep := range info.Endpoint {
		stream, err := e.fc.Client.DoGet(ctx, ep.Ticket)
		if err != nil {
			return rows, seq, err
		}
		rdr, err := flight.NewRecordReader(stream)
		if err != nil {
			return rows, seq, err
		}
		if md, err := stream.Header(); err == nil && len(md.Get(flightserver.SeqHeader)) > 0 {
			seq = md.Get(flightserver.SeqHeader)[0]
		}
		for rdr.Next() {
			rows = append(rows, recordRows(rdr.RecordBatch())...)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return rows, seq, err
		}
	}
	return rows, seq, nil
}

func recordRows(rec arrow.RecordBatch) []string {
	out := make([]string, rec.NumRows())
	for i := range out {
		cells := make([]string, rec.NumCols())
		for c := range cells {
			cells[c] = rec.Column(c).ValueStr(i)
		}
		out[i] = strings.Join(cells, "|")
	}
	return out
}

// mustQuery is query that must succeed.
func (e *attackEnv) mustQuery(t *testing.T, sql string) []string {
	t.Helper()
	rows, _, err := e.query(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// catalogState is everything an attack could change.
type catalogState struct {
	manifest []string // SELECT * FROM __manifest ORDER BY ALL
	files    []string // every file under the catalog root: path, size, sha256
	engine   []string // the SQL engine's objects and settings
}

// engineQueries list what the SQL engine holds, as any query sees it.
var engineQueries = []struct{ label, sql string }{
	{"table", `SELECT database_name, schema_name, table_name FROM duckdb_tables() ORDER BY ALL`},
	{"view", `SELECT database_name, schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY ALL`},
	{"macro", `SELECT database_name, schema_name, function_name, function_type, macro_definition FROM duckdb_functions() WHERE function_type LIKE '%macro%' AND NOT internal ORDER BY ALL`},
	{"database", `SELECT database_name, path, type, readonly FROM duckdb_databases() ORDER BY ALL`},
	{"schema", `SELECT database_name, schema_name FROM duckdb_schemas() WHERE NOT internal ORDER BY ALL`},
	{"sequence", `SELECT database_name, schema_name, sequence_name FROM duckdb_sequences() ORDER BY ALL`},
	{"type", `SELECT database_name, schema_name, type_name FROM duckdb_types() WHERE NOT internal ORDER BY ALL`},
	{"setting", `SELECT name, value FROM duckdb_settings() WHERE name IN ('threads', 'memory_limit', 'enable_external_access', 'lock_configuration', 'max_temp_directory_size', 'temp_directory', 'autoload_known_extensions', 'autoinstall_known_extensions', 'allow_community_extensions', 'default_order', 'search_path') ORDER BY ALL`},
}

func (e *attackEnv) capture(t *testing.T) catalogState {
	t.Helper()
	var st catalogState
	rows, _, err := e.query(`SELECT * FROM __manifest ORDER BY ALL`)
	if err != nil {
		rows = append(rows, "ERROR reading __manifest: "+err.Error())
	}
	st.manifest = rows
	for _, q := range engineQueries {
		rows, _, err := e.query(q.sql)
		if err != nil {
			st.engine = append(st.engine, q.label+": ERROR "+err.Error())
			if c := status.Code(err); c == codes.DeadlineExceeded || c == codes.Unavailable {
				break // the server does not answer: one error says it
			}
			continue
		}
		for _, r := range rows {
			st.engine = append(st.engine, q.label+": "+r)
		}
	}
	st.files = listFiles(t, e.root())
	return st
}

// listFiles lists every file under dir with its size and content hash.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while listed (compaction prunes segments)
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		out = append(out, fmt.Sprintf("%s %d %s", rel, len(b), hex.EncodeToString(sum[:8])))
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	sort.Strings(out)
	return out
}

// diffLines describes how got differs from want ("" when equal): the
// lines added (+) and removed (-), at most 20 of each shown.
func diffLines(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	count := func(lines []string) map[string]int {
		m := map[string]int{}
		for _, s := range lines {
			m[s]++
		}
		return m
	}
	w, g := count(want), count(got)
	var b strings.Builder
	show := func(sign string, lines []string, have, other map[string]int) {
		n := 0
		for _, s := range lines {
			if have[s] > other[s] {
				have[s]--
				if n < 20 {
					fmt.Fprintf(&b, "\n  %s %s", sign, s)
				}
				n++
			}
		}
		if n > 20 {
			fmt.Fprintf(&b, "\n  %s … %d more", sign, n-20)
		}
	}
	show("+", got, count(got), w)
	show("-", want, count(want), g)
	if b.Len() == 0 {
		return "\n  (same lines, another order)"
	}
	return b.String()
}

// linesWithPrefix is the lines of lines that start with prefix.
func linesWithPrefix(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// assertUnchanged checks that nothing changed since before and that an
// ordinary query works.
func (e *attackEnv) assertUnchanged(t *testing.T, before catalogState, after string) {
	t.Helper()
	now := e.capture(t)
	if d := diffLines(before.manifest, now.manifest); d != "" {
		t.Errorf("after %s the __manifest rows changed:%s", after, d)
	}
	if d := diffLines(before.files, now.files); d != "" {
		t.Errorf("after %s the files under the catalog root changed:%s", after, d)
	}
	if d := diffLines(before.engine, now.engine); d != "" {
		t.Errorf("after %s the SQL engine's objects or settings changed:%s", after, d)
	}
	e.assertOrdinaryQuery(t, after)
}

// assertOrdinaryQuery runs a query that reads __manifest and a view, and
// compares it with the model of the catalog.
func (e *attackEnv) assertOrdinaryQuery(t *testing.T, after string) {
	t.Helper()
	rows, took, err := e.promptQuery(`SELECT (SELECT count(*) FROM tables) AS tables, (SELECT count(*) FROM namespaces) AS namespaces, 41 + 1 AS answer`)
	if err != nil {
		t.Errorf("after %s an ordinary query fails: %v", after, err)
		return
	}
	if took > prompt {
		t.Errorf("after %s an ordinary query took %v, three times in a row", after, took.Round(time.Millisecond))
	}
	want := fmt.Sprintf("%d|%d|42", len(e.tables), len(e.namespaces))
	if len(rows) != 1 || rows[0] != want {
		t.Errorf("after %s an ordinary query returned %q, want %q", after, rows, want)
	}
}

// promptQuery runs sql until it answers within prompt, three times at
// most, and returns the last answer and how long it took. An attacker's
// leftover that holds the engine slows every try; a machine busy with
// something else for a moment slows one.
func (e *attackEnv) promptQuery(sql string) ([]string, time.Duration, error) {
	var rows []string
	var took time.Duration
	var err error
	for range 3 {
		start := time.Now()
		rows, _, err = e.query(sql)
		if took = time.Since(start); err != nil || took <= prompt {
			break
		}
	}
	return rows, took, err
}

// modelLines is the (object_type, object_id, table_version) of every row
// __manifest must hold, as the test made the catalog.
func (e *attackEnv) modelLines() []string {
	var out []string
	for ns := range e.namespaces {
		out = append(out, "namespace|"+ns+"|(null)")
	}
	for id := range e.tables {
		out = append(out, "table|"+id+"|(null)")
		for _, v := range e.versions[id] {
			out = append(out, "table_version|"+id+"|"+strconv.FormatUint(v, 10))
		}
	}
	sort.Strings(out)
	return out
}

// assertModel checks that __manifest holds exactly the rows the test made
// (nothing forged, nothing lost), that no row names a forged manifest, and
// that time travel at the current sequence agrees with __manifest.
func (e *attackEnv) assertModel(t *testing.T, after string) {
	t.Helper()
	// A failed query ends the check (the next ones would only wait too).
	query := func(sql string) ([]string, string, bool) {
		t.Helper()
		rows, seq, err := e.query(sql)
		if err != nil {
			t.Errorf("after %s: %s: %v", after, sql, err)
			return nil, "", false
		}
		return rows, seq, true
	}
	got, _, ok := query(`SELECT object_type, object_id, table_version FROM __manifest`)
	if !ok {
		return
	}
	sort.Strings(got)
	if d := diffLines(e.modelLines(), got); d != "" {
		t.Errorf("after %s __manifest is not the catalog the test made:%s", after, d)
	}
	rows, _, ok := query(`SELECT object_id, table_version, manifest_path FROM __manifest WHERE manifest_path LIKE '%passwd%' OR object_id LIKE '%forged%' OR object_id LIKE '%pwn%'`)
	if !ok {
		return
	}
	if len(rows) != 0 {
		t.Errorf("after %s __manifest holds forged rows: %q", after, rows)
	}
	for id := range e.tables {
		want := e.versions[id]
		rows, _, ok := query(fmt.Sprintf(`SELECT version, manifest_path FROM table_versions WHERE table_id = '%s' ORDER BY version`, id))
		if !ok {
			return
		}
		if len(rows) != len(want) {
			t.Errorf("after %s table_versions of %s: %q, want versions %v", after, id, rows, want)
			continue
		}
		for i, r := range rows {
			v, p, _ := strings.Cut(r, "|")
			if v != strconv.FormatUint(want[i], 10) || !strings.HasSuffix(p, fmt.Sprintf("%020d.manifest", ^uint64(0)-want[i])) {
				t.Errorf("after %s table_versions of %s row %d: %q", after, id, i, r)
			}
		}
	}
	all, seq, ok := query(`SELECT * FROM __manifest ORDER BY ALL`)
	if !ok {
		return
	}
	if seq == "" {
		t.Errorf("after %s: DoGet named no catalog sequence (%s)", after, flightserver.SeqHeader)
		return
	}
	if at, _, ok := query(`SELECT * FROM manifest_at(` + seq + `) ORDER BY ALL`); ok {
		if d := diffLines(all, at); d != "" {
			t.Errorf("after %s manifest_at(%s) differs from __manifest:%s", after, seq, d)
		}
	}
}

// assertStorage reads every __manifest segment and snapshot under the
// catalog root, as parquet, without the server: no cell may name a forged
// manifest or object, and every object id must be one the test made.
func (e *attackEnv) assertStorage(t *testing.T, after string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(e.root(), "__manifest", "*", "*.parquet"))
	if len(files) == 0 {
		t.Fatalf("after %s: no __manifest segments or snapshots under %s", after, e.root())
	}
	seen := map[string]bool{}
	rows := 0
	for _, p := range files {
		cells, ids, n := readParquetCells(t, p)
		rows += n
		for _, c := range cells {
			if strings.Contains(c, "passwd") || strings.Contains(c, "forged") || strings.Contains(c, "pwn") {
				t.Errorf("after %s %s holds a forged value: %q", after, filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p), c)
			}
		}
		for _, id := range ids {
			seen[id] = true
			if !e.history[id] {
				t.Errorf("after %s %s holds an object the test never made: %q", after, filepath.Base(p), id)
			}
		}
	}
	for id := range e.tables {
		if !seen[id] {
			t.Errorf("after %s no segment or snapshot (%d files, %d rows) holds table %s", after, len(files), rows, id)
		}
	}
}

// readParquetCells returns every cell of a parquet file as text (binary
// cells as their bytes), the values of its object_id column, and its rows.
func readParquetCells(t *testing.T, p string) (cells, ids []string, rows int) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	defer func() { _ = pr.Close() }()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	defer tbl.Release()
	for c := 0; c < int(tbl.NumCols()); c++ {
		col := tbl.Column(c)
		for _, chunk := range col.Data().Chunks() {
			for i := 0; i < chunk.Len(); i++ {
				if chunk.IsNull(i) {
					continue
				}
				var s string
				switch a := chunk.(type) {
				case *array.Binary:
					s = string(a.Value(i))
				case *array.LargeBinary:
					s = string(a.Value(i))
				default:
					s = chunk.ValueStr(i)
				}
				cells = append(cells, s)
				if col.Name() == "object_id" {
					ids = append(ids, s)
				}
			}
		}
	}
	return cells, ids, int(tbl.NumRows())
}

// cliError is a failed `flightns query`.
type cliError struct {
	code   int
	stderr string
}

func (c cliError) Error() string { return fmt.Sprintf("exit %d: %s", c.code, c.stderr) }

// try runs sql as the attacker on one path and returns the refusal (nil:
// accepted, which is reported). An accepted text is run to its end, so
// whatever it would do is done before the state is compared.
func (e *attackEnv) try(t *testing.T, path, sql string) error {
	t.Helper()
	ctx, cancel := readCtx(queryLimit)
	defer cancel()
	switch path {
	case pathExecute:
		info, err := e.fc.Execute(ctx, sql)
		if err != nil {
			return err
		}
		rows, _, ferr := e.fetch(ctx, info)
		t.Errorf("GetFlightInfo accepted %q (DoGet: %d rows, %v)", sql, len(rows), ferr)
		return nil
	case pathSchema:
		_, err := e.fc.GetExecuteSchema(ctx, sql)
		if err == nil {
			t.Errorf("GetSchema accepted %q", sql)
		}
		return err
	case pathPrepared, pathPreparedParams:
		ps, err := e.fc.Prepare(ctx, sql)
		if err != nil {
			return err
		}
		defer func() { _ = ps.Close(ctx) }()
		if ps.ParameterSchema() != nil && ps.ParameterSchema().NumFields() > 0 {
			rec := paramRecord(ps.ParameterSchema())
			ps.SetParameters(rec)
			rec.Release()
		}
		var rows []string
		info, xerr := ps.Execute(ctx)
		if xerr == nil {
			rows, _, xerr = e.fetch(ctx, info)
		}
		t.Errorf("CreatePreparedStatement accepted %q (execute: %d rows, %v)", sql, len(rows), xerr)
		return nil
	case pathUpdate:
		n, err := e.fc.ExecuteUpdate(ctx, sql)
		if err == nil {
			t.Errorf("ExecuteUpdate accepted %q: %d rows", sql, n)
		}
		return err
	case pathCLI:
		code, out, errs := runCLI(t, e.work, "query", "--token", attackReadToken, "--flight", e.s.flight, "--rest", "http://"+e.s.rest, "--timeout", queryLimit.String(), sql)
		if code == 0 {
			t.Errorf("flightns query accepted %q: %s", sql, out)
			return nil
		}
		return cliError{code, errs}
	}
	t.Fatalf("unknown path %q", path)
	return nil
}

// paramRecord is one row binding "7" to every parameter of schema.
func paramRecord(schema *arrow.Schema) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, fb := range b.Fields() {
		if err := fb.AppendValueFromString("7"); err != nil {
			fb.AppendNull()
		}
	}
	return b.NewRecordBatch()
}

// assertRefused checks a refusal: its gRPC code (and Lance code in the
// ErrorInfo detail), and that its message names one of names. It reports
// whether the refusal was right.
func assertRefused(t *testing.T, path string, err error, want codes.Code, names []string) bool {
	t.Helper()
	if err == nil {
		return false // reported by try
	}
	ok := true
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
		ok = false
	}
	lance := nserror.PermissionDenied
	if want == codes.InvalidArgument {
		lance = nserror.InvalidInput
	}
	var ce cliError
	if errors.As(err, &ce) {
		if ce.code != 1 || !strings.Contains(ce.stderr, "code = "+want.String()) {
			fail("%s: flightns query: exit %d, want exit 1 and code %v: %s", path, ce.code, want, ce.stderr)
		}
		if !containsAny(ce.stderr, names) {
			fail("%s: flightns query's refusal names none of %q: %s", path, names, ce.stderr)
		}
		return ok
	}
	st, isStatus := status.FromError(err)
	if !isStatus {
		fail("%s: not a gRPC status: %v", path, err)
		return ok
	}
	if st.Code() != want {
		fail("%s: gRPC code %v, want %v: %s", path, st.Code(), want, st.Message())
	}
	if c, present := grpcstatus.Code(err); !present || c != lance {
		fail("%s: Lance code %v (present %v), want %v: %s", path, c, present, lance, st.Message())
	}
	if !containsAny(st.Message(), names) {
		fail("%s: the refusal names none of %q: %s", path, names, st.Message())
	}
	return ok
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// sqlAttack is one attack: its text, the same with a parameter ("": it
// takes none), what the refusal must name, and its gRPC code.
type sqlAttack struct {
	name  string
	sql   string
	param string
	names []string
	code  codes.Code // 0: PermissionDenied
	// check runs after each path, for what the state comparison cannot
	// see (a file outside the catalog root).
	check func(t *testing.T)
}

// run tries a on every path; after each, the refusal and the state.
func (e *attackEnv) run(t *testing.T, a sqlAttack) {
	t.Helper()
	want := a.code
	if want == 0 {
		want = codes.PermissionDenied
	}
	// Nothing else changes the catalog meanwhile: every path is compared
	// with the state before the first.
	e.requireServing(t)
	before := e.capture(t)
	for _, path := range allPaths {
		sql := a.sql
		if path == pathPreparedParams {
			if a.param == "" {
				continue
			}
			sql = a.param
		}
		t.Run(path, func(t *testing.T) {
			err := e.try(t, path, sql)
			assertRefused(t, path, err, want, a.names)
			if a.check != nil {
				a.check(t)
			}
			e.assertUnchanged(t, before, path+" "+strconv.Quote(sql))
		})
	}
}

// requireServing checks, before a subtest, that the server answers a
// query. One that stopped answering (a hang an earlier subtest caused, and
// reported) is killed and started again, so that the later attacks are
// still tried; one that cannot be brought back fails the rest at once.
func (e *attackEnv) requireServing(t *testing.T) {
	t.Helper()
	if e.broken != "" {
		t.Fatalf("not run: %s", e.broken)
	}
	_, _, err := e.query(`SELECT 1`)
	if err == nil {
		return
	}
	t.Errorf("before this subtest the server does not answer SELECT 1 (%v): killed and started again", err)
	_ = e.fc.Close()
	_ = e.s.cmd.Process.Kill()
	e.s.wait()
	waitGone(t, e.s.redisPid, "the private redis-server of the killed server")
	e.start(t)
	if _, _, err := e.query(`SELECT 1`); err != nil {
		e.broken = "the server does not answer queries, even restarted: " + err.Error()
		t.Fatal(e.broken)
	}
}

// multi is the refusal of a text of more than one statement.
var multi = []string{"statements"}

func TestSQLAttack(t *testing.T) {
	start := time.Now()
	e := newAttackEnv(t)
	e.seed(t)
	t.Logf("server up and seeded in %v", time.Since(start).Round(time.Millisecond))
	e.engine0 = e.capture(t).engine
	for _, want := range []string{"view: flightns|main|tables|", "macro: flightns|main|manifest_at|", "setting: threads|"} {
		if !slices.ContainsFunc(e.engine0, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Fatalf("the engine's object list lacks %q (the checks would see nothing): %q", want, e.engine0)
		}
	}
	e.assertModel(t, "seeding")
	outside := t.TempDir()

	// Plain single statements: each refused, naming its type.
	copyTarget := filepath.Join(outside, "pwned.csv")
	exportDir := filepath.Join(outside, "export")
	absent := func(p string) func(t *testing.T) {
		return func(t *testing.T) {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("%s was written (%v)", p, err)
			}
			if ents, _ := os.ReadDir(e.work); len(ents) > 0 {
				for _, d := range ents {
					if n := d.Name(); n != "flightns-data" && n != "auth.json" {
						t.Errorf("the server's working directory holds %s", n)
					}
				}
			}
		}
	}
	plain := []sqlAttack{
		{name: "DROP_VIEW", sql: `DROP VIEW tables`, names: []string{"DROP"}},
		{name: "CREATE_TABLE", sql: `CREATE TABLE pwn AS SELECT 42 AS x`, param: `CREATE TABLE pwn AS SELECT $1::INTEGER AS x`, names: []string{"CREATE"}},
		{name: "INSERT", sql: `INSERT INTO _versions (object_id, table_version, manifest_path, manifest_size, _seq_from) VALUES ('prod$sales$orders', 99, 'etc/passwd', 1, 1)`,
			param: `INSERT INTO _versions (object_id, table_version, manifest_path, manifest_size, _seq_from) VALUES ('prod$sales$orders', $1, 'etc/passwd', 1, 1)`, names: []string{"INSERT"}},
		{name: "ATTACH", sql: `ATTACH ':memory:' AS m`, names: []string{"ATTACH"}},
		{name: "SET", sql: `SET threads = 64`, param: `SET threads = $1`, names: []string{"SET"}},
		{name: "BEGIN", sql: `BEGIN TRANSACTION`, names: []string{"TRANSACTION", "BEGIN"}},
		{name: "CALL", sql: `CALL duckdb_tables()`, names: []string{"CALL"}},
		{name: "COPY_TO", sql: `COPY (SELECT 1 AS x) TO '` + copyTarget + `'`, param: `COPY (SELECT $1::INTEGER AS x) TO '` + copyTarget + `'`, names: []string{"COPY"}, check: absent(copyTarget)},
		{name: "EXPORT_DATABASE", sql: `EXPORT DATABASE '` + exportDir + `'`, names: []string{"EXPORT"}, check: absent(exportDir)},
		{name: "UPDATE", sql: `UPDATE _versions SET manifest_path = 'etc/passwd'`, param: `UPDATE _versions SET manifest_size = $1`, names: []string{"UPDATE"}},
		{name: "CREATE_MACRO", sql: `CREATE OR REPLACE MACRO manifest_at(n) AS TABLE SELECT 'forged' AS object_id`, names: []string{"CREATE"}},
		{name: "DETACH", sql: `DETACH flightns`, names: []string{"DETACH"}},
		{name: "CHECKPOINT", sql: `CHECKPOINT`, names: []string{"CHECKPOINT", "CALL"}},
		{name: "LOAD", sql: `LOAD httpfs`, names: []string{"LOAD"}},
		{name: "PRAGMA_SET", sql: `PRAGMA threads=64`, names: []string{"SET"}},
		{name: "RESET", sql: `RESET threads`, names: []string{"SET", "RESET"}},
	}
	for _, a := range plain {
		t.Run("plain/"+a.name, func(t *testing.T) { e.run(t, a) })
	}

	// Statements smuggled in front of (or after) a SELECT.
	t.Run("CREATE_TABLE_pwn_then_SELECT", func(t *testing.T) {
		e.run(t, sqlAttack{sql: `CREATE TABLE pwn AS SELECT 42 AS x; SELECT 1`, param: `CREATE TABLE pwn AS SELECT 42 AS x; SELECT $1::INTEGER AS n`, names: multi})
		if _, _, err := e.query(`SELECT x FROM pwn`); err == nil {
			t.Errorf("a later query sees the attacker's table pwn")
		}
	})
	t.Run("DROP_VIEW_tables_then_SELECT", func(t *testing.T) {
		e.run(t, sqlAttack{sql: `DROP VIEW tables; SELECT 1`, param: `DROP VIEW tables; SELECT $1::INTEGER AS n`, names: multi})
	})
	t.Run("SELECT_then_DROP_VIEW_tables", func(t *testing.T) {
		e.run(t, sqlAttack{sql: `SELECT 1; DROP VIEW tables`, param: `SELECT $1::INTEGER AS n; DROP VIEW tables`, names: multi})
	})
	t.Run("DROP_VIEW_then_syntax_error", func(t *testing.T) {
		e.run(t, sqlAttack{sql: `DROP VIEW tables; SELEC 1`, param: `DROP VIEW tables; SELEC $1`, names: []string{"syntax", "Parser"}, code: codes.InvalidArgument})
	})
	t.Run("ATTACH_memory_then_SELECT", func(t *testing.T) {
		e.run(t, sqlAttack{sql: `ATTACH ':memory:' AS m; SELECT 1`, param: `ATTACH ':memory:' AS m; SELECT $1::INTEGER AS n`, names: multi})
	})
	t.Run("SET_threads_then_SELECT", func(t *testing.T) {
		e.run(t, sqlAttack{sql: `SET threads = 64; SELECT 1`, param: `SET threads = 64; SELECT $1::INTEGER AS n`, names: multi})
	})

	// Fake version rows, then a rename that copies a table's versions: the
	// fake row must reach neither __manifest nor storage, now or after a
	// restart (checked after the restart below).
	t.Run("INSERT_INTO_versions_then_SELECT_then_RenameTable", func(t *testing.T) {
		ins := `INSERT INTO _versions (object_id, table_version, manifest_path, manifest_size, _seq_from) VALUES ('prod$sales$victim', 99, 'etc/passwd', 1, 1)`
		e.run(t, sqlAttack{sql: ins + `; SELECT 1`, param: ins + `; SELECT $1::INTEGER AS n`, names: multi})
		e.rename(t, "prod$sales$victim", "renamed", prompt)
		e.assertModel(t, "the INSERT attack and a RenameTable")
		e.assertStorage(t, "the INSERT attack and a RenameTable")
	})

	// A replaced time-travel macro, then compaction (the server's own
	// after CompactAfter segments, and `flightns admin compact`) and a
	// restart: every namespace is still there, nothing forged.
	t.Run("CREATE_OR_REPLACE_MACRO_manifest_at_then_compaction_and_restart", func(t *testing.T) {
		mac := `CREATE OR REPLACE MACRO manifest_at(n) AS TABLE SELECT 'forged' AS object_id, 'namespace' AS object_type, NULL AS table_version`
		e.run(t, sqlAttack{sql: mac + `; SELECT 1`, param: mac + `; SELECT $1::INTEGER AS n`, names: multi})
		snaps := func() []string {
			s, _ := filepath.Glob(filepath.Join(e.root(), "__manifest", "_snapshots", "*.parquet"))
			return s
		}
		had := len(snaps())
		t0 := time.Now()
		// The server compacts on its own after 1,000 segments; one
		// namespace create is one segment.
		for i := range 1000 {
			if len(snaps()) > had {
				break
			}
			e.createNamespace(t, fmt.Sprintf("bulk%04d", i), 0)
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(snaps()) <= had && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if len(snaps()) <= had {
			t.Fatalf("the server wrote no snapshot after %d namespace creates", len(e.namespaces))
		}
		t.Logf("%d namespaces and the server's compaction in %v", len(e.namespaces), time.Since(t0).Round(time.Millisecond))
		waitFilesSettle(t, e.root())
		e.assertModel(t, "the MACRO attack and the server's compaction")
		e.assertStorage(t, "the MACRO attack and the server's compaction")
		engine := e.capture(t).engine
		if d := diffLines(linesWithPrefix(e.engine0, "macro: "), linesWithPrefix(engine, "macro: ")); d != "" {
			t.Errorf("after the MACRO attack and the server's compaction the engine's macros changed:%s", d)
		}
		if d := diffLines(e.engine0, engine); d != "" {
			t.Errorf("after 1,000 namespace creates and the server's compaction the engine's objects differ from before them (nothing but rows should change):%s", d)
		}

		e.stop(t, 10*time.Second)
		if code, out, errs := runCLI(t, e.work, "admin", "compact"); code != 0 || !strings.HasPrefix(out, "compacted:") {
			t.Errorf("flightns admin compact: exit %d %s %s", code, out, errs)
		}
		e.assertStorage(t, "the MACRO attack and `flightns admin compact`")
		e.start(t)
		e.assertModel(t, "the MACRO attack, compaction and a restart")
		engine = e.capture(t).engine
		if d := diffLines(linesWithPrefix(e.engine0, "macro: "), linesWithPrefix(engine, "macro: ")); d != "" {
			t.Errorf("after a restart the engine's macros differ from a fresh server's:%s", d)
		}
		if d := diffLines(e.engine0, engine); d != "" {
			t.Errorf("after a restart the engine's objects differ from a fresh server's:%s", d)
		}
	})

	// Transactions left open on engine connections.
	t.Run("BEGIN_TRANSACTION_then_SELECT_x40", func(t *testing.T) {
		e.requireServing(t)
		before := e.capture(t)
		for _, path := range allPaths {
			n := 40
			if path == pathCLI {
				n = 8
			}
			for i := 1; i <= n; i++ {
				sql := fmt.Sprintf("BEGIN TRANSACTION; SELECT %d", i)
				if path == pathPreparedParams {
					sql = fmt.Sprintf("BEGIN TRANSACTION; SELECT %d + $1::INTEGER AS n", i)
				}
				if !assertRefused(t, path, e.try(t, path, sql), codes.PermissionDenied, multi) {
					break // one report per path is enough
				}
			}
			e.assertUnchanged(t, before, fmt.Sprintf("%d × BEGIN TRANSACTION on %s", n, path))
		}
		for i := range 10 {
			e.assertOrdinaryQuery(t, fmt.Sprintf("the BEGIN attacks (query %d)", i))
		}
		e.rename(t, "prod$sales$second", "second2", prompt)
		for i := range 5 {
			e.createNamespace(t, fmt.Sprintf("after_begin%d", i), prompt)
		}
		if code, body := httpGet(t, "http://"+e.s.metrics+"/readyz"); code != http.StatusOK {
			t.Errorf("/readyz: %d %s", code, body)
		}
		e.assertModel(t, "the BEGIN attacks, a rename and namespace creates")
		e.stop(t, 10*time.Second)
		e.start(t)
		e.assertModel(t, "the BEGIN attacks and a restart")
	})

	// Results planned and never fetched hold nothing.
	t.Run("unfetched_results", func(t *testing.T) {
		e.requireServing(t)
		before := e.capture(t)
		ctx, cancel := readCtx(queryLimit)
		defer cancel()
		for i := range 16 {
			q := `SELECT * FROM __manifest`
			if i%2 == 1 {
				q = fmt.Sprintf(`SELECT %d AS i, repeat('x', 1000) AS s FROM range(4000)`, i)
			}
			if _, err := e.fc.Execute(ctx, q); err != nil {
				t.Fatalf("GetFlightInfo %d: %v", i, err)
			}
		}
		for i := range 4 {
			ps, err := e.fc.Prepare(ctx, `SELECT object_id, $1::INTEGER AS n FROM __manifest`)
			if err != nil {
				t.Fatalf("prepare %d: %v", i, err)
			}
			rec := paramRecord(ps.ParameterSchema())
			ps.SetParameters(rec)
			rec.Release()
			if _, err := ps.Execute(ctx); err != nil {
				t.Fatalf("prepared GetFlightInfo %d: %v", i, err)
			}
		}
		rows, took, err := e.promptQuery(`SELECT 1`)
		if err != nil || len(rows) != 1 || rows[0] != "1" || took > prompt {
			t.Errorf("SELECT 1 after 20 unfetched results: %q, %v, took %v", rows, err, took.Round(time.Millisecond))
		}
		e.assertUnchanged(t, before, "20 unfetched results")
		e.createNamespace(t, "after_unfetched", prompt)
		e.assertModel(t, "20 unfetched results and a CreateNamespace")
	})

	t.Run("DELETE_FROM_manifest", func(t *testing.T) {
		e.run(t, sqlAttack{sql: `DELETE FROM __manifest`, param: `DELETE FROM __manifest WHERE object_id = $1`, names: []string{"DELETE"}})
	})

	t.Run("PRAGMA_database_list", func(t *testing.T) {
		e.requireServing(t)
		before := e.capture(t)
		adhoc, _, err := e.query(`PRAGMA database_list`)
		if err != nil || len(adhoc) == 0 || !containsAny(strings.Join(adhoc, "\n"), []string{"flightns"}) {
			t.Errorf("PRAGMA database_list ad hoc: %q, %v", adhoc, err)
		}
		ctx, cancel := readCtx(queryLimit)
		defer cancel()
		ps, err := e.fc.Prepare(ctx, `PRAGMA database_list`)
		if err != nil {
			t.Fatalf("PRAGMA database_list prepared: %v", err)
		}
		info, err := ps.Execute(ctx)
		if err != nil {
			t.Fatalf("PRAGMA database_list prepared, executed: %v", err)
		}
		prepared, _, err := e.fetch(ctx, info)
		if err != nil || !slices.Equal(prepared, adhoc) {
			t.Errorf("PRAGMA database_list prepared: %q, %v; ad hoc: %q", prepared, err, adhoc)
		}
		_ = ps.Close(ctx)
		if code, out, errs := runCLI(t, e.work, "query", "--token", attackReadToken, "--flight", e.s.flight, "--format", "csv", "PRAGMA database_list"); code != 0 || !strings.Contains(out, "flightns") {
			t.Errorf("flightns query PRAGMA database_list: exit %d %s %s", code, out, errs)
		}
		e.assertUnchanged(t, before, "PRAGMA database_list")
	})

	// Whatever relation the engine lists, a read-role SELECT of it
	// answers (rows or a refusal) and crashes nothing.
	t.Run("SELECT_from_every_relation_the_engine_lists", func(t *testing.T) {
		e.requireServing(t)
		before := e.capture(t)
		rels := e.mustQuery(t, `SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1`)
		if len(rels) < 4 {
			t.Fatalf("the engine lists %q", rels)
		}
		for _, r := range rels {
			sql := `SELECT * FROM "` + strings.ReplaceAll(r, `"`, `""`) + `" LIMIT 3`
			_, _, err := e.query(sql)
			if err == nil {
				continue
			}
			died := false
			select {
			case <-e.s.exited:
				died = true
			case <-time.After(200 * time.Millisecond):
			}
			if st, _ := status.FromError(err); died || st.Code() == codes.Unavailable || st.Code() == codes.Internal || st.Code() == codes.Unknown {
				t.Errorf("%s: %v (the server exited: %v)", sql, err, died)
			}
			if died {
				waitGone(t, e.s.redisPid, "the private redis-server of the crashed server")
				e.start(t) // for the checks that follow
				return
			}
		}
		e.assertUnchanged(t, before, "a SELECT of every relation")
	})

	e.assertStorage(t, "every attack")
	e.stop(t, 10*time.Second)
	t.Logf("TestSQLAttack took %v", time.Since(start).Round(time.Millisecond))
}

// waitFilesSettle waits until the files under dir stop changing (a
// compaction prunes what its snapshot covers after writing it).
func waitFilesSettle(t *testing.T, dir string) {
	t.Helper()
	prev := listFiles(t, dir)
	for range 100 {
		time.Sleep(200 * time.Millisecond)
		now := listFiles(t, dir)
		if slices.Equal(prev, now) {
			return
		}
		prev = now
	}
	t.Fatalf("the files under %s keep changing", dir)
}

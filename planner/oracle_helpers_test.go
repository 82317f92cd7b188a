package planner_test

// The oracle's side of the differential test (oracle_test.go): a catalog
// served by every plan_scan surface, an independent reading of the
// partition transforms, and DuckDB as the judge of what a filter means.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver: the oracle's SQL engine
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/flightns/flightns/flightserver"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/internal/testutil/nstest"
	"github.com/flightns/flightns/planner"
)

// failer is what the oracle needs of *testing.T and *rapid.T.
type failer interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// oracleEnv is one namespace service over a real Redis and a file:// root,
// served in-process by every surface that answers plan_scan (the Go API,
// REST, Flight, Flight SQL), and a DuckDB of the oracle's own that holds
// each case's source rows.
type oracleEnv struct {
	svc    *namespace.Service
	p      *planner.Planner
	rest   string // base URL of the REST server
	fl     *flightsql.Client
	duck   *sql.DB
	tables atomic.Int64 // names every case's table apart: the catalog is shared
}

func newOracleEnv(t *testing.T) *oracleEnv {
	t.Helper()
	env := nstest.New(t)
	svc := env.Open(t)
	e := &oracleEnv{svc: svc, p: planner.New(svc)}

	hs := httptest.NewServer(restserver.New(svc, restserver.Options{Logger: nstest.Quiet}))
	t.Cleanup(hs.Close)
	e.rest = hs.URL

	fs, err := flightserver.New(flightserver.Config{Service: svc, Logger: nstest.Quiet, Version: "oracle"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = fs.Serve(l) }()
	t.Cleanup(fs.Stop)
	if e.fl, err = flightsql.NewClient(l.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.fl.Close() })

	// DuckDB evaluates the filters. Timestamps are TIMESTAMPTZ columns in a
	// UTC session, so a value is a UTC instant (microseconds) as the
	// planner reads it, a literal without a zone is UTC, and one with an
	// offset (TIMESTAMPTZ '…+02:00') is converted; a TIMESTAMP '…+02:00'
	// literal would drop its offset in DuckDB, so the oracle's text of a
	// filter writes TIMESTAMPTZ where the planner's writes TIMESTAMP.
	if e.duck, err = sql.Open("duckdb", ""); err != nil {
		t.Fatal(err)
	}
	e.duck.SetMaxOpenConns(1) // the settings below are per connection
	t.Cleanup(func() { _ = e.duck.Close() })
	for _, s := range []string{"SET TimeZone = 'UTC'", "SET threads = 1"} {
		if _, err := e.duck.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// ---- values ----

// okind is the type of a source column.
type okind int

const (
	kInt32 okind = iota
	kInt64
	kString
	kDate
	kTimestamp
)

func (k okind) String() string {
	return [...]string{"int32", "int64", "string", "date", "timestamp"}[k]
}

// typeNames are the JsonArrowSchema spellings of each kind.
var typeNames = [...][]string{
	kInt32:     {"int32"},
	kInt64:     {"int64"},
	kString:    {"utf8", "string", "large_utf8"},
	kDate:      {"date32", "date"},
	kTimestamp: {"timestamp", "timestamp[us]", "timestamp[us, tz=UTC]", "timestamp[ns, tz=UTC]"},
}

// duckTypes are the DuckDB column types of each kind.
var duckTypes = [...]string{"INTEGER", "BIGINT", "VARCHAR", "DATE", "TIMESTAMPTZ"}

const (
	usPerHour = int64(time.Hour / time.Microsecond)
	usPerDay  = 24 * usPerHour
)

// oval is a value of a column or of a partition field: I holds integers,
// the days of a date and the microseconds of a timestamp; S strings.
type oval struct {
	Null bool
	I    int64
	S    string
}

func oint(i int64) oval      { return oval{I: i} }
func ostr(s string) oval     { return oval{S: s} }
func onull() oval            { return oval{Null: true} }
func dayOf(s string) oval    { return oval{I: mustTime("2006-01-02", s).Unix() / 86400} }
func instant(s string) int64 { return mustTime("2006-01-02 15:04:05.999999", s).UnixMicro() }

func mustTime(layout, s string) time.Time {
	t, err := time.Parse(layout, s)
	if err != nil {
		panic(err)
	}
	return t
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func dateText(days int64) string { return time.Unix(days*86400, 0).UTC().Format("2006-01-02") }
func tsTime(us int64) time.Time  { return time.UnixMicro(us).UTC() }

// canon is a value's canonical text, as every surface's answer is
// compared: one spelling per value of a kind, readable in messages.
func canon(k okind, v oval) string {
	if v.Null {
		return "null"
	}
	switch k {
	case kInt32, kInt64:
		return "int " + strconv.FormatInt(v.I, 10)
	case kDate:
		return "date " + dateText(v.I)
	case kTimestamp:
		return "ts " + tsTime(v.I).Format("2006-01-02T15:04:05.000000Z")
	}
	return "str " + strconv.Quote(v.S)
}

// canonJSON reads a JSON value (decoded with UseNumber) of kind k as the
// JSON answers carry it: numbers, dates as YYYY-MM-DD, timestamps as
// RFC 3339, strings.
func canonJSON(k okind, raw any) (string, error) {
	if raw == nil {
		return "null", nil
	}
	switch k {
	case kInt32, kInt64:
		n, ok := raw.(json.Number)
		if !ok {
			return "", fmt.Errorf("%v (%T) is not a JSON number", raw, raw)
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			return "", fmt.Errorf("%s is not an exact int64", n)
		}
		return canon(k, oint(i)), nil
	case kDate:
		s, _ := raw.(string)
		d, err := parseWide("2006-01-02", s)
		if err != nil {
			return "", fmt.Errorf("%v is not a date", raw)
		}
		return canon(k, oint(floorDiv(d.Unix(), 86400))), nil
	case kTimestamp:
		s, _ := raw.(string)
		ts, err := parseWide(time.RFC3339Nano, s)
		if err != nil {
			return "", fmt.Errorf("%v is not an RFC 3339 timestamp", raw)
		}
		return canon(k, oint(ts.UnixMicro())), nil
	}
	s, ok := raw.(string)
	if !ok {
		return "", fmt.Errorf("%v (%T) is not a string", raw, raw)
	}
	return canon(k, ostr(s)), nil
}

// parseWide is time.Parse for layouts that start with the year, where
// the year may have more than four digits (Go writes year 10000 as
// "10000-…" but cannot read it back): the Gregorian calendar repeats
// every 400 years.
func parseWide(layout, s string) (time.Time, error) {
	i := strings.IndexByte(s, '-')
	if i <= 4 {
		return time.Parse(layout, s)
	}
	y, err := strconv.Atoi(s[:i])
	if err != nil {
		return time.Time{}, err
	}
	base := 2000 + y%400
	t, err := time.Parse(layout, strconv.Itoa(base)+s[i:])
	if err != nil {
		return t, err
	}
	return t.AddDate(y-base, 0, 0), nil
}

// canonPlanner is a planner.Value's canonical text.
func canonPlanner(v planner.Value) string {
	if v.Null {
		return "null"
	}
	switch v.Kind {
	case planner.KindInt:
		return canon(kInt64, oint(v.I))
	case planner.KindDate:
		return canon(kDate, oint(v.I))
	case planner.KindTimestamp:
		return canon(kTimestamp, oint(v.I))
	case planner.KindString:
		return canon(kString, ostr(v.S))
	}
	return "unexpected " + v.SQL()
}

// canonArrow is the canonical text of a partition value in an Arrow answer.
func canonArrow(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	switch a := a.(type) {
	case *array.Int32:
		return canon(kInt32, oint(int64(a.Value(i))))
	case *array.Int64:
		return canon(kInt64, oint(a.Value(i)))
	case *array.Date32:
		return canon(kDate, oint(int64(a.Value(i))))
	case *array.Date64:
		return canon(kDate, oint(floorDiv(int64(a.Value(i)), 86400000)))
	case *array.Timestamp:
		v := int64(a.Value(i))
		switch a.DataType().(*arrow.TimestampType).Unit {
		case arrow.Second:
			v *= 1e6
		case arrow.Millisecond:
			v *= 1e3
		case arrow.Nanosecond:
			v = floorDiv(v, 1e3)
		}
		return canon(kTimestamp, oint(v))
	case *array.String:
		return canon(kString, ostr(a.Value(i)))
	case *array.LargeString:
		return canon(kString, ostr(a.Value(i)))
	case *array.StringView:
		return canon(kString, ostr(a.Value(i)))
	}
	return fmt.Sprintf("unexpected %s %s", a.DataType(), a.ValueStr(i))
}

// textArrow reads a string or integer column of an Arrow answer as text
// ("null" for NULL).
func textArrow(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	}
	return a.ValueStr(i)
}

// ---- the reference transforms ----

// murmur3 is Murmur3 x86 32-bit with seed 0, written from the algorithm
// (TestOracleReferenceMatchesIcebergHashVectors checks it), not from the
// planner's code.
func murmur3(data []byte) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	var h uint32
	n := len(data) / 4
	for i := 0; i < n; i++ {
		k := binary.LittleEndian.Uint32(data[4*i:])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	var k uint32
	tail := data[4*n:]
	switch len(tail) {
	case 3:
		k ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(tail[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(len(data))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// icebergBytes are the bytes Iceberg hashes: integers, dates (days) and
// timestamps (µs) as 8-byte little-endian longs, strings as UTF-8.
func icebergBytes(k okind, v oval, buf []byte) []byte {
	if k == kString {
		return append(buf, v.S...)
	}
	return binary.LittleEndian.AppendUint64(buf, uint64(v.I))
}

func bucketOf(h uint32, n int) int64 { return int64(int32(h)&math.MaxInt32) % int64(n) }

// ofield is a partition field as the oracle writes it.
type ofield struct {
	ID        string // as stored (the column is partition_field_<ID>)
	IDJSON    string // as written in the spec; "" leaves it out (reused by signature)
	Transform string
	N         int   // num_buckets or width
	Src       []int // source columns (indexes into the case's columns)
}

// sig is what identifies a field across specs (sources, transform).
func (f ofield) sig() string { return fmt.Sprint(f.Src, f.Transform, f.N) }

// kind is the kind of the field's partition values.
func (f ofield) kind(cols []ocol) okind {
	switch f.Transform {
	case "identity", "truncate":
		return cols[f.Src[0]].Kind
	case "day":
		return kDate
	}
	return kInt32
}

// apply computes a field's partition value from a row, by the docs
// (docs/planner.md) and Iceberg, independently of the planner.
func (f ofield) apply(cols []ocol, row []ocell) oval {
	for _, s := range f.Src {
		if row[s].V.Null {
			return onull()
		}
	}
	v, k := row[f.Src[0]].V, cols[f.Src[0]].Kind
	t := func() time.Time {
		if k == kDate {
			return time.Unix(v.I*86400, 0).UTC()
		}
		return tsTime(v.I)
	}
	switch f.Transform {
	case "identity":
		return v
	case "year":
		return oint(int64(t().Year() - 1970))
	case "month":
		return oint(int64(t().Year()-1970)*12 + int64(t().Month()) - 1)
	case "day":
		if k == kDate {
			return v
		}
		return oint(floorDiv(v.I, usPerDay))
	case "hour":
		return oint(floorDiv(v.I, usPerHour))
	case "bucket":
		return oint(bucketOf(murmur3(icebergBytes(k, v, nil)), f.N))
	case "multi_bucket":
		var buf []byte
		for _, s := range f.Src {
			buf = icebergBytes(cols[s].Kind, row[s].V, buf)
		}
		return oint(bucketOf(murmur3(buf), f.N))
	case "truncate":
		if k == kString {
			n := 0
			for i := range v.S {
				if n == f.N {
					return ostr(v.S[:i])
				}
				n++
			}
			return v
		}
		return oint(v.I - v.I%int64(f.N)) // toward zero, as docs/planner.md says
	}
	panic("unknown transform " + f.Transform)
}

// ---- the surfaces ----

// planView is one surface's answer to plan_scan, by leaf id.
type planView struct {
	seq    string // the catalog sequence, "" when the surface does not carry it
	leaves map[string]pleaf
}

// pleaf is one planned leaf as the surfaces are compared.
type pleaf struct {
	Location, Version, Spec, Residual string
	Values                            map[string]string // every partition column -> canonical value
}

func (v planView) ids() []string {
	var out []string
	for id := range v.leaves {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// viewOfPlan is the Go API's answer.
func viewOfPlan(pl *planner.Plan) planView {
	v := planView{seq: strconv.FormatUint(pl.Seq, 10), leaves: map[string]pleaf{}}
	fields := pl.Schema().Fields()
	for _, l := range pl.Leaves {
		pv := pleaf{Location: l.Location, Version: "null", Spec: strconv.Itoa(int(l.SpecID)), Residual: l.Residual, Values: map[string]string{}}
		if l.Version != 0 {
			pv.Version = strconv.FormatUint(l.Version, 10)
		}
		for i, val := range l.Values {
			pv.Values[fields[4+i].Name] = canonPlanner(val)
		}
		key := l.ID
		if _, dup := v.leaves[key]; dup {
			key += " (again)"
		}
		v.leaves[key] = pv
	}
	return v
}

// viewOfArrow reads an Arrow answer of plan_scan.
func viewOfArrow(schema *arrow.Schema, recs []arrow.RecordBatch, withSeq bool) (planView, error) {
	v := planView{leaves: map[string]pleaf{}}
	if withSeq {
		v.seq, _ = schema.Metadata().GetValue(planner.SeqMetadataKey)
	}
	for _, rec := range recs {
		col := func(name string) arrow.Array {
			if idx := rec.Schema().FieldIndices(name); len(idx) == 1 {
				return rec.Column(idx[0])
			}
			return nil
		}
		id, loc, ver, spec, res := col("table_id"), col("location"), col("read_version"), col("partition_spec_id"), col("residual_filter")
		if id == nil || loc == nil || ver == nil || spec == nil || res == nil {
			return v, fmt.Errorf("the answer lacks a column: %v", rec.Schema())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			pv := pleaf{Location: textArrow(loc, i), Version: textArrow(ver, i), Spec: textArrow(spec, i), Residual: textArrow(res, i),
				Values: map[string]string{}}
			for c, f := range rec.Schema().Fields() {
				if strings.HasPrefix(f.Name, "partition_field_") {
					pv.Values[f.Name] = canonArrow(rec.Column(c), i)
				}
			}
			key := textArrow(id, i)
			if _, dup := v.leaves[key]; dup {
				key += " (again)"
			}
			v.leaves[key] = pv
		}
	}
	return v, nil
}

// viewOfJSON reads the JSON answer; kinds are the partition columns' kinds
// (the reference plan's), as JSON does not carry them.
func viewOfJSON(body []byte, kinds map[string]okind) (planView, error) {
	var out struct {
		Seq    json.Number `json:"catalog_seq"`
		Leaves []struct {
			TableID     string         `json:"table_id"`
			Location    string         `json:"location"`
			ReadVersion *json.Number   `json:"read_version"`
			SpecID      json.Number    `json:"partition_spec_id"`
			Values      map[string]any `json:"partition_values"`
			Residual    string         `json:"residual_filter"`
		} `json:"leaves"`
	}
	if err := decodeJSON(body, &out); err != nil {
		return planView{}, err
	}
	v := planView{seq: out.Seq.String(), leaves: map[string]pleaf{}}
	for _, l := range out.Leaves {
		pv := pleaf{Location: l.Location, Version: "null", Spec: l.SpecID.String(), Residual: l.Residual, Values: map[string]string{}}
		if l.ReadVersion != nil {
			pv.Version = l.ReadVersion.String()
		}
		for name, k := range kinds {
			c, err := canonJSON(k, l.Values[name])
			if err != nil {
				return v, fmt.Errorf("leaf %s, %s: %w", l.TableID, name, err)
			}
			pv.Values[name] = c
		}
		for name := range l.Values {
			if _, ok := kinds[name]; !ok {
				pv.Values[name] = "unexpected column"
			}
		}
		key := l.TableID
		if _, dup := v.leaves[key]; dup {
			key += " (again)"
		}
		v.leaves[key] = pv
	}
	return v, nil
}

func decodeJSON(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	return d.Decode(v)
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// restPost posts a JSON body to a route below /v1/namespace/{table}/.
func (e *oracleEnv) restPost(ctx context.Context, table, route, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.rest+"/v1/namespace/"+url.PathEscape(table)+"/"+route, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("REST %s: %d %s", route, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

// flightAction runs a Flight action and returns its first result's body.
func (e *oracleEnv) flightAction(ctx context.Context, name, body string) ([]byte, error) {
	stream, err := e.fl.Client.DoAction(ctx, &flight.Action{Type: name, Body: []byte(body)})
	if err != nil {
		return nil, fmt.Errorf("Flight %s: %w", name, err)
	}
	res, err := stream.Recv()
	if err != nil {
		return nil, fmt.Errorf("Flight %s: %w", name, err)
	}
	return res.Body, nil
}

// flightFetch streams every endpoint of a FlightInfo.
func (e *oracleEnv) flightFetch(ctx context.Context, info *flight.FlightInfo, withSeq bool) (planView, error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var schema *arrow.Schema
	for _, ep := range info.Endpoint {
		rd, err := e.fl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return planView{}, err
		}
		schema = rd.Schema()
		for rd.Next() {
			r := rd.RecordBatch()
			r.Retain()
			recs = append(recs, r)
		}
		err = rd.Err()
		rd.Release()
		if err != nil {
			return planView{}, err
		}
	}
	if schema == nil {
		return planView{}, fmt.Errorf("no endpoint")
	}
	return viewOfArrow(schema, recs, withSeq)
}

// surfaces are the ways to ask for a plan besides the Go API: each
// answers the same plan as the Go API does.
var surfaces = []struct {
	name string
	plan func(ctx context.Context, e *oracleEnv, table, filter string, kinds map[string]okind) (planView, error)
}{
	{"REST (Arrow)", func(ctx context.Context, e *oracleEnv, table, filter string, _ map[string]okind) (planView, error) {
		b, err := e.restPost(ctx, table, "partitioned/plan_scan", `{"filter":`+jsonString(filter)+`}`)
		if err != nil {
			return planView{}, err
		}
		rd, err := ipc.NewReader(bytes.NewReader(b))
		if err != nil {
			return planView{}, err
		}
		defer rd.Release()
		var recs []arrow.RecordBatch
		for rd.Next() {
			r := rd.RecordBatch()
			r.Retain()
			recs = append(recs, r)
		}
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
		if err := rd.Err(); err != nil {
			return planView{}, err
		}
		return viewOfArrow(rd.Schema(), recs, true)
	}},
	{"REST (JSON)", func(ctx context.Context, e *oracleEnv, table, filter string, kinds map[string]okind) (planView, error) {
		b, err := e.restPost(ctx, table, "partitioned/plan_scan?format=json", `{"filter":`+jsonString(filter)+`}`)
		if err != nil {
			return planView{}, err
		}
		return viewOfJSON(b, kinds)
	}},
	{"Flight PlanScan action", func(ctx context.Context, e *oracleEnv, table, filter string, _ map[string]okind) (planView, error) {
		b, err := e.flightAction(ctx, "PlanScan", `{"id":[`+jsonString(table)+`],"filter":`+jsonString(filter)+`}`)
		if err != nil {
			return planView{}, err
		}
		var info flight.FlightInfo
		if err := proto.Unmarshal(b, &info); err != nil {
			return planView{}, err
		}
		return e.flightFetch(ctx, &info, true)
	}},
	{"Flight GetFlightInfo plan_scan command", func(ctx context.Context, e *oracleEnv, table, filter string, _ map[string]okind) (planView, error) {
		cmd := `{"plan_scan":{"id":[` + jsonString(table) + `],"filter":` + jsonString(filter) + `}}`
		info, err := e.fl.Client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(cmd)})
		if err != nil {
			return planView{}, err
		}
		return e.flightFetch(ctx, info, true)
	}},
	{"Flight SQL SELECT FROM plan_scan", func(ctx context.Context, e *oracleEnv, table, filter string, _ map[string]okind) (planView, error) {
		q := "SELECT * FROM plan_scan(" + sqlString(table) + ", " + sqlString(filter) + ")"
		info, err := e.fl.Execute(ctx, q)
		if err != nil {
			return planView{}, err
		}
		return e.flightFetch(ctx, info, false)
	}},
}

// sqlString is s as a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlIdent is a quoted SQL identifier.
func sqlIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// duckRows runs SELECT oracle_rid … WHERE where (every row without one) and
// returns the row ids, sorted.
func (e *oracleEnv) duckRows(table, where string, args ...any) ([]int, error) {
	q := "SELECT oracle_rid FROM " + table
	if strings.TrimSpace(where) != "" {
		q += " WHERE " + where
	}
	q += " ORDER BY 1"
	rs, err := e.duck.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rs.Close() }()
	var out []int
	for rs.Next() {
		var id int
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rs.Err()
}

package reliability

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/flightns/flightns/internal/restserver"
	"github.com/flightns/flightns/internal/testutil/nstest"
)

// FuzzRESTRequest sends a fuzzed id and body to a fuzzed route of the REST
// surface (in process, over a real Redis and a file:// root): every answer
// is 200 or a JSON error with a Lance code and a 4xx status, never a 5xx
// and never a panic. Run it with
//
//	go test -tags duckdb_arrow -run XXX -fuzz FuzzRESTRequest ./reliability
//
// The seeds below run in every go test.
func FuzzRESTRequest(f *testing.F) {
	seeds := []struct {
		route uint8
		id    string
		body  string
	}{
		{0, "ns", `{}`},
		{7, "ns$t", `{"location":"../x"}`},
		{16, "ns$t", `{"version":1,"manifest_path":"/etc/passwd","manifest_size":1}`},
		{16, "ns$t", `{"version":-1,"manifest_path":"","manifest_size":-5}`},
		{19, "", `{"entries":[{"id":["ns","t"],"version":1,"manifest_path":"x"},{"id":["ns","t"],"version":1,"manifest_path":"x"}]}`},
		{20, "", `{"operations":[{"declare_table":{"id":["ns","u"]}},{"create_table_version":{"id":["ns","u"],"version":1,"manifest_path":"x"}}]}`},
		{20, "", `{"operations":[{"assert_table_version":{"id":["ns","t"],"version":9}}]}`},
		{21, "ns", `{"schema":{"fields":[{"name":"a","type":"int32"}]},"partition_spec":{"fields":[{"source":"a","transform":"bucket[0]"}]}}`},
		{26, "ns", `{"filter":"a = 1 AND"}`},
		{14, "ns$t", `{"new_table_name":"..","new_namespace_id":["..",""]}`},
		{3, "ns", `{"mode":"Cascade","behavior":"Restrict"}`},
		{15, "ns$t", `{"limit":2147483648,"page_token":"-1"}`},
		{18, "ns$t", `{"ranges":[{"start_version":9223372036854775807,"end_version":-9223372036854775808}]}`},
		{1, "%24", `null`},
		{9, "ns$r", `{"location":"s3://other/x"}`},
		{2, "a\x00b", `{"id":["a\u0000b"]}`},
		{4, "ns", "\xff"},
	}
	for _, s := range seeds {
		f.Add(s.route, s.id, []byte(s.body))
	}
	env := nstest.New(f)
	svc := env.Open(f)
	ts := httptest.NewServer(restserver.New(svc, restserver.Options{Logger: nstest.Quiet, MaxBodyBytes: 1 << 20}))
	f.Cleanup(ts.Close)
	hc := ts.Client()
	for _, p := range []string{"/v1/namespace/ns/create", "/v1/table/ns$t/declare"} {
		resp, err := hc.Post(ts.URL+p, "application/json", strings.NewReader(`{}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			f.Fatalf("setup %s: %v %v", p, resp, err)
		}
		_ = resp.Body.Close()
	}
	f.Fuzz(func(t *testing.T, routeIdx uint8, id string, body []byte) {
		r := restRoutes[int(routeIdx)%len(restRoutes)]
		p := strings.NewReplacer("{ns}", url.PathEscape(id), "{tb}", url.PathEscape(id)).Replace(r.path)
		if _, err := url.Parse(ts.URL + p); err != nil {
			return
		}
		req, err := http.NewRequest(r.method, ts.URL+p, bytes.NewReader(body))
		if err != nil {
			return
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, p, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		var e struct {
			Code *int `json:"code"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Code == nil {
			t.Fatalf("%s %s %q: HTTP %d without a JSON error: %.300s", r.method, p, body, resp.StatusCode, b)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s %q: HTTP %d code %d: %.300s", r.method, p, body, resp.StatusCode, *e.Code, b)
		}
	})
}

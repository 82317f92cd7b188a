package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/client"
)

// bodyTransport answers every request with body as an event stream.
type bodyTransport string

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(string(b))), Request: r}, nil
}

// feedOf is a client whose server sends body on the change feed.
func feedOf(tb testing.TB, body string) *client.Client {
	c, err := client.New(client.Config{URL: "http://feed.invalid", HTTPClient: &http.Client{Transport: bodyTransport(body)}})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// versionEvent is the SSE message of table version i as the server
// sends it (internal/restserver's sseMessages), its sequence's id after it.
func versionEvent(i int) string {
	return fmt.Sprintf("event: table.version.created\ndata: {\"specversion\":\"1.0\",\"id\":\"%d-0\",\"source\":\"flightns\",\"type\":\"dev.flightns.table.version.created\","+
		"\"time\":\"2026-12-06T22:00:00.123456789Z\",\"subject\":\"ns$t%d\",\"datacontenttype\":\"application/json\",\"data\":{\"seq\":%d,\"time\":\"2026-12-06T22:00:00.123456789Z\","+
		"\"type\":\"table.version.created\",\"id\":[\"ns\",\"t%d\"],\"principal\":\"admin\",\"version\":%d,\"manifest_path\":\"ns/t%d.lance/_versions/%d.manifest\",\"manifest_size\":1234}}\n\nid: %d\n\n",
		i, i%8, i, i%8, i, i%8, i, i)
}

// BenchmarkChangesDecode is what reading the feed costs a Go client, per
// event (what 100 subscribers in feed-commits pay on the server's cores).
func BenchmarkChangesDecode(b *testing.B) {
	const n = 1000
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		sb.WriteString(versionEvent(i))
	}
	c := feedOf(b, sb.String())
	b.ReportAllocs()
	for b.Loop() {
		got := 0
		if _, err := c.Changes(context.Background(), api.ChangesRequest{}, false, func(api.Event) error { got++; return nil }); err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("%d events of %d", got, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

// FuzzChanges sends the client a hostile event stream: it never panics,
// and an event's data, whatever it holds, decodes as encoding/json
// decodes it (the client's go-json must not differ from the standard).
func FuzzChanges(f *testing.F) {
	f.Add(versionEvent(7), `{"data":{"seq":1,"id":["a","b\u00e9"],"time":"2026-01-02T03:04:05Z","versions":[1,2]}}`)
	f.Add("event: error\ndata: {\"error\":\"gone\",\"code\":13}\n\n", `{"data":{"manifest_size":-1,"principal":"\ud800"}}`)
	f.Add("data: {}\nid: 3\n\n:comment\nid: x\n\n", `{"data":{"seq":1e3}}`)
	f.Add("id: 18446744073709551615\n\n", `{"data":null,"data":{"tag":"t"}}`)
	f.Fuzz(func(t *testing.T, stream, data string) {
		_, _ = feedOf(t, stream).Changes(context.Background(), api.ChangesRequest{}, false, func(api.Event) error { return nil })
		if strings.ContainsAny(data, "\r\n") {
			return
		}
		var want struct {
			Data api.Event `json:"data"`
		}
		wantErr := json.Unmarshal([]byte(data), &want)
		var got []api.Event
		_, err := feedOf(t, "data: "+data+"\n\nid: 1\n\n").Changes(context.Background(), api.ChangesRequest{}, false, func(ev api.Event) error {
			got = append(got, ev)
			return nil
		})
		switch {
		case wantErr != nil:
			// go-json may be laxer than the standard; it never panics.
		case err != nil:
			t.Fatalf("encoding/json decodes %q, the client does not: %v", data, err)
		case len(got) != 1 || !reflect.DeepEqual(got[0], want.Data):
			t.Fatalf("%q decodes as %+v, the client's as %+v", data, want.Data, got)
		}
	})
}

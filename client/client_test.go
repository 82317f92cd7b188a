package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/client"
	"github.com/flightns/flightns/nserror"
)

// A call is one POST of the request model to the operation's route, the
// id in the path (the root as the delimiter alone) and the credentials in
// the Authorization header; the reply decodes into the response model.
func TestACallPostsTheModelToItsRoute(t *testing.T) {
	var got struct{ method, path, auth, body string }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.method, got.path, got.auth, got.body = r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"), string(b)
		_, _ = io.WriteString(w, `{"namespaces": ["a", "b"], "page_token": "b"}`)
	}))
	defer srv.Close()
	c, err := client.New(client.Config{URL: srv.URL + "/", User: "ana", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	limit := 2
	resp, err := c.ListNamespaces(context.Background(), api.ListNamespacesRequest{Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	if got.method != http.MethodPost || got.path != "/v1/namespace/$/list" || got.auth != "Basic YW5hOnB3" || got.body != `{"id":null,"limit":2}` {
		t.Errorf("sent %+v", got)
	}
	if len(resp.Namespaces) != 2 || resp.PageToken != "b" {
		t.Errorf("reply %+v", resp)
	}
	if _, err := c.DescribeTable(context.Background(), api.DescribeTableRequest{ID: api.ID{"a b", "t/1"}}); err != nil {
		t.Fatal(err)
	}
	if got.path != "/v1/table/a%20b$t%2F1/describe" {
		t.Errorf("path %q", got.path)
	}
}

// An error reply with a Lance Namespace code is an *nserror.Error with the
// code and the server's message, wrapping the HTTP status; any other is a
// *StatusError with the body.
func TestErrorRepliesKeepTheirCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/table/a$t/exists" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error": "table \"a$t\" does not exist", "code": 4, "detail": "TableNotFound (code 4)"}`)
			return
		}
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "upstream down\n")
	}))
	defer srv.Close()
	c, err := client.New(client.Config{URL: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.TableExists(context.Background(), api.TableExistsRequest{ID: api.ID{"a", "t"}})
	var ne *nserror.Error
	var se *client.StatusError
	if !errors.Is(err, nserror.ErrTableNotFound) || !errors.As(err, &ne) || ne.Message != `table "a$t" does not exist` ||
		!errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Errorf("TableExists: %v", err)
	}
	err = c.NamespaceExists(context.Background(), api.NamespaceExistsRequest{ID: api.ID{"a"}})
	if errors.As(err, &ne) || !errors.As(err, &se) || se.StatusCode != http.StatusBadGateway || se.Body != "upstream down" ||
		err.Error() != "HTTP 502 Bad Gateway: upstream down" {
		t.Errorf("NamespaceExists: %v", err)
	}
}

// A configuration New cannot run is refused before any call.
func TestConfigValidate(t *testing.T) {
	for _, cfg := range []client.Config{
		{URL: "ftp://host:1"},
		{URL: "http://"},
		{URL: "https://host:1", InsecureSkipVerify: true, HTTPClient: http.DefaultClient},
	} {
		if _, err := client.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	cfg := client.Config{}
	cfg.EnsureDefaults()
	if cfg.URL != client.DefaultURL || cfg.Validate() != nil {
		t.Errorf("the default configuration: %+v, %v", cfg, cfg.Validate())
	}
}

// A stream cut inside a sequence gives fn none of that sequence's events,
// and the sequence to resume after is the last whole one: resuming
// repeats nothing.
func TestChangesHandsOnWholeSequencesOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`event: table.declared` + "\n" + `data: {"data": {"seq": 5, "type": "table.declared", "id": ["a", "t"]}}` + "\n\n",
			`event: table.version.created` + "\n" + `data: {"data": {"seq": 5, "type": "table.version.created", "id": ["a", "t"], "version": 1}}` + "\n\n",
			"id: 5\n\n",
			`event: table.declared` + "\n" + `data: {"data": {"seq": 6, "type": "table.declared", "id": ["a", "u"]}}` + "\n\n",
			"id: 6", // cut before the message ends
		} {
			_, _ = io.WriteString(w, ev)
		}
	}))
	defer srv.Close()
	c, err := client.New(client.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	through, err := c.Changes(context.Background(), api.ChangesRequest{After: 4}, false, func(ev api.Event) error {
		got = append(got, ev.Type+" "+ev.ID.String())
		return nil
	})
	if err != nil || through != 5 || len(got) != 2 || got[1] != "table.version.created a$t" {
		t.Fatalf("through %d, %q, %v", through, got, err)
	}
}

package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// DefaultURL is the REST URL of a server on this machine with the
// binary's default --rest-addr.
const DefaultURL = "http://127.0.0.1:31338"

// maxReply bounds the reply read from the server; a longer one does not
// decode.
const maxReply = 64 << 20

// Config says how to reach and authenticate to a server.
type Config struct {
	// URL is the server's REST base URL, http:// or https://, with or
	// without a path prefix (the routes are below its /v1/). Default
	// DefaultURL.
	URL string
	// Token is a bearer token. Without one, User (when set) and
	// Password authenticate with HTTP basic authentication. No
	// credentials: the requests are anonymous.
	Token    string
	User     string
	Password string
	// HTTPClient sends the requests (default http.DefaultClient).
	HTTPClient *http.Client
	// InsecureSkipVerify accepts any certificate from an https:// server
	// (testing only); it builds the HTTP client, so HTTPClient must be
	// unset.
	InsecureSkipVerify bool
}

// EnsureDefaults fills what is unset.
func (c *Config) EnsureDefaults() {
	if c.URL == "" {
		c.URL = DefaultURL
	}
}

// Validate refuses a configuration New cannot run, naming what is wrong.
func (c *Config) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("client: URL %q: %w", c.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("client: URL %q: want http://host:port or https://host:port", c.URL)
	}
	if c.InsecureSkipVerify && c.HTTPClient != nil {
		return errors.New("client: InsecureSkipVerify builds the HTTP client: leave HTTPClient unset")
	}
	return nil
}

// Client runs the operations of one server over its REST API. It is safe
// for concurrent use.
type Client struct {
	base string // the URL without its trailing slash
	auth string // the Authorization header, or ""
	hc   *http.Client
}

// New returns a Client of cfg (defaults filled, then validated). It does
// not connect: the first call does.
func New(cfg Config) (*Client, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{base: strings.TrimSuffix(cfg.URL, "/"), hc: cfg.HTTPClient}
	switch {
	case c.hc != nil:
	case cfg.InsecureSkipVerify:
		c.hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	default:
		c.hc = http.DefaultClient
	}
	switch {
	case cfg.Token != "":
		c.auth = "Bearer " + cfg.Token
	case cfg.User != "":
		c.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.User+":"+cfg.Password))
	}
	return c, nil
}

// StatusError is a reply of the server that is not a success: its HTTP
// status, and its body when the body is not the protocol's error (with
// a Lance Namespace code, the error is an *nserror.Error wrapping the
// StatusError).
type StatusError struct {
	// StatusCode is the HTTP status code (404); Status its line ("404
	// Not Found").
	StatusCode int
	Status     string
	// Body is the reply, trimmed, when it carried no code.
	Body string
}

func (e *StatusError) Error() string { return "HTTP " + e.Status + ": " + e.Body }

// Call runs operation op (an api.Op… name) on the object id (ignored by
// the operations whose route names none: ListAllTables and the batches):
// it posts req as JSON (nil: {}) and decodes the reply into reply (nil,
// or an empty reply: nothing to decode). The typed methods are Call with
// their models; Call serves what they do not, such as keeping a reply as
// sent (a *json.RawMessage).
//
// An error reply with a Lance Namespace code is an *nserror.Error with
// that code and the server's message, wrapping a *StatusError; another
// error reply is a *StatusError.
func (c *Client) Call(ctx context.Context, op string, id api.ID, req, reply any) error {
	path, ok := routes[op]
	if !ok {
		return fmt.Errorf("client: no REST route for operation %q", op)
	}
	if strings.Contains(path, "{id}") {
		s := api.Delimiter // the root: the delimiter alone
		if len(id) > 0 {
			s = id.String()
		}
		path = strings.Replace(path, "{id}", url.PathEscape(s), 1)
	}
	if req == nil {
		req = struct{}{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.auth != "" {
		hr.Header.Set("Authorization", c.auth)
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return replyError(resp, out)
	}
	if reply == nil || len(bytes.TrimSpace(out)) == 0 {
		return nil
	}
	if err := json.Unmarshal(out, reply); err != nil {
		return fmt.Errorf("client: the reply to %s: %w", op, err)
	}
	return nil
}

// replyError is the error of a reply that is not a success.
func replyError(resp *http.Response, body []byte) error {
	status := &StatusError{StatusCode: resp.StatusCode, Status: resp.Status}
	var e struct {
		Error string `json:"error"`
		Code  *int   `json:"code"`
	}
	if json.Unmarshal(body, &e) == nil && e.Code != nil {
		return &nserror.Error{Code: nserror.Code(*e.Code), Message: e.Error, Err: status}
	}
	status.Body = string(bytes.TrimSpace(body))
	return status
}

// call is Call with a reply of type Resp.
func call[Resp any](ctx context.Context, c *Client, op string, id api.ID, req any) (*Resp, error) {
	var resp Resp
	if err := c.Call(ctx, op, id, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

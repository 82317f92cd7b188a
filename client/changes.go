package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	gojson "github.com/goccy/go-json"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

// Changes reads the server's change feed (GET /v1/changes, Server-Sent
// Events) after req.After, narrowed by req's filters, and calls fn with
// each event, in order, each sequence's once the sequence is whole (a
// stream cut inside one gives fn none of it). With follow it keeps reading as changes happen,
// until ctx ends; without, it ends once it has every change appended
// before the request (every change acknowledged before it, that is). It returns the sequence to resume after
// (the last the stream was read through: calling again with it as After
// misses nothing and repeats nothing) and what ended the stream: nil when
// the history asked for ended, ctx's error, fn's, the server's (an
// *nserror.Error, such as InvalidInput for history no longer kept), or,
// when following, io.ErrUnexpectedEOF when the connection ended.
func (c *Client) Changes(ctx context.Context, req api.ChangesRequest, follow bool, fn func(api.Event) error) (through uint64, err error) {
	q := url.Values{"follow": {strconv.FormatBool(follow)}}
	if len(req.Namespace) > 0 {
		q.Set("namespace", req.Namespace.String())
	}
	if len(req.Table) > 0 {
		q.Set("table", req.Table.String())
	}
	for _, t := range req.Types {
		q.Add("type", t)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/changes?"+q.Encode(), nil)
	if err != nil {
		return req.After, err
	}
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("Last-Event-ID", strconv.FormatUint(req.After, 10))
	if c.auth != "" {
		hr.Header.Set("Authorization", c.auth)
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return req.After, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
		return req.After, replyError(resp, body)
	}
	through = req.After
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, maxReply)
	// Of the message being read (one the stream's end cuts counts for
	// nothing): its fields, copied out of the scanner's buffer.
	var event, data, id []byte
	var pending []api.Event // the events of a sequence whose id has not come yet
	for sc.Scan() {
		line := sc.Bytes()
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch {
		case len(line) != 0:
			switch string(field) {
			case "event":
				event = append(event[:0], value...)
			case "data":
				data = append(data[:0], value...)
			case "id":
				id = append(id[:0], value...)
			}
			continue
		case len(id) != 0:
			n, err := strconv.ParseUint(string(id), 10, 64)
			if err != nil {
				return through, fmt.Errorf("client: the change feed sent the id %q", id)
			}
			// The sequence is whole: its events go to fn now, and a
			// resume after n repeats none of them.
			for _, ev := range pending {
				if err := fn(ev); err != nil {
					return through, err
				}
			}
			pending, through = pending[:0], n
		case string(event) == "error":
			var e struct {
				Error string `json:"error"`
				Code  int    `json:"code"`
			}
			if err := json.Unmarshal(data, &e); err != nil {
				return through, fmt.Errorf("client: the change feed failed: %s", data)
			}
			return through, &nserror.Error{Code: nserror.Code(e.Code), Message: e.Error}
		case len(data) != 0:
			// go-json (in the build already, by Arrow) rather than
			// encoding/json: reading an event costs a Go subscriber a third
			// of what it did (BenchmarkChangesDecode); FuzzChanges holds it
			// to encoding/json's results.
			var ce struct {
				Data api.Event `json:"data"`
			}
			if err := gojson.Unmarshal(data, &ce); err != nil {
				return through, fmt.Errorf("client: an event of the change feed: %w", err)
			}
			pending = append(pending, ce.Data)
		}
		event, data, id = event[:0], data[:0], id[:0]
	}
	if err := ctx.Err(); err != nil {
		return through, err
	}
	if err := sc.Err(); err != nil {
		return through, err
	}
	if follow {
		// A following stream has no end of its own: its body ends where the
		// connection does (a server that stopped, a subscriber cut off).
		return through, fmt.Errorf("client: the change feed's connection ended after sequence %d: %w", through, io.ErrUnexpectedEOF)
	}
	return through, nil
}

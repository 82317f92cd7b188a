package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

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
// the history asked for ended, ctx's error, fn's, or the server's (an
// *nserror.Error, such as InvalidInput for history no longer kept).
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
	var event, data, id string // of the message being read: one the stream's end cuts counts for nothing
	var pending []api.Event    // the events of a sequence whose id has not come yet
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line != "":
			switch field {
			case "event":
				event = value
			case "data":
				data = value
			case "id":
				id = value
			}
			continue
		case id != "":
			n, err := strconv.ParseUint(id, 10, 64)
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
		case event == "error":
			var e struct {
				Error string `json:"error"`
				Code  int    `json:"code"`
			}
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				return through, fmt.Errorf("client: the change feed failed: %s", data)
			}
			return through, &nserror.Error{Code: nserror.Code(e.Code), Message: e.Error}
		case data != "":
			var ce struct {
				Data api.Event `json:"data"`
			}
			if err := json.Unmarshal([]byte(data), &ce); err != nil {
				return through, fmt.Errorf("client: an event of the change feed: %w", err)
			}
			pending = append(pending, ce.Data)
		}
		event, data, id = "", "", ""
	}
	if err := ctx.Err(); err != nil {
		return through, err
	}
	return through, sc.Err()
}

package restserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/nserror"
)

// ChangesPath is the change feed's route: Server-Sent Events, each a
// CloudEvents 1.0 JSON event (docs/rest.md, "Change feed").
const ChangesPath = "/v1/changes"

// cloudEvent is the CloudEvents 1.0 JSON projection of an event. Its id,
// <sequence>-<index in the sequence>, is unique in the feed.
type cloudEvent struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            string    `json:"type"`
	Time            time.Time `json:"time"`
	Subject         string    `json:"subject,omitempty"`
	DataContentType string    `json:"datacontenttype"`
	Data            api.Event `json:"data"`
}

// eventTypePrefix makes an event's type a CloudEvents type.
const eventTypePrefix = "dev.flightns."

// changes streams the change feed after the Last-Event-ID header (or the
// query parameter after) to the caller, what it may read, narrowed by the
// query parameters namespace, table (ids in the delimiter's form) and
// type (repeated, or comma-separated); with follow=false it ends once it
// has sent every change appended before the request. Each sequence's
// events are written together, then a message of the id alone (the sequence the feed has
// been read through): a client that reconnects with the last id it saw
// misses nothing and gets nothing twice but, after a cut inside a
// sequence, the events of that sequence it already has (the same
// CloudEvents ids). A client that takes nothing for
// Options.StalledFeedTimeout is cut off, and resumes so.
func (h *handler) changes(w http.ResponseWriter, r *http.Request) error {
	if err := CrossSite(r); err != nil {
		return err
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		return withStatus(http.StatusMethodNotAllowed, nserror.InvalidInput, "the change feed takes GET, not %s", r.Method)
	}
	who, err := h.authenticate(r)
	if err != nil {
		return err
	}
	req, err := changesRequest(r)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil // the client is gone
	}
	ctx, stop := context.WithCancel(auth.WithPrincipal(r.Context(), who))
	defer stop()
	if h.closing != nil {
		go func() {
			select {
			case <-h.closing:
				stop()
			case <-ctx.Done():
			}
		}()
	}
	err = h.svc.FollowChanges(ctx, req, func(b *namespace.ChangeBatch) error {
		msgs, err := namespace.EncodedBatch(b, sseBatch{}, sseMessages)
		if err != nil {
			return err
		}
		// A client that takes nothing for the stall timeout is cut off: it
		// resumes with the last id it has.
		_ = rc.SetWriteDeadline(time.Now().Add(h.stalled))
		if _, err := w.Write(msgs); err != nil {
			return err
		}
		return rc.Flush()
	})
	if ctx.Err() != nil || err == nil {
		return nil
	}
	// The stream has begun: the error is its last event.
	b, _ := json.Marshal(map[string]any{"error": err.Error(), "code": nserror.CodeOf(err)})
	_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
	_ = rc.Flush()
	return nil
}

// sseBatch keys a batch's messages (namespace.EncodedBatch).
type sseBatch struct{}

// sseMessages is a batch of the feed as messages of the event stream: each
// sequence's events, each as its CloudEvents JSON, then a message of the
// id alone (the sequence the feed has been read through), so that a cut
// repeats at most one sequence's events.
func sseMessages(b *namespace.ChangeBatch) ([]byte, error) {
	var buf bytes.Buffer
	events := b.Events
	n := 0 // the event's place in its sequence
	for i, ev := range events {
		if n++; i == 0 || events[i-1].Seq != ev.Seq {
			n = 0
		}
		j, err := json.Marshal(cloudEvent{SpecVersion: "1.0", ID: fmt.Sprintf("%d-%d", ev.Seq, n), Source: "flightns",
			Type: eventTypePrefix + ev.Type, Time: ev.Time, Subject: ev.ID.String(), DataContentType: "application/json", Data: ev})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", ev.Type, j)
		if i+1 < len(events) && events[i+1].Seq != ev.Seq {
			fmt.Fprintf(&buf, "id: %d\n\n", ev.Seq)
		}
	}
	fmt.Fprintf(&buf, "id: %d\n\n", b.Through)
	return buf.Bytes(), nil
}

// changesRequest reads the feed's request from r: after (Last-Event-ID
// over the query's after), the filters.
func changesRequest(r *http.Request) (api.ChangesRequest, error) {
	q := r.URL.Query()
	var req api.ChangesRequest
	after := q.Get("after")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after = id
	}
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil {
			return req, nserror.New(nserror.InvalidInput, "the change feed resumes after a sequence (a number), not %q", after)
		}
		req.After = n
	}
	delim, err := delimiterOf(q)
	if err != nil {
		return req, err
	}
	for _, f := range []struct {
		name string
		into *api.ID
	}{{"namespace", &req.Namespace}, {"table", &req.Table}} {
		if v := q.Get(f.name); v != "" {
			if *f.into, err = api.ParseID(v, delim); err != nil {
				return req, err
			}
		}
	}
	if v := q.Get("follow"); v != "" {
		follow, err := strconv.ParseBool(v)
		if err != nil {
			return req, nserror.New(nserror.InvalidInput, "follow is true or false, not %q", v)
		}
		req.Follow = &follow
	}
	for _, t := range q["type"] {
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				req.Types = append(req.Types, s)
			}
		}
	}
	return req, nil
}

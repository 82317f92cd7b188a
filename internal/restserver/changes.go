package restserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/gzipshare"
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
	held, release, err := h.svc.HoldFeed(auth.WithPrincipal(r.Context(), who))
	if err != nil {
		return err // before the stream begins: a refusal is its status
	}
	defer release()
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Add("Vary", "Accept-Encoding")
	if r.ProtoMajor == 1 && req.Following() {
		// A stream that follows ends only when the connection does: its
		// body is delimited by the close, not chunked (what net/http does
		// for "identity", as the SSE recommendation suggests), so that a
		// batch leaves in one write(2), not three (the chunk's size line
		// filling the connection's 4 KiB buffer, the rest, the CRLF).
		hdr.Set("Transfer-Encoding", "identity")
	}
	out := sseWriter{w: w}
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		hdr.Set("Content-Encoding", "gzip")
		out.gz = gzipshare.NewStream(w)
	}
	w.WriteHeader(http.StatusOK)
	if err := out.start(); err != nil {
		return nil // the client is gone
	}
	if err := rc.Flush(); err != nil {
		return nil // the client is gone
	}
	ctx, stop := context.WithCancel(auth.WithRecheck(held, func() (auth.Principal, error) { return h.authenticate(r) }))
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
		// A client that takes nothing for the stall timeout is cut off: it
		// resumes with the last id it has.
		_ = rc.SetWriteDeadline(time.Now().Add(h.stalled))
		if err := out.batch(b); err != nil {
			return err
		}
		return rc.Flush()
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil { // the stream has begun: the error is its last event
		j, _ := json.Marshal(map[string]any{"error": err.Error(), "code": nserror.CodeOf(err)})
		if out.message([]byte(fmt.Sprintf("event: error\ndata: %s\n\n", j))) != nil {
			return nil
		}
	}
	if out.end() == nil {
		_ = rc.Flush()
	}
	return nil
}

// sseWriter writes the event stream to a client, gzipped when gz is set:
// a batch's messages are then compressed once (namespace.EncodedBatch)
// for every follower that shares the batch, which each write only the
// compressed bytes, a tenth of the messages' (gzipshare).
type sseWriter struct {
	w  io.Writer
	gz *gzipshare.Stream
}

func (o sseWriter) start() error {
	if o.gz == nil {
		return nil
	}
	return o.gz.Start()
}

// batch writes the messages of b.
func (o sseWriter) batch(b *namespace.ChangeBatch) error {
	if o.gz == nil {
		msgs, err := namespace.EncodedBatch(b, sseBatch{}, sseMessages)
		if err != nil {
			return err
		}
		_, err = o.w.Write(msgs)
		return err
	}
	p, err := namespace.EncodedBatch(b, sseGzipBatch{}, func(b *namespace.ChangeBatch) (gzipshare.Piece, error) {
		msgs, err := namespace.EncodedBatch(b, sseBatch{}, sseMessages)
		if err != nil {
			return gzipshare.Piece{}, err
		}
		return gzipshare.Compress(msgs)
	})
	if err != nil {
		return err
	}
	return o.gz.Write(p)
}

// message writes one message of this client's alone.
func (o sseWriter) message(m []byte) error {
	if o.gz == nil {
		_, err := o.w.Write(m)
		return err
	}
	p, err := gzipshare.Compress(m)
	if err != nil {
		return err
	}
	return o.gz.Write(p)
}

// end ends the stream (the gzip trailer).
func (o sseWriter) end() error {
	if o.gz == nil {
		return nil
	}
	return o.gz.Close()
}

// acceptsGzip is whether Accept-Encoding values accept gzip: named (or
// "*" with gzip not refused) with a quality above 0.
func acceptsGzip(values []string) bool {
	star := false
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(item), ";")
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					}
				}
			}
			switch name = strings.ToLower(strings.TrimSpace(name)); name {
			case "gzip", "x-gzip":
				return q > 0
			case "*":
				star = q > 0
			}
		}
	}
	return star
}

// sseGzipBatch keys a batch's messages compressed (namespace.EncodedBatch).
type sseGzipBatch struct{}

// sseBatch keys a batch's messages (namespace.EncodedBatch).
type sseBatch struct{}

// sseMessages is a batch of the feed as messages of the event stream: each
// sequence's events, each as its CloudEvents JSON, then a message of the
// id alone (the sequence the feed has been read through), so that a cut
// repeats at most one sequence's events.
func sseMessages(b *namespace.ChangeBatch) ([]byte, error) {
	data, err := namespace.EventsJSON(b)
	if err != nil {
		return nil, err
	}
	var buf []byte
	events := b.Events
	n := 0 // the event's place in its sequence
	for i, ev := range events {
		if n++; i == 0 || events[i-1].Seq != ev.Seq {
			n = 0
		}
		buf = append(append(append(buf, "event: "...), ev.Type...), "\ndata: "...)
		if buf, err = appendCloudEvent(buf, ev, n, data[i]); err != nil {
			return nil, err
		}
		buf = append(buf, "\n\n"...)
		if i+1 < len(events) && events[i+1].Seq != ev.Seq {
			buf = appendID(buf, ev.Seq)
		}
	}
	return appendID(buf, b.Through), nil
}

// appendID appends the message of a sequence's id alone.
func appendID(buf []byte, seq uint64) []byte {
	return append(strconv.AppendUint(append(buf, "id: "...), seq, 10), "\n\n"...)
}

// appendCloudEvent appends ev, the n-th event of its sequence, whose JSON
// is data (namespace.EventsJSON), as its CloudEvents JSON (cloudEvent),
// made by hand: json.Marshal of a struct holding data as a RawMessage
// validates and compacts data again, which took most of a batch's
// encoding. TestCloudEventsAreWhatJSONMarshalMakes holds it equal to
// json.Marshal's.
func appendCloudEvent(buf []byte, ev api.Event, n int, data []byte) ([]byte, error) {
	at, err := ev.Time.MarshalJSON()
	if err != nil {
		return nil, err
	}
	buf = append(buf, `{"specversion":"1.0","id":"`...)
	buf = strconv.AppendUint(buf, ev.Seq, 10)
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, `","source":"flightns","type":`...)
	if buf, err = appendJSONString(buf, eventTypePrefix+ev.Type); err != nil {
		return nil, err
	}
	buf = append(append(buf, `,"time":`...), at...)
	if subject := ev.ID.String(); subject != "" {
		if buf, err = appendJSONString(append(buf, `,"subject":`...), subject); err != nil {
			return nil, err
		}
	}
	buf = append(buf, `,"datacontenttype":"application/json","data":`...)
	return append(append(buf, data...), '}'), nil
}

// appendJSONString appends s as encoding/json writes a string.
func appendJSONString(buf []byte, s string) ([]byte, error) {
	j, err := json.Marshal(s)
	return append(buf, j...), err
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
	return req, req.Validate() // before the stream begins: a refusal is its status
}

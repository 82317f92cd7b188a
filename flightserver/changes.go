package flightserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"google.golang.org/protobuf/proto"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/nserror"
)

// The change feed on Flight (docs/flight.md, "Change feed"): DoGet on a
// ticket "flightns-changes:" followed by the JSON of a changesTicket
// (ChangesTicket makes one) streams the feed as Arrow record batches, one per stretch of whole
// sequences, each with the sequence it runs through as its app metadata
// (decimal): resuming after the last one received misses nothing and
// repeats nothing. GetFlightInfo on a CMD descriptor {"changes": {…}}
// answers the schema and that ticket.

// changesTicketPrefix starts the tickets of the change feed.
const changesTicketPrefix = "flightns-changes:"

// changesCommandKey is the key of a change feed command descriptor.
const changesCommandKey = `"changes"`

// ChangesSchema is the change feed's schema on Flight: the fields every
// consumer routes by, typed, and the whole event as JSON (the object the
// REST feed sends as its CloudEvents data), so that new kinds of event
// and their fields need no new column.
var ChangesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "type", Type: arrow.BinaryTypes.String},
	{Name: "id", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "principal", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "txn_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "branch", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "version", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "event", Type: arrow.BinaryTypes.String},
}, nil)

// ChangesThrough reads the sequence a batch of the feed runs through from
// its app metadata.
func ChangesThrough(appMetadata []byte) (uint64, error) {
	return strconv.ParseUint(string(appMetadata), 10, 64)
}

// changesTicket is a change feed ticket's request: the feed's, and how
// its record batches are compressed.
type changesTicket struct {
	api.ChangesRequest
	// Compression is the Arrow IPC body compression of the batches'
	// buffers, "zstd" or "lz4_frame" (none when empty): made once per
	// batch for every subscriber sharing it, it cuts what each is sent
	// (Arrow readers decompress it; Java's need arrow-compression).
	Compression string `json:"compression,omitempty"`
}

// ChangesTicket is the DoGet ticket of the change feed req asks for, its
// batches compressed so ("" none, "lz4_frame" or "zstd").
func ChangesTicket(req api.ChangesRequest, compression string) (*flight.Ticket, error) {
	b, err := json.Marshal(changesTicket{ChangesRequest: req, Compression: compression})
	if err != nil {
		return nil, err
	}
	return &flight.Ticket{Ticket: append([]byte(changesTicketPrefix), b...)}, nil
}

// changesCompressions are the compressions a ticket may ask for.
var changesCompressions = map[string]ipc.Option{"zstd": ipc.WithZstd(), "lz4_frame": ipc.WithLZ4()}

// parseChangesTicket reads a ticket's request (after the prefix).
func parseChangesTicket(b []byte) (changesTicket, error) {
	var t changesTicket
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, nserror.New(nserror.InvalidInput, "a change feed ticket is %s{\"after\": N, \"namespace\": [...], \"table\": [...], \"types\": [...], \"follow\": bool, \"compression\": \"zstd\"}: %v", changesTicketPrefix, err)
	}
	if dec.More() {
		return t, nserror.New(nserror.InvalidInput, "a change feed ticket holds one JSON object")
	}
	if _, ok := changesCompressions[t.Compression]; t.Compression != "" && !ok {
		return t, nserror.New(nserror.InvalidInput, "a change feed's compression is zstd or lz4_frame, not %q", t.Compression)
	}
	return t, t.Validate()
}

// changesInfo answers a change feed command: its schema and ticket.
func (s *Server) changesInfo(desc *flight.FlightDescriptor, req json.RawMessage) (*flight.FlightInfo, error) {
	if _, err := parseChangesTicket(req); err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(ChangesSchema, s.alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: append([]byte(changesTicketPrefix), req...)}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// doChanges streams the change feed a ticket asks for, what the caller
// may read (namespace.Service.FollowChanges). A client that takes no
// batch for StalledResultTimeout is cut off with Throttling, naming the
// sequence to resume after: a stuck subscriber holds one batch and no
// goroutine past that. The stream ends as the server's drain begins.
func (s *Server) doChanges(rest []byte, stream flight.FlightService_DoGetServer) error {
	t, err := parseChangesTicket(rest)
	if err != nil {
		return err
	}
	held, release, err := s.svc.HoldFeed(stream.Context())
	if err != nil {
		return err
	}
	defer release()
	// The headers go now, so that a client knows the stream is live
	// before the first change.
	if err := stream.SendHeader(nil); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(auth.WithRecheck(held, func() (auth.Principal, error) { return s.authenticate(stream.Context()) }))
	defer stop()
	go func() {
		select {
		case <-s.closing:
			stop()
		case <-ctx.Done():
		}
	}()
	// The writer runs apart, so that a client that stops reading cannot
	// hold this handler: when it takes nothing for the stall timeout the
	// handler returns, gRPC ends the stream, and the writer's blocked send
	// fails. It sends the schema first, then each batch's messages as
	// every subscriber sharing the batch gets them.
	out := make(chan []wireMessage)
	written := make(chan error, 2) // a batch's, unread when the client stalled, and the end's
	go func() {
		defer func() { // the handler's recovery does not reach this goroutine
			if v := recover(); v != nil {
				err := s.recovered("streaming the change feed", v)
				written <- err
				for range out {
				}
				written <- err
			}
		}()
		schema, err := changesSchemaMessage()
		if err == nil {
			err = stream.SendMsg(schema)
		}
		for msgs := range out {
			for _, m := range msgs {
				if err == nil {
					err = stream.SendMsg(m)
				}
			}
			written <- err
		}
		written <- err
	}()
	sent, stalled := t.After, false
	timeout := s.limits.StalledResultTimeout
	stall := time.NewTimer(timeout)
	defer stall.Stop()
	ferr := s.svc.FollowChanges(ctx, t.ChangesRequest, func(b *namespace.ChangeBatch) error {
		msgs, err := namespace.EncodedBatch(b, flightBatch{t.Compression}, func(b *namespace.ChangeBatch) ([]wireMessage, error) {
			return changesMessages(s.alloc, b, t.Compression)
		})
		if err != nil {
			return err
		}
		stall.Reset(timeout)
		out <- msgs // the writer waits for it
		select {
		case err := <-written:
			if err != nil {
				return err
			}
		case <-stall.C:
			stalled = true
			return errStalledFeed(timeout, sent)
		}
		sent = b.Through
		return nil
	})
	close(out)
	if stalled {
		s.log.Warn("a change feed subscriber stopped reading; it is cut off", "timeout", timeout, "after", sent)
		return limitError("%v", ferr) // the writer's send fails as the stream ends
	}
	if err := <-written; err != nil {
		return err
	}
	if ferr != nil && ctx.Err() == nil {
		return ferr
	}
	if stream.Context().Err() != nil {
		return stream.Context().Err()
	}
	return nil
}

// errStalledFeed is the error of a subscriber that took nothing for
// timeout, having received the feed through after.
func errStalledFeed(timeout time.Duration, after uint64) error {
	return nserror.New(nserror.Throttling, "the subscriber took nothing for %s and was cut off: resume after sequence %d", timeout, after)
}

// flightBatch keys a batch's Flight messages (namespace.EncodedBatch),
// compressed so.
type flightBatch struct{ compression string }

// changesMessages is a batch of the feed as the Flight messages of its
// record batch, marshalled, its app metadata the sequence it runs
// through, its buffers compressed as compression says (changesTicket):
// every subscriber the batch is shared by is sent these bytes.
func changesMessages(alloc memory.Allocator, b *namespace.ChangeBatch, compression string) ([]wireMessage, error) {
	data, err := namespace.EventsJSON(b)
	if err != nil {
		return nil, err
	}
	rec, err := changesRecord(alloc, b.Events, data)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	var c messages
	opts := []ipc.Option{ipc.WithSchema(ChangesSchema), ipc.WithAllocator(alloc)}
	if o, ok := changesCompressions[compression]; ok {
		opts = append(opts, o)
	}
	w := flight.NewRecordWriter(&c, opts...)
	if err := w.WriteWithAppMetadata(rec, []byte(strconv.FormatUint(b.Through, 10))); err != nil {
		return nil, err
	}
	if len(c) < 2 {
		return nil, nserror.New(nserror.Internal, "flightserver: a change feed batch made %d Flight messages", len(c))
	}
	return c[1:], nil // the first is the schema, which each stream sends once
}

// changesSchemaMessage is the Flight message of ChangesSchema,
// marshalled: a stream's first.
var changesSchemaMessage = sync.OnceValues(func() (wireMessage, error) {
	var c messages
	if err := flight.NewRecordWriter(&c, ipc.WithSchema(ChangesSchema)).Close(); err != nil {
		return nil, err
	}
	if len(c) == 0 {
		return nil, nserror.New(nserror.Internal, "flightserver: the change feed's schema made no Flight message")
	}
	return c[0], nil
})

// messages keeps the Flight messages an ipc writer sends, marshalled.
type messages []wireMessage

func (m *messages) Send(fd *flight.FlightData) error {
	b, err := proto.Marshal(fd)
	*m = append(*m, b)
	return err
}

// changesRecord is events as a record batch of ChangesSchema; data[i] is
// the JSON of events[i] (namespace.EventsJSON).
func changesRecord(alloc memory.Allocator, events []api.Event, data [][]byte) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(alloc, ChangesSchema)
	defer b.Release()
	seq := b.Field(0).(*array.Uint64Builder)
	at := b.Field(1).(*array.TimestampBuilder)
	typ := b.Field(2).(*array.StringBuilder)
	id := b.Field(3).(*array.ListBuilder)
	idv := id.ValueBuilder().(*array.StringBuilder)
	principal := b.Field(4).(*array.StringBuilder)
	txn := b.Field(5).(*array.StringBuilder)
	branch := b.Field(6).(*array.StringBuilder)
	version := b.Field(7).(*array.Uint64Builder)
	whole := b.Field(8).(*array.StringBuilder)
	optional := func(sb *array.StringBuilder, v string) {
		if v == "" {
			sb.AppendNull()
		} else {
			sb.Append(v)
		}
	}
	for i, ev := range events {
		seq.Append(ev.Seq)
		at.Append(arrow.Timestamp(ev.Time.UnixMicro()))
		typ.Append(ev.Type)
		if len(ev.ID) == 0 {
			id.AppendNull()
		} else {
			id.Append(true)
			for _, part := range ev.ID {
				idv.Append(part)
			}
		}
		optional(principal, ev.Principal)
		optional(txn, ev.TxnID)
		optional(branch, ev.Branch)
		if ev.Version == 0 {
			version.AppendNull()
		} else {
			version.Append(ev.Version)
		}
		whole.BinaryBuilder.Append(data[i])
	}
	return b.NewRecordBatch(), nil
}

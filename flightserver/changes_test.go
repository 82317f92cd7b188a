package flightserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/namespace"
)

// feedReader reads a change feed stream: its events and the sequence it
// was read through.
type feedReader struct {
	events  []api.Event
	through uint64
}

// ticketFor is a change feed ticket for t, uncompressed.
func ticketFor(t api.ChangesRequest) *flight.Ticket {
	tk, err := ChangesTicket(t, "")
	if err != nil {
		panic(err)
	}
	return tk
}

// read reads stream until it ends or until stop says it has enough,
// checking each batch's columns against its event JSON.
func (f *feedReader) read(t *testing.T, stream flight.FlightService_DoGetClient, stop func(*feedReader) bool) error {
	t.Helper()
	rd, err := flight.NewRecordReader(stream)
	if err != nil {
		return err
	}
	defer rd.Release()
	if !rd.Schema().Equal(ChangesSchema) {
		t.Fatalf("schema %v", rd.Schema())
	}
	for rd.Next() {
		rec := rd.RecordBatch()
		through, err := ChangesThrough(rd.LatestAppMetadata())
		if err != nil || through <= f.through {
			t.Fatalf("batch app metadata %q after %d: %v", rd.LatestAppMetadata(), f.through, err)
		}
		seq := rec.Column(0).(*array.Uint64)
		typ := rec.Column(2).(*array.String)
		whole := rec.Column(8).(*array.String)
		for i := range int(rec.NumRows()) {
			var ev api.Event
			if err := json.Unmarshal([]byte(whole.Value(i)), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Seq != seq.Value(i) || ev.Type != typ.Value(i) || ev.Seq <= f.through || ev.Seq > through {
				t.Fatalf("row %d: seq %d type %s, event %+v, batch after %d through %d", i, seq.Value(i), typ.Value(i), ev, f.through, through)
			}
			f.events = append(f.events, ev)
		}
		f.through = through
		if stop != nil && stop(f) {
			return nil
		}
	}
	return rd.Err()
}

func (f *feedReader) types() []string {
	var out []string
	for _, ev := range f.events {
		out = append(out, ev.Type+" "+ev.ID.String())
	}
	return out
}

// The change feed on Flight: GetFlightInfo on a changes command answers
// its ticket; DoGet streams the history, then each change as it happens,
// each batch naming the sequence it runs through; a follow=false stream
// ends after the history; resuming after any batch repeats nothing.
func TestTheChangeFeedStreamsOverFlight(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client().Client
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	info, err := c.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"changes": {"follow": false}}`)})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	var history feedReader
	if err := history.read(t, stream, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"namespace.created sales", "namespace.created ops", "table.declared sales$items", "table.declared sales$orders",
		"table.version.created sales$orders", "table.version.created sales$orders", "table.version.created sales$orders"}
	if got := history.types(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("history %q, want %q", got, want)
	}

	// Following: the history, then what happens.
	live, err := c.DoGet(ctx, ticketFor(api.ChangesRequest{After: history.events[2].Seq}))
	if err != nil {
		t.Fatal(err)
	}
	var f feedReader
	f.through = history.events[2].Seq
	done := make(chan error, 1)
	go func() {
		done <- f.read(t, live, func(f *feedReader) bool { return len(f.events) >= 5 })
	}()
	must(e.svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{"late"}}))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := f.types(); strings.Join(got, ",") != strings.Join(append(want[3:], "namespace.created late"), ",") {
		t.Fatalf("followed %q", got)
	}

	// Filters narrow: the types and the table asked for.
	only, err := c.DoGet(ctx, ticketFor(api.ChangesRequest{Table: api.ID{"sales", "orders"}, Types: []string{api.EventVersionCreated}, Follow: new(false)}))
	if err != nil {
		t.Fatal(err)
	}
	var o feedReader
	if err := o.read(t, only, nil); err != nil {
		t.Fatal(err)
	}
	if len(o.events) != 3 || o.through < f.through {
		t.Fatalf("filtered: %q through %d (followed through %d)", o.types(), o.through, f.through)
	}

	// Compressed as the ticket asks: the same events, fewer bytes (the
	// reader decompresses the buffers).
	for _, compression := range []string{"lz4_frame", "zstd"} {
		body := fmt.Sprintf(`{"follow": false, "compression": %q}`, compression)
		zs, err := c.DoGet(ctx, &flight.Ticket{Ticket: []byte(changesTicketPrefix + body)})
		if err != nil {
			t.Fatal(err)
		}
		var z feedReader
		if err := z.read(t, zs, nil); err != nil {
			t.Fatalf("%s: %v", compression, err)
		}
		if got, want := strings.Join(z.types(), ","), strings.Join(append(want, "namespace.created late"), ","); got != want {
			t.Fatalf("%s: %q, want %q", compression, got, want)
		}
	}
}

// A ticket that is no change feed request is InvalidArgument, before
// anything streams.
func TestAChangeFeedTicketIsChecked(t *testing.T) {
	e := start(t)
	c := e.client().Client
	ctx := context.Background()
	for _, body := range []string{``, `{`, `[]`, `{"after": -1}`, `{"after": "x"}`, `{"bogus": 1}`, `{} {}`, `{"table": ["a", ""]}`, `{"namespace": [""]}`, `{"compression": "gzip"}`, `{"compression": 1}`, `{"types": ["table.version.creatd"]}`, `{"types": ["` + strings.Repeat("<", 1<<16) + `"]}`} {
		stream, err := c.DoGet(ctx, &flight.Ticket{Ticket: []byte(changesTicketPrefix + body)})
		if err == nil {
			_, err = stream.Recv()
		}
		wantStatus(t, "ticket "+body, err, codes.InvalidArgument)
		_, err = c.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"changes": ` + body + `}`)})
		if body != `{"table": ["a", ""]}` && body != `{"namespace": [""]}` { // ids are checked as the feed starts
			wantStatus(t, "command "+body, err, codes.InvalidArgument)
		}
	}
}

// A subscriber that stops reading is cut off once the server's send has
// waited StalledResultTimeout, with a ResourceExhausted error naming the
// sequence to resume after; it resumes there with no gap and no repeat.
func TestAStalledSubscriberIsCutOffAndResumes(t *testing.T) {
	e := start(t, func(c *Config) { c.Limits.StalledResultTimeout = 300 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	c := flight.NewFlightServiceClient(conn)
	stream, err := c.DoGet(ctx, ticketFor(api.ChangesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatal(err)
	}
	// While the subscriber reads nothing, changes enough to fill the
	// stream's flow-control windows a few times over (a client window of
	// 64 KiB: no BDP growth): 322 events of about 1.6 KB, in many
	// batches.
	p, q := strings.Repeat("p", 250), strings.Repeat("q", 250)
	must(e.svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{p}}))
	must(e.svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{p, q}}))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 40 {
				must(e.svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{p, q, fmt.Sprintf("%0240d-%d", i, w)}}))
			}
		})
	}
	wg.Wait()
	time.Sleep(time.Second) // the server's send stalls and it gives up
	var first feedReader
	err = first.read(t, stream, nil)
	st := wantStatus(t, "a stalled subscriber", err, codes.ResourceExhausted)
	var after uint64
	if _, err := fmt.Sscanf(st.Message()[strings.Index(st.Message(), "resume after sequence"):], "resume after sequence %d", &after); err != nil {
		t.Fatalf("%q names no sequence: %v", st.Message(), err)
	}
	if after != first.through || len(first.events) == 0 || len(first.events) >= 322 {
		t.Fatalf("cut off after %d, read %d events through %d", after, len(first.events), first.through)
	}
	rest, err := c.DoGet(ctx, ticketFor(api.ChangesRequest{After: after, Follow: new(false)}))
	if err != nil {
		t.Fatal(err)
	}
	second := feedReader{through: after}
	if err := second.read(t, rest, nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ev := range append(first.events, second.events...) {
		if seen[ev.ID.String()] {
			t.Fatalf("%s twice", ev.ID)
		}
		seen[ev.ID.String()] = true
	}
	if len(seen) != 322 {
		t.Fatalf("%d events in all, want 322", len(seen))
	}
}

// The server's stop ends a following stream (it would hold a graceful
// stop for ever).
func TestAFollowingStreamEndsAsTheServerStops(t *testing.T) {
	e := start(t)
	c := e.client().Client
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := c.DoGet(ctx, ticketFor(api.ChangesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { e.srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("the graceful stop waited for the follower")
	}
	var f feedReader
	if err := f.read(t, stream, nil); err != nil {
		t.Fatalf("the stream ended with %v", err)
	}
}

// Subscribers at one place share each batch's messages (marshalled once,
// namespace.EncodedBatch); a subscriber whose client asks for gzip gets
// them compressed all the same, and every one reads the same feed.
func TestSubscribersShareTheFeedsMessages(t *testing.T) {
	e := start(t)
	e.seed()
	c := e.client().Client
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	head, err := e.svc.Table().Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts := [][]grpc.CallOption{nil, nil, {grpc.UseCompressor(gzip.Name)}}
	readers := make([]feedReader, len(opts))
	done := make(chan error, len(opts))
	for i, o := range opts {
		stream, err := c.DoGet(ctx, ticketFor(api.ChangesRequest{After: head}), o...)
		if err != nil {
			t.Fatal(err)
		}
		readers[i].through = head
		go func() {
			done <- readers[i].read(t, stream, func(f *feedReader) bool { return len(f.events) >= 20 })
		}()
	}
	for i := range 20 {
		must(e.svc.CreateNamespace(ctx, api.CreateNamespaceRequest{ID: api.ID{fmt.Sprintf("n%02d", i)}}))
	}
	for range opts {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Join(readers[0].types(), ",")
	for i, r := range readers {
		if got := strings.Join(r.types(), ","); got != want || len(r.events) != 20 {
			t.Fatalf("subscriber %d read %q, subscriber 0 %q", i, got, want)
		}
	}
}

// A batch compressed as a ticket asks is sent in fewer bytes than plain.
func TestCompressedChangeBatchesAreSmaller(t *testing.T) {
	var b namespace.ChangeBatch
	for i := range 200 {
		b.Events = append(b.Events, api.Event{Seq: uint64(1000 + i), Time: time.Unix(1_800_000_000, 0), Type: api.EventVersionCreated,
			ID: api.ID{"sales", fmt.Sprintf("t%d", i%8)}, Version: uint64(i + 1), ManifestPath: fmt.Sprintf("sales/t%d.lance/_versions/%d.manifest", i%8, i+1)})
	}
	b.Through = 1199
	size := func(compression string) int {
		msgs, err := changesMessages(memory.DefaultAllocator, &b, compression)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range msgs {
			n += len(m)
		}
		return n
	}
	plain := size("")
	for _, c := range []string{"lz4_frame", "zstd"} {
		if n := size(c); n*3 > plain {
			t.Errorf("%s: %d bytes, plain %d: want a third or less", c, n, plain)
		}
	}
}

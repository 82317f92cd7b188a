package flightserver

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
)

// The metadata of one call is bounded (Limits.MaxMetadataBytes, 64 KiB):
// issue 43 sent 3 MB of it and it was taken. A call past the bound is
// refused before any handler runs, whether its client honours the bound
// the server advertises (gRPC's does) or not (a raw HTTP/2 stream), and
// the server answers the next call.
func TestOversizedMetadataIsRefusedAndTheServerLivesOn(t *testing.T) {
	e := start(t)
	c := e.client()
	big := strings.Repeat("x", 3<<20)

	// A client that honours the server's SETTINGS_MAX_HEADER_LIST_SIZE.
	// (Its first call may go before it has them, so it sends twice.)
	for range 2 {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-big", big)
		if _, err := c.Execute(ctx, "SELECT 1"); err == nil {
			t.Fatal("a call with 3 MB of metadata was answered")
		}
	}
	e.answers(c)

	// A client that does not: the server resets the stream (many fields)
	// or the connection (one field past the bound) itself, and nothing
	// of the call runs.
	many := make([][2]string, 0, 3<<10)
	for i := range 3 << 10 {
		many = append(many, [2]string{"x-field-" + strconv.Itoa(i), strings.Repeat("y", 1<<10)})
	}
	for what, fields := range map[string][][2]string{"3 MB in one field": {{"x-big", big}}, "3 MB in 3,072 fields": many} {
		got := rawCall(t, e.addr, fields)
		if got == "answered" {
			t.Errorf("%s: the server answered the call", what)
		}
		t.Logf("%s: %s", what, got)
		e.answers(c)
	}
}

// rawCall sends one ListActions call with the extra header fields over
// a raw HTTP/2 connection that ignores the server's settings, and says
// how the server took it: "reset" (the stream), "closed" (the
// connection) or "answered".
func rawCall(t *testing.T, addr string, fields [][2]string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	w := bufio.NewWriter(conn)
	_, _ = w.WriteString("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	writeFrame(w, frameSettings, 0, 0, nil)
	var block []byte
	for _, kv := range append([][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", "/arrow.flight.protocol.FlightService/ListActions"},
		{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"},
	}, fields...) {
		block = hpackLiteral(block, kv[0], kv[1])
	}
	const frameMax = 16 << 10 // the smallest SETTINGS_MAX_FRAME_SIZE, always allowed
	for i := 0; i < len(block); i += frameMax {
		typ, flags := byte(frameContinuation), byte(0)
		if i == 0 {
			typ, flags = frameHeaders, flagEndStream
		}
		if i+frameMax >= len(block) {
			flags |= flagEndHeaders
		}
		writeFrame(w, typ, flags, 1, block[i:min(i+frameMax, len(block))])
	}
	if err := w.Flush(); err != nil {
		return "closed" // the server stopped reading: it closed the connection
	}
	r := bufio.NewReader(conn)
	for {
		typ, flags, stream, _, err := readFrame(r)
		switch {
		case err != nil || typ == frameGoAway:
			return "closed"
		case typ == frameSettings && flags&flagAck == 0:
			writeFrame(w, frameSettings, flagAck, 0, nil)
			_ = w.Flush()
		case stream != 1:
		case typ == frameRSTStream:
			return "reset"
		default:
			return "answered"
		}
	}
}

// The bits of HTTP/2 (RFC 9113) and HPACK (RFC 7541) the test speaks.
const (
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	frameGoAway       = 0x7
	frameContinuation = 0x9
	flagEndStream     = 0x1
	flagAck           = 0x1
	flagEndHeaders    = 0x4
)

func writeFrame(w *bufio.Writer, typ, flags byte, stream uint32, payload []byte) {
	n := len(payload)
	_, _ = w.Write([]byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags})
	_ = binary.Write(w, binary.BigEndian, stream&0x7fffffff)
	_, _ = w.Write(payload)
}

func readFrame(r *bufio.Reader) (typ, flags byte, stream uint32, payload []byte, err error) {
	var h [9]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return
	}
	n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	payload = make([]byte, n)
	_, err = io.ReadFull(r, payload)
	return h[3], h[4], binary.BigEndian.Uint32(h[5:]) & 0x7fffffff, payload, err
}

// hpackLiteral appends a header field as a literal without indexing,
// with a new name, neither string Huffman-coded.
func hpackLiteral(b []byte, name, value string) []byte {
	b = append(b, 0x00)
	for _, s := range []string{name, value} {
		b = hpackInt(b, len(s))
		b = append(b, s...)
	}
	return b
}

// hpackInt appends n with a 7-bit prefix (the H bit clear).
func hpackInt(b []byte, n int) []byte {
	if n < 127 {
		return append(b, byte(n))
	}
	b = append(b, 127)
	for n -= 127; n >= 128; n >>= 7 {
		b = append(b, byte(n&0x7f|0x80))
	}
	return append(b, byte(n))
}

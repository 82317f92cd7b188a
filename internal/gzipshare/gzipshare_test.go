package gzipshare

import (
	"bytes"
	"compress/gzip"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// crc32Combine is the CRC-32 of a followed by b from crcA, crcB and
// len(b), as Stream.Write makes it.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	op := zeros(lenB)
	return times(&op, crcA) ^ crcB
}

// Carrying a CRC through the second part's zeros and adding the second
// part's CRC gives the CRC of the two parts together, for any parts.
func TestCRCCombineIsTheCRCOfTheWhole(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOfN(rapid.Byte(), 0, 3000).Draw(t, "a")
		b := rapid.SliceOfN(rapid.Byte(), 0, 3000).Draw(t, "b")
		got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
		if want := crc32.ChecksumIEEE(append(a[:len(a):len(a)], b...)); got != want {
			t.Fatalf("combined %08x, want %08x", got, want)
		}
	})
}

// Streams made of shared pieces are whole gzip streams (the reader checks
// the trailer's CRC and size), each with its own pieces, in order.
func TestStreamsOfSharedPiecesAreGzip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		texts := rapid.SliceOfN(rapid.String(), 0, 8).Draw(t, "texts")
		var pieces []Piece
		for _, s := range texts {
			p, err := Compress([]byte(strings.Repeat(s, 20)))
			if err != nil {
				t.Fatal(err)
			}
			pieces = append(pieces, p)
		}
		for client := range 2 { // two clients, the second skipping the first piece
			var buf bytes.Buffer
			s := NewStream(&buf)
			var want strings.Builder
			for i, p := range pieces {
				if client == 1 && i == 0 {
					continue
				}
				if err := s.Write(p); err != nil {
					t.Fatal(err)
				}
				want.WriteString(strings.Repeat(texts[i], 20))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := gzip.NewReader(&buf)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || string(got) != want.String() {
				t.Fatalf("client %d read %q, %v; want %q", client, got, err, want.String())
			}
		}
	})
}

// A reader gets each piece as soon as it is written, before the next one
// (a subscriber sees every event as it comes); a stream cut before Close
// gives every piece written, then io.ErrUnexpectedEOF.
func TestEachPieceIsReadableAsItArrives(t *testing.T) {
	pr, pw := io.Pipe()
	s := NewStream(pw)
	read := make(chan string)
	failed := make(chan error, 1)
	go func() {
		r, err := gzip.NewReader(pr)
		if err != nil {
			failed <- err
			return
		}
		buf := make([]byte, 1<<16)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				read <- string(buf[:n])
			}
			if err != nil {
				failed <- err
				return
			}
		}
	}()
	for _, text := range []string{"event: a\ndata: 1\n\n", "event: b\ndata: 2\n\n"} {
		p, err := Compress([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = s.Write(p) }()
		var got string
		for len(got) < len(text) {
			select {
			case part := <-read:
				got += part
			case err := <-failed:
				t.Fatalf("reading %q: %v", text, err)
			}
		}
		if got != text {
			t.Fatalf("read %q, want %q", got, text)
		}
	}
	_ = pw.Close() // cut: no Close
	if err := <-failed; !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut stream ends with %v, want io.ErrUnexpectedEOF", err)
	}
}

// A stream closed before any piece is an empty gzip stream; a failed
// write is returned by every later call.
func TestEmptyAndFailedStreams(t *testing.T) {
	var buf bytes.Buffer
	if err := NewStream(&buf).Close(); err != nil {
		t.Fatal(err)
	}
	r, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(r); err != nil || len(got) != 0 {
		t.Fatalf("empty stream: %q, %v", got, err)
	}
	broken := errors.New("gone")
	s := NewStream(failingWriter{broken})
	p, _ := Compress([]byte("x"))
	if err := s.Write(p); !errors.Is(err, broken) {
		t.Fatalf("Write: %v", err)
	}
	if err := s.Close(); !errors.Is(err, broken) {
		t.Fatalf("Close after a failed write: %v", err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// What a client's Write costs beside the write itself: a piece of 250 KB
// of plain bytes (a batch of the change feed) written to io.Discard.
func BenchmarkStreamWrite(b *testing.B) {
	p, err := Compress(bytes.Repeat([]byte(`event: table.version.created\ndata: {"id":"1-0"}\n\n`), 5000))
	if err != nil {
		b.Fatal(err)
	}
	s := NewStream(io.Discard)
	for b.Loop() {
		if err := s.Write(p); err != nil {
			b.Fatal(err)
		}
	}
}

package gzipshare

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// A Piece is plain bytes compressed on their own (Compress); it may be
// written to any number of Streams and must not be changed.
type Piece struct {
	deflated []byte
	crc      uint32     // of the plain bytes
	size     int64      // of the plain bytes
	carry    [32]uint32 // carries a CRC through size zero bytes (crc.go)
}

// Compress makes plain a Piece, at flate.BestSpeed (klauspost's deflate,
// which measured 0.56 ms for 248 KB of the change feed's events where
// the standard library's took 0.90 ms, 14× smaller either way).
func Compress(plain []byte) (Piece, error) {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		return Piece{}, err
	}
	if _, err := w.Write(plain); err != nil {
		return Piece{}, err
	}
	if err := w.Flush(); err != nil { // byte-aligned, not final
		return Piece{}, err
	}
	return Piece{deflated: buf.Bytes(), crc: crc32.ChecksumIEEE(plain), size: int64(len(plain)), carry: zeros(int64(len(plain)))}, nil
}

// A Stream is one client's gzip stream over w. It is not safe for
// concurrent use.
type Stream struct {
	w       io.Writer
	started bool
	crc     uint32
	size    int64
	err     error
}

// NewStream is a gzip stream written to w; nothing is written before the
// first Write (or Close).
func NewStream(w io.Writer) *Stream { return &Stream{w: w} }

// Write writes p to the stream, after the gzip header if it is the
// first. After an error every Write and Close returns it.
func (s *Stream) Write(p Piece) error {
	if err := s.start(); err != nil {
		return err
	}
	if _, err := s.w.Write(p.deflated); err != nil {
		s.err = err
		return err
	}
	s.crc = times(&p.carry, s.crc) ^ p.crc // the CRC of what came before, then p (crc.go)
	s.size += p.size
	return nil
}

// Close ends the stream: the final block and the trailer (it does not
// close w).
func (s *Stream) Close() error {
	if err := s.start(); err != nil {
		return err
	}
	end, err := finalBlock()
	if err != nil {
		return err
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], s.crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(s.size)) // ISIZE: the size modulo 2^32
	if _, err := s.w.Write(append(end[:len(end):len(end)], trailer[:]...)); err != nil {
		s.err = err
	}
	return s.err
}

// Start writes the gzip header now, if nothing is written yet: a client
// that waits for the first bytes knows the stream has begun.
func (s *Stream) Start() error { return s.start() }

func (s *Stream) start() error {
	if s.err != nil || s.started {
		return s.err
	}
	s.started = true
	h, err := header()
	if err == nil {
		_, err = s.w.Write(h)
	}
	s.err = err
	return err
}

// header is what gzip.Writer writes first (its header, then an empty
// block that ends byte-aligned): the start of every stream.
var header = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	err := w.Flush()
	return buf.Bytes(), err
})

// finalBlock is the empty final block a fresh compressor closes with:
// it ends a deflate stream after a piece (which ends byte-aligned).
var finalBlock = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err == nil {
		err = w.Close()
	}
	return buf.Bytes(), err
})

// Package gzipshare writes gzip streams, one per client, out of pieces
// compressed once and shared by every client: what a server that sends
// the same bytes to many followers (the change feed's Server-Sent
// Events) compresses once, however many follow.
//
// A Piece is its plain bytes deflated by a compressor of its own and
// ended by a sync flush (no final block), so that it depends on nothing
// before it and pieces laid one after another are one valid deflate
// stream, each readable as soon as it arrives. A Stream is one client's
// gzip stream: the header, the pieces written to it, and on Close the
// final block and the trailer, whose CRC-32 is carried from piece to
// piece by a map each piece makes once (crc.go) rather than computed
// again over every client's bytes: a client's Write costs the copy of
// the compressed bytes and 32 steps. A stream cut before Close (a client gone, a server killed)
// lacks the trailer; its pieces up to the cut still decompress.
package gzipshare

package obs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// NewLogger returns a slog logger writing format ("text" or "json") at
// level ("debug", "info", "warn", "error") to w.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// RequestIDHeader is the header (HTTP) and metadata key (gRPC) that
// carries a request id: a caller's is kept, else one is made; the reply
// carries it back.
const RequestIDHeader = "x-request-id"

type requestIDKey struct{}

// WithRequestID returns ctx carrying a request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// newRequestID returns 16 random hex digits.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestID keeps a caller's id when it is sane (printable, not too long).
func requestID(given string) string {
	if given == "" || len(given) > 128 {
		return newRequestID()
	}
	for _, r := range given {
		if r < 0x21 || r > 0x7e {
			return newRequestID()
		}
	}
	return given
}

package audit

import (
	"context"
	"log/slog"

	"github.com/flightns/flightns/nserror"
)

// Event is one audited request.
type Event struct {
	Principal string // who (its name); "" when it did not authenticate
	Surface   string // "rest" or "flight"
	Op        string // the operation (or RPC) asked
	Target    string // the object id it names; "" when none or unknown
	Outcome   string // "ok", or the code of the error that refused or failed it
	Error     string // the error's message, when it failed
}

// Log records events; a nil *Log records nothing.
type Log struct{ l *slog.Logger }

// New records events on l (nil: nowhere).
func New(l *slog.Logger) *Log {
	if l == nil {
		return nil
	}
	return &Log{l: l}
}

// Record records e.
func (a *Log) Record(ctx context.Context, e Event) {
	if a == nil {
		return
	}
	attrs := []slog.Attr{slog.Bool("audit", true), slog.String("principal", e.Principal), slog.String("surface", e.Surface),
		slog.String("op", e.Op), slog.String("target", e.Target), slog.String("outcome", e.Outcome)}
	if e.Error != "" {
		attrs = append(attrs, slog.String("error", e.Error))
	}
	a.l.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
}

type targetKey struct{}

// WithTarget returns a context in which the operation that runs may name
// its target (SetTarget), and a function that reads it back.
func WithTarget(ctx context.Context) (context.Context, func() string) {
	t := new(string)
	return context.WithValue(ctx, targetKey{}, t), func() string { return *t }
}

// SetTarget names the object id the running operation is about (once its
// request is decoded); without WithTarget it does nothing.
func SetTarget(ctx context.Context, id string) {
	if t, ok := ctx.Value(targetKey{}).(*string); ok {
		*t = id
	}
}

// Request records a request of a surface when it is worth auditing: a
// mutation (write), whatever its outcome, or any request refused for
// who asked (Unauthenticated, PermissionDenied). err is its outcome.
func (a *Log) Request(ctx context.Context, principal, surface, op, target string, write bool, err error) {
	if a == nil {
		return
	}
	code := nserror.CodeOf(err)
	if !write && code != nserror.Unauthenticated && code != nserror.PermissionDenied {
		return
	}
	e := Event{Principal: principal, Surface: surface, Op: op, Target: target, Outcome: "ok"}
	if err != nil {
		e.Outcome, e.Error = code.String(), err.Error()
	}
	a.Record(ctx, e)
}

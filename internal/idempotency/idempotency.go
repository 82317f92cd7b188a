package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/flightns/flightns/internal/redisstate"
	"github.com/flightns/flightns/nserror"
)

// Header names the key: the HTTP header, and (lowercased) the gRPC
// metadata of a Flight action.
const Header = "Idempotency-Key"

// MaxKeyBytes bounds a key.
const MaxKeyBytes = 128

// DefaultWindow is how long an answer is kept unless configured.
const DefaultWindow = 15 * time.Minute

// lease is how long a reservation lasts while its request runs: past it,
// a server that died mid-request no longer holds the key.
const lease = 2 * time.Minute

// maxBody bounds an answer kept for replay (mutations answer little).
const maxBody = 1 << 20

// Store keeps the records of one catalog.
type Store struct {
	rs     *redisstate.Catalog // the records' commands and scripts
	window time.Duration
	lease  time.Duration
}

// New returns the store of the records of rs's catalog, keeping answers
// for window (DefaultWindow when 0). rs is the catalog's Redis state, as
// the server shares it; its owner closes it.
func New(rs *redisstate.Catalog, window time.Duration) *Store {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Store{rs: rs, window: window, lease: lease}
}

// Window is how long answers are kept.
func (s *Store) Window() time.Duration { return s.window }

// Reply is a mutation's answer as its surface will send it again: a
// success's payload, or an error's Lance code and text.
type Reply struct {
	OK      bool   `json:"ok,omitempty"`
	Body    []byte `json:"b,omitempty"`
	Code    int    `json:"c,omitempty"`
	Message string `json:"m,omitempty"`
}

// Err is the reply's error (nil for a success), with its code.
func (r Reply) Err() error {
	if r.OK {
		return nil
	}
	return &nserror.Error{Code: nserror.Code(r.Code), Message: r.Message}
}

// ReplyOf records a mutation's outcome: body on success, else err.
func ReplyOf(body []byte, err error) Reply {
	if err != nil {
		return Reply{Code: int(nserror.CodeOf(err)), Message: err.Error()}
	}
	return Reply{OK: true, Body: body}
}

// settled reports whether a retry must get r again: a success, or an
// error that says what happened (not one that leaves it unknown, nor a
// refusal to try now).
func (r Reply) settled() bool {
	if r.OK {
		return len(r.Body) <= maxBody
	}
	switch nserror.Code(r.Code) {
	case nserror.ServiceUnavailable, nserror.Internal, nserror.Throttling, nserror.Unauthenticated, nserror.PermissionDenied:
		return false
	}
	return true
}

// Conflict is the refusal of a key already in use: by another request
// (a different operation or body), or by this one still running.
type Conflict struct {
	InProgress bool
	err        error
}

func (c *Conflict) Error() string { return c.err.Error() }
func (c *Conflict) Unwrap() error { return c.err }

// record is what Redis holds under a key: the request's fingerprint, and
// the reservation's owner while it runs or the reply once done.
type record struct {
	Fingerprint string `json:"f"`
	Owner       string `json:"o,omitempty"`
	Reply       *Reply `json:"r,omitempty"`
}

// CheckKey refuses a key that is empty, longer than MaxKeyBytes, or not
// visible ASCII.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyBytes {
		return nserror.New(nserror.InvalidInput, "%s must be 1 to %d characters", Header, MaxKeyBytes)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return nserror.New(nserror.InvalidInput, "%s must be visible ASCII (a UUID, say)", Header)
		}
	}
	return nil
}

// Do runs the mutation op of principal, whose request is request, at
// most once per key within the window, and returns its reply: run's, or
// the first request's (replayed true). A key used for another request,
// or by this one still running, is a *Conflict; Redis out of reach is
// ServiceUnavailable (nothing ran).
//
// authorize checks that principal may make the request now, without
// running it (namespace.Op.Authorize); it runs before the key is looked
// at, so a caller refused since its first request (a grant revoked) gets
// authorize's error, as a first request would, never the first answer,
// and its record stays as it was.
func (s *Store) Do(ctx context.Context, principal, op, key string, request []byte, authorize func() error, run func() Reply) (reply Reply, replayed bool, err error) {
	if err := CheckKey(key); err != nil {
		return Reply{}, false, err
	}
	if err := authorize(); err != nil {
		return Reply{}, false, err
	}
	fp := fingerprint(op, request)
	rkey := hash(principal, key)
	owner := rand.Text()
	mine, _ := json.Marshal(record{Fingerprint: fp, Owner: owner})
	old, reserved, err := s.rs.ReserveIdempotency(ctx, rkey, mine, s.lease)
	switch {
	case err != nil:
		return Reply{}, false, nserror.New(nserror.ServiceUnavailable, "the %s cannot be checked now (Redis: %v); nothing was done", Header, err)
	case !reserved:
		return s.existing(old, fp, key)
	}
	// Reserved: run it.
	reply = run()
	// Keep or free the key even when the caller has gone; if Redis fails
	// here the answer still stands, and a retry finds the reservation
	// until its lease ends, then runs again.
	ctx = context.WithoutCancel(ctx)
	if reply.settled() {
		done, _ := json.Marshal(record{Fingerprint: fp, Reply: &reply})
		_ = s.rs.FinishIdempotency(ctx, rkey, owner, done, s.window)
	} else {
		_ = s.rs.ReleaseIdempotency(ctx, rkey, owner)
	}
	return reply, false, nil
}

// existing answers a key already recorded.
func (s *Store) existing(old, fp, key string) (Reply, bool, error) {
	var r record
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		return Reply{}, false, nserror.New(nserror.Internal, "the record of %s %q is unreadable: %v", Header, key, err)
	}
	switch {
	case r.Fingerprint != fp:
		return Reply{}, false, &Conflict{err: nserror.New(nserror.InvalidInput,
			"%s %q was used for another request (another operation or body) within the last %s", Header, key, s.window)}
	case r.Reply == nil:
		return Reply{}, false, &Conflict{InProgress: true, err: nserror.New(nserror.ConcurrentModification,
			"a request with %s %q is still running; retry when it ends", Header, key)}
	}
	return *r.Reply, true, nil
}

// fingerprint identifies a request: its operation and its body.
func fingerprint(op string, request []byte) string {
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\x00", op)
	_, _ = h.Write(request)
	return hex.EncodeToString(h.Sum(nil))
}

// hash scopes a key to its principal: one caller's key is never
// another's.
func hash(principal, key string) string {
	h := sha256.Sum256([]byte(principal + "\x00" + key))
	return hex.EncodeToString(h[:])
}

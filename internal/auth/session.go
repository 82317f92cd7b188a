package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/flightns/flightns/nserror"
)

// A session token is what a login (a basic handshake) answers: signed,
// not stored, so that every replica and a restarted server accept it
// until it expires. Its form is
//
//	fns1.<base64url payload>.<base64url HMAC-SHA256(key, "fns1."+payload)>
//
// where the payload is JSON naming the principal, when it was issued and
// when it expires, and a random nonce. It carries no role: the role is
// the principal's as configured when the token is used, so removing a
// user (or lowering its role) takes effect on its sessions at once, and
// a revocation (Revocations) ends every session issued before it.
const sessionPrefix = "fns1."

// SessionKeyBytes is the size of a session signing key.
const SessionKeyBytes = 32

// Revocations tells, for every replica alike, when a principal's
// sessions were last revoked: every session issued up to then is refused.
// redisstate.Catalog keeps them in the catalog's Redis.
type Revocations interface {
	SessionsRevokedAt(ctx context.Context, name string) (time.Time, error)
}

// SessionEnds ends one session (a logout) on every replica, when the
// Revocations given also implements it: what it is told ended is refused
// until until, when the session would have expired anyway. redisstate.Catalog
// keeps them in the catalog's Redis.
type SessionEnds interface {
	EndSession(ctx context.Context, id string, until time.Time) error
	SessionEnded(ctx context.Context, id string) (bool, error)
}

// revocationCheck is how long a replica trusts what it read of a
// principal's revocation: a revocation reaches every replica within it.
const revocationCheck = 2 * time.Second

type sessionPayload struct {
	Name    string `json:"n"`
	Issued  int64  `json:"iat"` // unix milliseconds
	Expires int64  `json:"exp"` // unix milliseconds
	Nonce   string `json:"j"`
}

// sessions signs and checks session tokens.
type sessions struct {
	key     []byte
	ttl     time.Duration
	revoked Revocations
	ends    SessionEnds // nil: sessions end in this process alone
	now     func() time.Time

	mu    sync.Mutex
	cache map[string]revokedAt // principal -> what was read, and when
	// ended holds the sessions known to be ended (until they expire) and
	// when each other one was last found live.
	ended map[string]endedAt
}

type revokedAt struct {
	at, read time.Time
}

type endedAt struct {
	ended bool
	read  time.Time // when that was read (an ended session stays ended)
	exp   time.Time // when the session expires: the entry is moot past it
}

// maxRemembered bounds the sessions whose end (or not) a process keeps.
const maxRemembered = 100000

func newSessions(key []byte, ttl time.Duration, revoked Revocations) *sessions {
	ends, _ := revoked.(SessionEnds)
	return &sessions{key: key, ttl: ttl, revoked: revoked, ends: ends, now: time.Now, cache: map[string]revokedAt{}, ended: map[string]endedAt{}}
}

// DefaultSessionTTL is how long a session token lives by default.
const DefaultSessionTTL = 12 * time.Hour

func (s *sessions) mac(signed string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(signed))
	return m.Sum(nil)
}

// issue signs a session token for the principal named name.
func (s *sessions) issue(name string) string {
	var nonce [12]byte
	_, _ = rand.Read(nonce[:])
	now := s.now()
	raw, _ := json.Marshal(sessionPayload{Name: name, Issued: now.UnixMilli(), Expires: now.Add(s.ttl).UnixMilli(),
		Nonce: base64.RawURLEncoding.EncodeToString(nonce[:])})
	signed := sessionPrefix + base64.RawURLEncoding.EncodeToString(raw)
	return signed + "." + base64.RawURLEncoding.EncodeToString(s.mac(signed))
}

// IsSession reports whether token has the form of a session token (not
// whether it is valid).
func IsSession(token string) bool { return strings.HasPrefix(token, sessionPrefix) }

var errBadSession = nserror.New(nserror.Unauthenticated, "invalid or expired token")

// parse verifies a session token's signature and returns its payload,
// expired or not.
func (s *sessions) parse(token string) (sessionPayload, error) {
	signed, sig, ok := cutLast(token, ".")
	if !ok || !IsSession(signed) || len(token) > 4096 {
		return sessionPayload{}, errBadSession
	}
	want, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(want, s.mac(signed)) {
		return sessionPayload{}, errBadSession
	}
	raw, err := base64.RawURLEncoding.DecodeString(signed[len(sessionPrefix):])
	if err != nil {
		return sessionPayload{}, errBadSession
	}
	var p sessionPayload
	if err := json.Unmarshal(raw, &p); err != nil || p.Name == "" {
		return sessionPayload{}, errBadSession
	}
	return p, nil
}

// check verifies a session token's signature, expiry, revocation and end
// and returns the name of its principal.
func (s *sessions) check(token string) (string, error) {
	p, err := s.parse(token)
	if err != nil {
		return "", err
	}
	if s.now().UnixMilli() >= p.Expires {
		return "", errBadSession
	}
	if s.revoked != nil {
		at, err := s.revokedAt(p.Name)
		if err != nil {
			return "", nserror.New(nserror.ServiceUnavailable, "sessions cannot be checked now (their revocations are unreadable): %v", err)
		}
		if !at.IsZero() && p.Issued <= at.UnixMilli() {
			return "", errBadSession
		}
	}
	ended, err := s.isEnded(p)
	if err != nil {
		return "", nserror.New(nserror.ServiceUnavailable, "sessions cannot be checked now (their ends are unreadable): %v", err)
	}
	if ended {
		return "", errBadSession
	}
	return p.Name, nil
}

// end ends the session of token (a logout): refused from now on here,
// and on every replica within revocationCheck. A token that is no live
// session of this key has nothing to end.
func (s *sessions) end(ctx context.Context, token string) error {
	p, err := s.parse(token)
	if err != nil || p.Nonce == "" || s.now().UnixMilli() >= p.Expires {
		return nil
	}
	exp := time.UnixMilli(p.Expires)
	s.remember(p.Nonce, endedAt{ended: true, read: s.now(), exp: exp})
	if s.ends == nil {
		return nil
	}
	return s.ends.EndSession(ctx, p.Nonce, exp)
}

// isEnded reports whether p's session was ended, reading SessionEnds at
// most every revocationCheck for a live one.
func (s *sessions) isEnded(p sessionPayload) (bool, error) {
	now := s.now()
	s.mu.Lock()
	e, ok := s.ended[p.Nonce]
	s.mu.Unlock()
	if ok && (e.ended || now.Sub(e.read) < revocationCheck) {
		return e.ended, nil
	}
	if s.ends == nil || p.Nonce == "" {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ended, err := s.ends.SessionEnded(ctx, p.Nonce)
	if err != nil {
		return false, err
	}
	s.remember(p.Nonce, endedAt{ended: ended, read: now, exp: time.UnixMilli(p.Expires)})
	return ended, nil
}

// remember records what is known of session id's end. Past maxRemembered
// entries, the expired ones and the live ones (read again when needed)
// go first; a live one is then not kept if there is still no room.
func (s *sessions) remember(id string, e endedAt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if !roomFor(s.ended, maxRemembered, func(v endedAt) bool { return !v.ended || !now.Before(v.exp) }) && !e.ended {
		return
	}
	s.ended[id] = e
}

// revokedAt is when name's sessions were last revoked, read at most every
// revocationCheck.
func (s *sessions) revokedAt(name string) (time.Time, error) {
	now := s.now()
	s.mu.Lock()
	c, ok := s.cache[name]
	s.mu.Unlock()
	if ok && now.Sub(c.read) < revocationCheck {
		return c.at, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	at, err := s.revoked.SessionsRevokedAt(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	s.mu.Lock()
	if len(s.cache) > 10000 {
		clear(s.cache)
	}
	s.cache[name] = revokedAt{at: at, read: now}
	s.mu.Unlock()
	return at, nil
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// NewSessionKey returns a random session signing key.
func NewSessionKey() []byte {
	k := make([]byte, SessionKeyBytes)
	_, _ = rand.Read(k)
	return k
}

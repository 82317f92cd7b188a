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
	now     func() time.Time

	mu    sync.Mutex
	cache map[string]revokedAt // principal -> what was read, and when
}

type revokedAt struct {
	at, read time.Time
}

func newSessions(key []byte, ttl time.Duration, revoked Revocations) (*sessions, error) {
	if key == nil {
		key = NewSessionKey() // sessions of this process alone
	}
	if len(key) < SessionKeyBytes {
		return nil, nserror.New(nserror.InvalidInput, "auth: a session key has at least %d bytes, not %d", SessionKeyBytes, len(key))
	}
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &sessions{key: key, ttl: ttl, revoked: revoked, now: time.Now, cache: map[string]revokedAt{}}, nil
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

// check verifies a session token's signature, expiry and revocation and
// returns the name of its principal.
func (s *sessions) check(token string) (string, error) {
	signed, sig, ok := cutLast(token, ".")
	if !ok || !IsSession(signed) || len(token) > 4096 {
		return "", errBadSession
	}
	want, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(want, s.mac(signed)) {
		return "", errBadSession
	}
	raw, err := base64.RawURLEncoding.DecodeString(signed[len(sessionPrefix):])
	if err != nil {
		return "", errBadSession
	}
	var p sessionPayload
	if err := json.Unmarshal(raw, &p); err != nil || p.Name == "" {
		return "", errBadSession
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
	return p.Name, nil
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

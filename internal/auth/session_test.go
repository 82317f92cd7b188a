package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightns/flightns/nserror"
)

// revocations is a Revocations of the test's own.
type revocations struct {
	at    atomic.Int64 // unix ms; 0: never
	fail  atomic.Bool
	reads atomic.Int32
}

func (r *revocations) SessionsRevokedAt(context.Context, string) (time.Time, error) {
	r.reads.Add(1)
	if r.fail.Load() {
		return time.Time{}, errors.New("redis is down")
	}
	if ms := r.at.Load(); ms != 0 {
		return time.UnixMilli(ms), nil
	}
	return time.Time{}, nil
}

func users(role string) Config {
	return Config{Users: []UserEntry{{Name: "ana", Password: "pw-ana", Role: role}, {Name: "root", Password: "pw-root", Role: "admin"}}}
}

func authWith(t *testing.T, c Config, key []byte, rev Revocations) *Authenticator {
	t.Helper()
	c.SessionKey, c.Revocations = key, rev
	a, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A session token is signed, not stored: another Authenticator with the
// same key (another server of the catalog, this one restarted) accepts
// it, with the role its user has there now; a user removed since, another
// key, any change to the token and an expired token are refused.
func TestSessionsAreSignedAndCheckedEverywhere(t *testing.T) {
	key := NewSessionKey()
	a := authWith(t, users("write"), key, nil)
	p, err := a.Basic("ana", "pw-ana")
	if err != nil {
		t.Fatal(err)
	}
	tok := a.IssueToken(p)
	if !IsSession(tok) {
		t.Fatalf("a session token %q does not say so", tok)
	}
	replica := authWith(t, users("write"), key, nil)
	if got, err := replica.Bearer(tok); err != nil || !reflect.DeepEqual(got, Principal{Name: "ana", Role: Write}) {
		t.Fatalf("another server of the catalog: %+v, %v", got, err)
	}
	if got, err := authWith(t, users("read"), key, nil).Bearer(tok); err != nil || got.Role != Read {
		t.Fatalf("after ana became a reader: %+v, %v, want the role she has now", got, err)
	}
	gone := authWith(t, Config{Users: []UserEntry{{Name: "root", Password: "pw-root", Role: "admin"}}}, key, nil)
	wantUnauthenticated(t, "a removed user's session", gone, tok)
	wantUnauthenticated(t, "another key", authWith(t, users("write"), NewSessionKey(), nil), tok)

	signed, sig, _ := cutLast(tok, ".")
	payload := signed[len(sessionPrefix):]
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	forged := strings.Replace(string(raw), `"n":"ana"`, `"n":"root"`, 1)
	if forged == string(raw) {
		t.Fatalf("the payload %s does not name ana as the test expects", raw)
	}
	forgedTok := sessionPrefix + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + sig
	for what, bad := range map[string]string{
		"a payload that names root":  forgedTok,
		"no signature":               signed + ".",
		"no signature and no dot":    signed,
		"a signature cut short":      tok[:len(tok)-2],
		"a signature of other bytes": signed + "." + base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")),
		"a payload that is not JSON": sessionPrefix + base64.RawURLEncoding.EncodeToString([]byte("{")) + "." + sig,
		"garbage":                    "fns1.!!!.!!!",
		"the prefix alone":           "fns1.",
		"a huge token":               "fns1." + strings.Repeat("A", 10000) + "." + sig,
	} {
		wantUnauthenticated(t, what, a, bad)
	}

	// Expiry: the token dies SessionTTL after it was issued.
	short := authWith(t, Config{Users: users("write").Users, SessionTTL: time.Hour}, key, nil)
	now := time.Now()
	short.sessions.now = func() time.Time { return now }
	tok = short.IssueToken(p)
	short.sessions.now = func() time.Time { return now.Add(59 * time.Minute) }
	if _, err := short.Bearer(tok); err != nil {
		t.Fatalf("a session before its end: %v", err)
	}
	short.sessions.now = func() time.Time { return now.Add(time.Hour) }
	wantUnauthenticated(t, "an expired session", short, tok)

	if _, err := New(Config{Users: users("read").Users, SessionKey: []byte("short")}); err == nil {
		t.Fatal("a session key of 5 bytes was accepted")
	}
}

// A revocation ends every session of its user issued until then; later
// logins work; a replica reads revocations at most every revocationCheck,
// and refuses sessions while it cannot read them.
func TestARevocationEndsTheSessionsIssuedBeforeIt(t *testing.T) {
	key := NewSessionKey()
	rev := &revocations{}
	a := authWith(t, users("write"), key, rev)
	now := time.Now()
	a.sessions.now = func() time.Time { return now }
	p := Principal{Name: "ana", Role: Write}
	old := a.IssueToken(p)
	if _, err := a.Bearer(old); err != nil {
		t.Fatal(err)
	}
	reads := rev.reads.Load()
	for range 10 {
		if _, err := a.Bearer(old); err != nil {
			t.Fatal(err)
		}
	}
	if rev.reads.Load() != reads {
		t.Fatalf("%d more reads of the revocations within %s, want none", rev.reads.Load()-reads, revocationCheck)
	}
	rev.at.Store(now.Add(time.Second).UnixMilli())
	now = now.Add(revocationCheck + time.Second)
	wantUnauthenticated(t, "a revoked session", a, old)
	fresh := a.IssueToken(p)
	if _, err := a.Bearer(fresh); err != nil {
		t.Fatalf("a session issued after the revocation: %v", err)
	}
	rev.fail.Store(true)
	now = now.Add(revocationCheck + time.Second)
	if _, err := a.Bearer(fresh); nserror.CodeOf(err) != nserror.ServiceUnavailable {
		t.Fatalf("revocations unreadable: %v, want ServiceUnavailable (fail closed)", err)
	}
}

func wantUnauthenticated(t *testing.T, what string, a *Authenticator, tok string) {
	t.Helper()
	p, err := a.Bearer(tok)
	if nserror.CodeOf(err) != nserror.Unauthenticated {
		t.Errorf("%s: %+v, %v; want Unauthenticated", what, p, err)
	}
}

// ends is a Revocations and SessionEnds of the test's own (with
// endsByID), shared by the Authenticators of a test as Redis is by a
// catalog's servers.
type ends struct {
	revocations
	mu      sync.Mutex
	ended   map[string]time.Time
	endFail atomic.Bool
}

func (e *ends) EndSession(_ context.Context, id string, until time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended[id] = until
	return nil
}

// endsByID is ends with SessionEnded.
type endsByID struct{ *ends }

func (e endsByID) SessionEnded(_ context.Context, id string) (bool, error) {
	if e.endFail.Load() {
		return false, errors.New("redis is down")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.ended[id]
	return ok, nil
}

// Ending a session (a logout) refuses it at once on the server that ended
// it and within revocationCheck on another of the catalog; the principal's
// other sessions live on; a static token or garbage has nothing to end;
// the ends unreadable fail closed.
func TestEndingASessionRefusesItEverywhere(t *testing.T) {
	key := NewSessionKey()
	shared := endsByID{&ends{ended: map[string]time.Time{}}}
	c := users("write")
	c.Tokens = []TokenEntry{{Token: "static-token-1", Name: "svc", Role: "read"}}
	a, b := authWith(t, c, key, shared), authWith(t, c, key, shared)
	issued := time.Now()
	now := issued
	a.sessions.now = func() time.Time { return now }
	b.sessions.now = func() time.Time { return now }
	p := Principal{Name: "ana", Role: Write}
	tok, other := a.IssueToken(p), a.IssueToken(p)
	for _, x := range []*Authenticator{a, b} {
		if _, err := x.Bearer(tok); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := a.EndSession(ctx, tok); err != nil {
		t.Fatal(err)
	}
	wantUnauthenticated(t, "an ended session where it ended", a, tok)
	now = now.Add(revocationCheck + time.Second)
	wantUnauthenticated(t, "an ended session on another server", b, tok)
	if _, err := b.Bearer(other); err != nil {
		t.Fatalf("another session of the same principal: %v", err)
	}
	for _, nothing := range []string{"static-token-1", "fns1.forged.sig", ""} {
		if err := a.EndSession(ctx, nothing); err != nil {
			t.Fatalf("ending %q: %v", nothing, err)
		}
	}
	if _, err := a.Bearer("static-token-1"); err != nil {
		t.Fatalf("the static token after an attempt to end it: %v", err)
	}
	if len(shared.ended) != 1 {
		t.Fatalf("%d sessions recorded ended, want 1", len(shared.ended))
	}
	if until := shared.ended[mustNonce(t, tok)]; !until.Equal(time.UnixMilli(issued.Add(a.SessionTTL()).UnixMilli())) {
		t.Fatalf("ended until %v: not the session's expiry", until)
	}
	shared.endFail.Store(true)
	now = now.Add(revocationCheck + time.Second)
	if _, err := b.Bearer(other); nserror.CodeOf(err) != nserror.ServiceUnavailable {
		t.Fatalf("ends unreadable: %v, want ServiceUnavailable (fail closed)", err)
	}
}

func mustNonce(t *testing.T, tok string) string {
	t.Helper()
	signed, _, _ := cutLast(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(signed[len(sessionPrefix):])
	if err != nil {
		t.Fatal(err)
	}
	var p sessionPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p.Nonce
}

// Ten failed logins of a name within a minute refuse its logins, the
// right password too, until the minute is over; a success forgets the
// failures; other names are not affected.
func TestPasswordGuessingIsThrottled(t *testing.T) {
	a := authWith(t, users("write"), nil, nil)
	now := time.Now()
	a.logins.now = func() time.Time { return now }
	for range maxLoginFailures - 1 {
		if _, err := a.Basic("ana", "guess"); nserror.CodeOf(err) != nserror.Unauthenticated {
			t.Fatal(err)
		}
	}
	if _, err := a.Basic("ana", "pw-ana"); err != nil {
		t.Fatalf("the right password after %d failures: %v", maxLoginFailures-1, err)
	}
	for range maxLoginFailures {
		_, _ = a.Basic("ana", "guess")
	}
	if _, err := a.Basic("ana", "pw-ana"); nserror.CodeOf(err) != nserror.Throttling {
		t.Fatalf("the right password after %d failures: %v, want Throttling", maxLoginFailures, err)
	}
	if _, err := a.Header("Basic " + base64.StdEncoding.EncodeToString([]byte("ana:pw-ana"))); nserror.CodeOf(err) != nserror.Throttling {
		t.Fatalf("basic credentials in a header while throttled: %v", err)
	}
	if _, err := a.Basic("root", "pw-root"); err != nil {
		t.Fatalf("another user: %v", err)
	}
	now = now.Add(loginWindow)
	if _, err := a.Basic("ana", "pw-ana"); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}

package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/flightns/flightns/nserror"
)

// A user's password in the auth file is one of:
//
//   - a bcrypt hash ("$2a$", "$2b$" or "$2y$", as `flightns hash-password`
//     or `htpasswd -nbB` print): salted and slow, what a file that leaks
//     should hold;
//   - "sha256:<hex>": unsalted and fast, kept for files written before
//     bcrypt was accepted (the startup log warns);
//   - the password itself (the startup log warns).
//
// A bcrypt comparison costs about 0.1 s of CPU at HashCost. So that logins
// can never starve commits of CPU, at most one runs at a time per process
// (a login that waits more than bcryptQueueWait is refused with
// Throttling), and a password that matched is remembered for
// verifiedTTL as an HMAC under a key of this process, so that a client
// sending Basic on every request pays once. A name nobody has is
// compared against a dummy hash of the file's highest cost, so that the
// time taken does not tell which names exist (a weak entry's user is
// refused faster: the startup log warns of those).
const (
	// HashCost is the bcrypt cost `flightns hash-password` uses.
	HashCost = 11
	// maxHashCost refuses an auth file whose hashes would take seconds
	// per login (each step doubles the time: on a 2-core test machine
	// cost 11 took 0.07-0.15 s, so 14 takes about a second, 16 five).
	maxHashCost     = 14
	bcryptQueueWait = 2 * time.Second
	verifiedTTL     = 5 * time.Minute
	maxVerified     = 10000
)

// bcryptHash is the form of a bcrypt hash: version, cost, then 22
// characters of salt and 31 of hash in bcrypt's base64.
var bcryptHash = regexp.MustCompile(`^\$2[aby]\$[0-9]{2}\$[./A-Za-z0-9]{53}$`)

// password is a user's stored password.
type password struct {
	sha    [32]byte // plaintext and "sha256:" entries
	bcrypt []byte   // bcrypt entries
	cost   int      // bcrypt's
	weak   string   // why the entry is weak ("" for bcrypt)
}

// parsePassword reads an auth file's password entry.
func parsePassword(s string) (password, error) {
	if hx, ok := strings.CutPrefix(s, "sha256:"); ok {
		b, err := hex.DecodeString(hx)
		if err != nil || len(b) != 32 {
			return password{}, errors.New("bad sha256 hex")
		}
		var p password
		copy(p.sha[:], b)
		p.weak = "an unsalted SHA-256"
		return p, nil
	}
	if strings.HasPrefix(s, "$2") {
		cost, err := bcrypt.Cost([]byte(s))
		switch {
		case !bcryptHash.MatchString(s):
			return password{}, errors.New(`not a bcrypt hash ("$2a$", "$2b$" or "$2y$", two digits of cost, "$", then 53 characters of [./A-Za-z0-9])`)
		case err != nil:
			return password{}, fmt.Errorf("not a bcrypt hash: %w", err)
		case cost > maxHashCost:
			return password{}, fmt.Errorf("bcrypt cost %d is above %d: each login would take seconds of CPU", cost, maxHashCost)
		}
		return password{bcrypt: []byte(s), cost: cost}, nil
	}
	return password{sha: sha256.Sum256([]byte(s)), weak: "the password itself"}, nil
}

// HashPassword returns the bcrypt hash of pw for an auth file.
func HashPassword(pw string) (string, error) {
	if pw == "" {
		return "", errors.New("auth: an empty password")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), HashCost)
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	return string(h), nil
}

// passwords compares passwords with stored ones, bounding bcrypt's CPU.
type passwords struct {
	slot      chan struct{} // one bcrypt comparison at a time
	queueWait time.Duration // how long a login waits for the slot
	compare   func(hash, pw []byte) error
	key       []byte // keys the remembered matches

	dummyOnce sync.Once
	dummyCost int // the highest cost of the file; 0: no bcrypt entry
	dummy     []byte

	mu       sync.Mutex
	verified map[[32]byte]time.Time
	now      func() time.Time
}

func newPasswords() *passwords {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &passwords{slot: make(chan struct{}, 1), queueWait: bcryptQueueWait, compare: bcrypt.CompareHashAndPassword, key: key, verified: map[[32]byte]time.Time{}, now: time.Now}
}

// add notes a stored password (for the dummy's cost).
func (ps *passwords) add(p password) {
	ps.dummyCost = max(ps.dummyCost, p.cost)
}

// match reports whether pw is stored's password (stored nil: a name
// nobody has, which never matches but takes as long). An error is
// Throttling: too many bcrypt comparisons waiting.
func (ps *passwords) match(name string, stored *password, pw string) (bool, error) {
	if stored == nil && ps.dummyCost == 0 || stored != nil && stored.bcrypt == nil {
		h := sha256.Sum256([]byte(pw))
		var want [32]byte
		if stored != nil {
			want = stored.sha
		}
		return subtle.ConstantTimeCompare(want[:], h[:]) == 1 && stored != nil, nil
	}
	var hash []byte
	if stored != nil {
		hash = stored.bcrypt
	} else {
		hash = ps.dummyHash()
	}
	seen := ps.remembered(name, hash, pw)
	if ps.matched(seen) {
		return stored != nil, nil
	}
	t := time.NewTimer(ps.queueWait)
	defer t.Stop()
	select {
	case ps.slot <- struct{}{}:
	case <-t.C:
		return false, nserror.New(nserror.Throttling, "too many password logins at once: try again, or use the session token a login answers")
	}
	defer func() { <-ps.slot }()
	if ps.matched(seen) { // a login ahead in the queue had the same password
		return stored != nil, nil
	}
	if ps.compare(hash, []byte(pw)) != nil || stored == nil {
		return false, nil
	}
	ps.remember(seen) // before the slot is free: the next in the queue sees it
	return true, nil
}

// remembered is the key under which a match of pw for name and its
// stored hash is remembered (a new hash in the file is a new key).
func (ps *passwords) remembered(name string, hash []byte, pw string) [32]byte {
	m := hmac.New(sha256.New, ps.key)
	for _, part := range [][]byte{[]byte(name), hash, []byte(pw)} {
		_, _ = fmt.Fprintf(m, "%d:", len(part))
		_, _ = m.Write(part)
	}
	var k [32]byte
	copy(k[:], m.Sum(nil))
	return k
}

// matched reports whether the match keyed k is remembered.
func (ps *passwords) matched(k [32]byte) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	at, ok := ps.verified[k]
	return ok && ps.now().Sub(at) < verifiedTTL
}

func (ps *passwords) remember(k [32]byte) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := ps.now()
	if roomFor(ps.verified, maxVerified, func(at time.Time) bool { return now.Sub(at) >= verifiedTTL }) {
		ps.verified[k] = now // else the next login compares again
	}
}

// dummyHash is a bcrypt hash of a random password at the file's highest
// cost, made on first use.
func (ps *passwords) dummyHash() []byte {
	ps.dummyOnce.Do(func() {
		pw := make([]byte, 16)
		_, _ = rand.Read(pw)
		ps.dummy, _ = bcrypt.GenerateFromPassword([]byte(hex.EncodeToString(pw)), ps.dummyCost)
	})
	return ps.dummy
}

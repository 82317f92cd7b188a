package auth

import (
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/flightns/flightns/nserror"
)

// A bcrypt hash in the auth file (ours, or htpasswd's "$2y$") logs its
// user in with the password and nothing else; a hash too costly, or not
// a hash, stops the file from loading.
func TestBcryptPasswordsLogIn(t *testing.T) {
	ours, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := bcrypt.Cost([]byte(ours)); c != HashCost || !strings.HasPrefix(ours, "$2a$") {
		t.Fatalf("HashPassword = %q (cost %d)", ours, c)
	}
	htpasswd, err := bcrypt.GenerateFromPassword([]byte("battery staple"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	y := "$2y$" + string(htpasswd[4:]) // htpasswd -nbB writes $2y$
	a, err := New(Config{Users: []UserEntry{
		{Name: "ana", Password: ours, Role: "write"},
		{Name: "bo", Password: y, Role: "read"},
		{Name: "cy", Password: "plain", Role: "read"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, pw string
		ok       bool
	}{
		{"ana", "correct horse", true}, {"ana", "correct horse", true}, {"ana", "correct hors", false},
		{"ana", "Correct horse", false}, {"ana", ours, false}, {"bo", "battery staple", true},
		{"bo", "correct horse", false}, {"nobody", "correct horse", false}, {"cy", "plain", true},
	} {
		p, err := a.Basic(c.name, c.pw)
		if c.ok != (err == nil) || c.ok && p.Name != c.name || !c.ok && nserror.CodeOf(err) != nserror.Unauthenticated {
			t.Errorf("Basic(%q, %q) = %+v, %v", c.name, c.pw, p, err)
		}
	}
	if got := a.WeakPasswords(); !reflect.DeepEqual(got, map[string]string{"cy": "the password itself"}) {
		t.Errorf("WeakPasswords = %v", got)
	}
	costly, _ := bcrypt.GenerateFromPassword([]byte("x"), bcrypt.MinCost)
	costly = []byte(strings.Replace(string(costly), "$04$", "$15$", 1))
	for pw, want := range map[string]string{
		string(costly):     "cost 15 is above 14",
		"$2b$10$short":     "not a bcrypt hash",
		"sha256:abcd":      "bad sha256 hex",
		"sha256:" + ours:   "bad sha256 hex",
		"$2a$04$" + "x":    "not a bcrypt hash",
		"$2x$04$" + ours:   "not a bcrypt hash",
		"$2a$99$" + ours:   "not a bcrypt hash",
		"$2a$04$" + ours:   "not a bcrypt hash",
		"$2a$04$" + "\x00": "not a bcrypt hash",
	} {
		_, err := New(Config{Users: []UserEntry{{Name: "ana", Password: pw, Role: "read"}}})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"ana"`) {
			t.Errorf("password %q: %v, want %q", pw, err, want)
		}
	}
	for _, pw := range []string{"", strings.Repeat("x", 73)} { // bcrypt reads 72 bytes
		if h, err := HashPassword(pw); err == nil {
			t.Errorf("a password of %d bytes was hashed: %q", len(pw), h)
		}
	}
}

// bcrypt's CPU is bounded: one comparison at a time, a login that cannot
// get its turn is refused with Throttling, and a password that matched
// is not compared again (a client sending Basic on every request pays
// once). A name nobody has waits its turn like a real one: it is
// compared against a dummy hash, so its time tells nothing.
func TestBcryptComparisonsAreBounded(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw-ana"), bcrypt.MinCost)
	a, err := New(Config{Users: []UserEntry{{Name: "ana", Password: string(hash), Role: "write"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Basic("ana", "pw-ana"); err != nil {
		t.Fatal(err)
	}
	a.passwords.queueWait = 20 * time.Millisecond
	a.passwords.slot <- struct{}{} // another comparison runs
	if _, err := a.Basic("ana", "pw-ana"); err != nil {
		t.Fatalf("a password that matched before was compared again: %v", err)
	}
	for _, c := range [][2]string{{"ana", "wrong"}, {"nobody", "pw-ana"}} {
		if _, err := a.Basic(c[0], c[1]); nserror.CodeOf(err) != nserror.Throttling {
			t.Errorf("Basic(%q, %q) while the comparison slot is taken: %v, want Throttling", c[0], c[1], err)
		}
	}
	<-a.passwords.slot
	if _, err := a.Basic("nobody", "pw-ana"); nserror.CodeOf(err) != nserror.Unauthenticated {
		t.Fatalf("an unknown name: %v", err)
	}
	// A match is remembered for verifiedTTL only.
	a.passwords.now = func() time.Time { return time.Now().Add(verifiedTTL) }
	a.passwords.slot <- struct{}{}
	if _, err := a.Basic("ana", "pw-ana"); nserror.CodeOf(err) != nserror.Throttling {
		t.Fatalf("a match older than %s was not compared again: %v", verifiedTTL, err)
	}
}

// An auth file's password entry never panics the parser, and what it
// accepts as bcrypt is a whole hash of a bounded cost.
func FuzzParsePassword(f *testing.F) {
	for _, s := range []string{"plain", "sha256:" + strings.Repeat("ab", 32), "sha256:zz", "$2a$04$" + strings.Repeat("a", 53),
		"$2y$15$" + strings.Repeat(".", 53), "$2", "$2a$", "$2b$4$x", "$2a$04$" + strings.Repeat("a", 52) + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePassword(s)
		if err != nil {
			return
		}
		if p.bcrypt != nil {
			c, err := bcrypt.Cost(p.bcrypt)
			if err != nil || c > maxHashCost || len(p.bcrypt) != 60 {
				t.Fatalf("parsePassword(%q) accepted a bcrypt hash of cost %d (%v)", s, c, err)
			}
		} else if p.weak == "" {
			t.Fatalf("parsePassword(%q): neither bcrypt nor weak", s)
		}
	})
}

// Logins that arrive together with the same password (a pool of
// connections opening at once) cost one bcrypt comparison, not one each.
func TestLoginsWithTheSamePasswordCompareOnce(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw-ana"), bcrypt.MinCost)
	a, err := New(Config{Users: []UserEntry{{Name: "ana", Password: string(hash), Role: "write"}}})
	if err != nil {
		t.Fatal(err)
	}
	var compares atomic.Int32
	a.passwords.compare = func(h, pw []byte) error {
		compares.Add(1)
		time.Sleep(20 * time.Millisecond) // as a real cost would
		return bcrypt.CompareHashAndPassword(h, pw)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if _, err := a.Basic("ana", "pw-ana"); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := compares.Load(); n != 1 {
		t.Fatalf("%d bcrypt comparisons for 16 logins with one password, want 1", n)
	}
	if _, err := a.Basic("ana", "wrong"); nserror.CodeOf(err) != nserror.Unauthenticated || compares.Load() != 2 {
		t.Fatalf("a wrong password: %v after %d comparisons", err, compares.Load())
	}
}

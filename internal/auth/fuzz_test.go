package auth

import (
	"strings"
	"testing"

	"github.com/flightns/flightns/nserror"
)

// FuzzBearer feeds hostile bearer tokens and Authorization headers to an
// Authenticator with users, tokens and signed sessions: none panics, none
// authenticates unless it is a configured token or a session this
// Authenticator signed, and every refusal is Unauthenticated (or, for a
// Basic password guess, Throttling).
func FuzzBearer(f *testing.F) {
	a, err := New(Config{Tokens: []TokenEntry{{Token: "static-token-1", Name: "etl", Role: "write"}},
		Users: []UserEntry{{Name: "ana", Password: "pw-ana", Role: "read"}}, SessionKey: []byte(strings.Repeat("k", SessionKeyBytes))})
	if err != nil {
		f.Fatal(err)
	}
	good := a.IssueToken(Principal{Name: "ana", Role: Read})
	for _, s := range []string{good, good[:len(good)-1], "fns1.", "fns1..", "fns1.e30.", "static-token-1", "a.b.c", "", "Basic YW5hOnB3LWFuYQ", "Bearer " + good} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scheme, _, _ := strings.Cut(strings.TrimSpace(s), " ")
		basic := strings.EqualFold(scheme, "basic")
		for _, try := range []func() (Principal, error){func() (Principal, error) { return a.Bearer(s) }, func() (Principal, error) { return a.Header(s) }} {
			p, err := try()
			if err != nil {
				// A password guess may be throttled: the fuzzer guesses
				// the same names far more than ten times a minute.
				if code := nserror.CodeOf(err); code != nserror.Unauthenticated && (code != nserror.Throttling || !basic) {
					t.Fatalf("%q: %v, want Unauthenticated", s, err)
				}
				continue
			}
			if p.Name != "ana" && p.Name != "etl" {
				t.Fatalf("%q authenticated as %+v", s, p)
			}
		}
	})
}

// FuzzParseRoleMap: a role map parses or fails, never panics, and every
// role it yields is a role.
func FuzzParseRoleMap(f *testing.F) {
	for _, s := range []string{"a=read", "a=write,b=admin,*=read", "=read", "a=", ",,", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseRoleMap(s)
		if err != nil {
			return
		}
		for k, r := range m {
			if k == "" || r < Read || r > Admin {
				t.Fatalf("%q: %q -> %v", s, k, r)
			}
		}
	})
}

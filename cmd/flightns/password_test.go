package main

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// hash-password prints a bcrypt hash of the first line it reads, which
// the password (without its line end) and nothing else matches.
func TestHashPasswordPrintsABcryptHash(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := hashPasswordCmd(nil, strings.NewReader("s3cret pass\r\nsecond line\n"), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	h := strings.TrimSuffix(out.String(), "\n")
	if err := bcrypt.CompareHashAndPassword([]byte(h), []byte("s3cret pass")); err != nil {
		t.Fatalf("%q does not match the password: %v", h, err)
	}
	if bcrypt.CompareHashAndPassword([]byte(h), []byte("s3cret pass\r")) == nil {
		t.Fatal("the line end was hashed with the password")
	}
	for _, c := range []struct {
		args  []string
		stdin string
		code  int
	}{{nil, "", 1}, {nil, "\n", 1}, {[]string{"pw"}, "x\n", 2}, {[]string{"--help"}, "", 0}} {
		out.Reset()
		if code := hashPasswordCmd(c.args, strings.NewReader(c.stdin), &out, &errOut); code != c.code || out.Len() != 0 {
			t.Errorf("hash-password %q < %q: exit %d, printed %q; want exit %d and nothing", c.args, c.stdin, code, out.String(), c.code)
		}
	}
}

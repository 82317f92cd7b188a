package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flightns/flightns/nserror"
)

func TestAuthenticator(t *testing.T) {
	h := sha256.Sum256([]byte("s3cret"))
	a, err := New(Config{
		Tokens: []TokenEntry{{Token: "reader-token-1", Name: "r", Role: "read"}},
		Users:  []UserEntry{{Name: "ana", Password: "pw-ana", Role: "write"}, {Name: "root", Password: "sha256:" + hex.EncodeToString(h[:]), Role: "admin"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	cases := []struct {
		header string
		name   string
		role   Role
		code   nserror.Code
	}{
		{"Bearer reader-token-1", "r", Read, -1},
		{"bearer reader-token-1", "r", Read, -1},
		{basic("ana", "pw-ana"), "ana", Write, -1},
		{basic("root", "s3cret"), "root", Admin, -1},
		{"Basic " + base64.RawStdEncoding.EncodeToString([]byte("ana:pw-ana")), "ana", Write, -1}, // arrow-go's Flight client
		{basic("ana", "wrong"), "", 0, nserror.Unauthenticated},
		{basic("nobody", "x"), "", 0, nserror.Unauthenticated},
		{"Bearer nope", "", 0, nserror.Unauthenticated},
		{"", "", 0, nserror.Unauthenticated},
		{"Digest x", "", 0, nserror.Unauthenticated},
		{"Basic !!!", "", 0, nserror.Unauthenticated},
	}
	for _, c := range cases {
		p, err := a.Header(c.header)
		if got := nserror.CodeOf(err); got != c.code || (err == nil && (p.Name != c.name || p.Role != c.role)) {
			t.Errorf("Header(%q) = %+v, %v", c.header, p, err)
		}
	}
	p, _ := a.Basic("ana", "pw-ana")
	tok := a.IssueToken(p)
	if got, err := a.Bearer(tok); err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("a session token: %+v, %v", got, err)
	}
	if err := allow(p, Admin, "recover"); !errors.Is(err, nserror.ErrPermissionDenied) {
		t.Fatalf("a writer administering: %v", err)
	}
	if err := allow(p, Read, "query"); err != nil {
		t.Fatal(err)
	}
	off, _ := New(Config{})
	if off.Enabled() {
		t.Fatal("no credentials configured, yet enabled")
	}
	if p, err := off.Header(""); err != nil || !reflect.DeepEqual(p, Anonymous) {
		t.Fatalf("auth off: %+v, %v", p, err)
	}
	for _, bad := range []Config{
		{Tokens: []TokenEntry{{Token: "short", Role: "read"}}},
		{Tokens: []TokenEntry{{Token: "long-enough", Role: "superuser"}}},
		{Users: []UserEntry{{Name: "u", Password: "sha256:zz", Role: "read"}}},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

// An auth file that names nobody, or says something flightns does not
// understand, is refused, never read as "authentication off".
func TestAnAuthFileThatNamesNobodyIsRefused(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty":            ``,
		"spaces":           "  \n",
		"empty object":     `{}`,
		"no principals":    `{"tokens": [], "users": []}`,
		"a typo":           `{"token": [{"token": "abcdefgh12", "name": "r", "role": "read"}]}`,
		"an unknown field": `{"tokens": [{"token": "abcdefgh12", "name": "r", "role": "read", "admin": true}]}`,
		"two values":       `{"tokens": [{"token": "abcdefgh12", "name": "r", "role": "read"}]} {}`,
		"not JSON":         `tokens: [r]`,
		"null":             `null`,
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := LoadFile(p); err == nil {
			t.Errorf("%s: loaded %+v", name, c)
		} else if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: the error does not name the file: %v", name, err)
		}
	}
	for name, c := range map[string]Config{
		"an unknown role":               {Tokens: []TokenEntry{{Token: "abcdefgh12", Name: "r", Role: "superuser"}}},
		"a token without name":          {Tokens: []TokenEntry{{Token: "abcdefgh12", Role: "read"}}},
		"a short token":                 {Tokens: []TokenEntry{{Token: "abc", Name: "r", Role: "read"}}},
		"a name twice":                  {Tokens: []TokenEntry{{Token: "abcdefgh12", Name: "r", Role: "read"}}, Users: []UserEntry{{Name: "r", Password: "pw", Role: "read"}}},
		"a token twice":                 {Tokens: []TokenEntry{{Token: "abcdefgh12", Name: "r", Role: "read"}, {Token: "abcdefgh12", Name: "w", Role: "write"}}},
		"an empty password":             {Users: []UserEntry{{Name: "ana", Role: "read"}}},
		"a certificate without subject": {Certificates: []CertificateEntry{{Name: "etl", Role: "read"}}},
		"a certificate without name":    {Certificates: []CertificateEntry{{Subject: "CN=etl", Role: "read"}}},
		"a certificate's unknown role":  {Certificates: []CertificateEntry{{Subject: "CN=etl", Name: "etl", Role: "root"}}},
		"a subject twice":               {Certificates: []CertificateEntry{{Subject: "CN=etl", Name: "etl", Role: "read"}, {Subject: "CN=etl", Name: "etl2", Role: "read"}}},
		"a certificate's name twice":    {Users: []UserEntry{{Name: "etl", Password: "pw", Role: "read"}}, Certificates: []CertificateEntry{{Subject: "CN=etl", Name: "etl", Role: "read"}}},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	p := filepath.Join(dir, "good.json")
	if err := os.WriteFile(p, []byte(`{"tokens": [{"token": "abcdefgh12", "name": "r", "role": "read"}], "users": [{"name": "ana", "password": "pw", "role": "write"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(c)
	if tokens, users := a.Principals(); err != nil || !a.Enabled() || tokens != 1 || users != 1 {
		t.Fatalf("a good file: %d tokens, %d users, %v", tokens, users, err)
	}
}

package auth

import (
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/flightns/flightns/internal/testutil/oidctest"
	"github.com/flightns/flightns/nserror"
)

// Bearer JWTs of the configured issuer are verified against its keys:
// a good one is its subject with the role its groups map to, and the
// issuer's key rotation is picked up; expired, not yet valid, wrong
// audience, wrong issuer, unknown key, alg none, HS256 signed with the
// public key and a tampered payload are all refused.
func TestOIDCTokens(t *testing.T) {
	is := oidctest.Start(t)
	k1 := oidctest.NewKey(t, "k1")
	is.Publish(k1)
	roles, err := ParseRoleMap("flightns-writers=write, flightns-admins=admin, *=read")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{OIDC: &OIDCConfig{Issuer: is.URL, Audience: "flightns", Roles: roles}})
	if err != nil || !a.Enabled() {
		t.Fatalf("New: %v (enabled %v)", err, a.Enabled())
	}
	now := time.Now()
	claims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"iss": is.URL, "aud": "flightns", "sub": "ana", "groups": []string{"staff", "flightns-writers"},
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	good := oidctest.Sign(t, jose.RS256, k1.RSA, "k1", claims(nil))
	if p, err := a.Bearer(good); err != nil || p.Name != "ana" || p.Role != Write {
		t.Fatalf("a good token: %+v, %v", p, err)
	}
	if p, err := a.Header("Bearer " + oidctest.Sign(t, jose.RS256, k1.RSA, "k1", claims(func(c map[string]any) { c["groups"] = "flightns-admins" }))); err != nil || p.Role != Admin {
		t.Fatalf("a token of an admin group (a string claim): %+v, %v", p, err)
	}
	if p, err := a.Bearer(oidctest.Sign(t, jose.RS256, k1.RSA, "k1", claims(func(c map[string]any) { delete(c, "groups") }))); err != nil || p.Role != Read {
		t.Fatalf("a token without groups: %+v, %v, want the * role", p, err)
	}

	// The issuer rotates its key: a token of the new key is accepted
	// (the keys are fetched again), one of the retired key is not.
	k2 := oidctest.NewKey(t, "k2")
	is.Publish(k2)
	if p, err := a.Bearer(oidctest.Sign(t, jose.RS256, k2.RSA, "k2", claims(nil))); err != nil || p.Name != "ana" {
		t.Fatalf("a token of the rotated key: %+v, %v", p, err)
	}

	stranger := oidctest.NewKey(t, "k2") // the published key's id, another key
	der := x509.MarshalPKCS1PublicKey(&k2.RSA.PublicKey)
	payload := strings.Split(good, ".")[1]
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	tampered := strings.Replace(string(raw), `"sub":"ana"`, `"sub":"root"`, 1)
	if tampered == string(raw) {
		t.Fatalf("the payload %s does not name ana", raw)
	}
	k2good := oidctest.Sign(t, jose.RS256, k2.RSA, "k2", claims(nil))
	parts := strings.Split(k2good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	for what, tok := range map[string]string{
		"expired":                   oidctest.Sign(t, jose.RS256, k2.RSA, "k2", claims(func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })),
		"not yet valid":             oidctest.Sign(t, jose.RS256, k2.RSA, "k2", claims(func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() })),
		"of another audience":       oidctest.Sign(t, jose.RS256, k2.RSA, "k2", claims(func(c map[string]any) { c["aud"] = "someone-else" })),
		"of another issuer":         oidctest.Sign(t, jose.RS256, k2.RSA, "k2", claims(func(c map[string]any) { c["iss"] = "https://evil.example" })),
		"of an unknown key":         oidctest.Sign(t, jose.RS256, stranger.RSA, "k2", claims(nil)),
		"of the retired key":        good,
		"alg none":                  none,
		"HS256 with the public key": oidctest.Sign(t, jose.HS256, der, "k2", claims(nil)),
		"a tampered payload":        parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(tampered)) + "." + parts[2],
		"without a subject":         oidctest.Sign(t, jose.RS256, k2.RSA, "k2", claims(func(c map[string]any) { delete(c, "sub") })),
		"three dots of nothing":     "a.b.c",
	} {
		if p, err := a.Bearer(tok); nserror.CodeOf(err) != nserror.Unauthenticated {
			t.Errorf("a token %s: %+v, %v; want Unauthenticated", what, p, err)
		}
	}
	if _, err := ParseRoleMap("writers"); err == nil {
		t.Error("a role map entry without = was accepted")
	}
	if _, err := ParseRoleMap("writers=superuser"); err == nil {
		t.Error("an unknown role was accepted")
	}
}

// An issuer that cannot be reached refuses its tokens as "not now"
// (ServiceUnavailable), not as bad ones; the server still starts.
func TestAnUnreachableIssuerIsNotNow(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	a, err := New(Config{OIDC: &OIDCConfig{Issuer: srv.URL, Audience: "flightns"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bearer("x.y.z"); nserror.CodeOf(err) != nserror.ServiceUnavailable {
		t.Fatalf("an unreachable issuer: %v, want ServiceUnavailable", err)
	}
}

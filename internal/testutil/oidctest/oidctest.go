package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is an issuer a test runs; Publish replaces its keys (rotation).
type Issuer struct {
	URL string
	mu  sync.Mutex
	pub jose.JSONWebKeySet
}

// Key is a signing key and its id.
type Key struct {
	ID  string
	RSA *rsa.PrivateKey
}

// Start starts an issuer that publishes no keys yet.
func Start(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		is.mu.Lock()
		defer is.mu.Unlock()
		_ = json.NewEncoder(w).Encode(is.pub)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.URL = srv.URL
	return is
}

// NewKey makes an RSA key with id kid.
func NewKey(t testing.TB, kid string) Key {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return Key{ID: kid, RSA: k}
}

// Publish makes keys the ones the issuer publishes.
func (is *Issuer) Publish(keys ...Key) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.pub = jose.JSONWebKeySet{}
	for _, k := range keys {
		is.pub.Keys = append(is.pub.Keys, jose.JSONWebKey{Key: &k.RSA.PublicKey, KeyID: k.ID, Algorithm: "RS256", Use: "sig"})
	}
}

// Sign signs claims as a JWT with alg and key (a kid header when kid is
// not empty).
func Sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

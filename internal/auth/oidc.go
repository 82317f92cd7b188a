package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/flightns/flightns/nserror"
)

// OIDCConfig accepts bearer JWTs an OpenID Connect issuer signed (an
// access or ID token of Keycloak, Entra ID, Okta, Dex, …) beside the auth
// file's credentials, on every surface.
//
// A token is verified by go-oidc against the issuer's published keys
// (discovered from Issuer/.well-known/openid-configuration, fetched again
// when a token names a key not seen yet: the issuer's key rotation):
// signature (RS256 or ES256 only: "none" and HMAC are refused), exp, nbf,
// iss and aud. Its principal is the claim NameClaim, its role the highest
// that Roles gives a value of the claim RoleClaim (a string or a list),
// which are also its groups (for grants); a token none of whose values is
// mapped has role none: it may do what grants give it, and nothing else.
type OIDCConfig struct {
	Issuer   string
	Audience string
	// NameClaim names the principal (default "sub").
	NameClaim string
	// RoleClaim holds the token's groups or roles (default "groups").
	RoleClaim string
	// Roles maps a value of RoleClaim to a role; "*" matches every token.
	Roles map[string]Role
	// HTTPClient fetches the discovery document and the keys (default
	// http.DefaultClient).
	HTTPClient *http.Client
}

// ParseRoleMap reads "group=role,group=role" (a group "*": every token).
func ParseRoleMap(s string) (map[string]Role, error) {
	out := map[string]Role{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("auth: role map entry %q is not group=role", kv)
		}
		r, err := ParseRole(strings.TrimSpace(v))
		if err != nil {
			return nil, err
		}
		out[strings.TrimSpace(k)] = r
	}
	return out, nil
}

// oidcVerifier verifies tokens of one issuer; it discovers the issuer on
// first use (and again, at most every retryDiscovery, after a failure),
// so that a server starts while its identity provider is down.
type oidcVerifier struct {
	cfg OIDCConfig

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	failed   time.Time
	lastErr  error
}

const retryDiscovery = 10 * time.Second

// EnsureDefaults fills what is unset.
func (c *OIDCConfig) EnsureDefaults() {
	if c.NameClaim == "" {
		c.NameClaim = "sub"
	}
	if c.RoleClaim == "" {
		c.RoleClaim = "groups"
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
}

// Validate refuses a configuration that verifies no token.
func (c *OIDCConfig) Validate() error {
	if c.Issuer == "" || c.Audience == "" {
		return fmt.Errorf("auth: OIDC needs an issuer and an audience")
	}
	return nil
}

// newOIDC is the verifier of c, which Validate admitted.
func newOIDC(c OIDCConfig) *oidcVerifier {
	c.EnsureDefaults()
	return &oidcVerifier{cfg: c}
}

func (o *oidcVerifier) get() (*oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.verifier != nil {
		return o.verifier, nil
	}
	if time.Since(o.failed) < retryDiscovery {
		return nil, o.lastErr
	}
	// The keys are fetched with this context for as long as the server
	// runs: not a request's.
	ctx := oidc.ClientContext(context.Background(), o.cfg.HTTPClient)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, o.cfg.Issuer)
	if err != nil {
		o.failed, o.lastErr = time.Now(), nserror.New(nserror.ServiceUnavailable, "the OIDC issuer %s cannot be reached: %v", o.cfg.Issuer, err)
		return nil, o.lastErr
	}
	var meta struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&meta); err != nil || meta.JWKS == "" {
		o.failed, o.lastErr = time.Now(), nserror.New(nserror.ServiceUnavailable, "the OIDC issuer %s names no keys (jwks_uri)", o.cfg.Issuer)
		return nil, o.lastErr
	}
	o.verifier = oidc.NewVerifier(o.cfg.Issuer, oidc.NewRemoteKeySet(ctx, meta.JWKS),
		&oidc.Config{ClientID: o.cfg.Audience, SupportedSigningAlgs: []string{oidc.RS256, oidc.ES256}})
	return o.verifier, nil
}

// looksLikeJWT reports whether token has a JWT's three parts.
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 && !IsSession(token) }

// verify checks token and returns its principal.
func (o *oidcVerifier) verify(token string) (Principal, error) {
	v, err := o.get()
	if err != nil {
		return Principal{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t, err := v.Verify(ctx, token)
	if err != nil {
		return Principal{}, nserror.New(nserror.Unauthenticated, "invalid or expired token")
	}
	var claims map[string]json.RawMessage
	if err := t.Claims(&claims); err != nil {
		return Principal{}, nserror.New(nserror.Unauthenticated, "invalid or expired token")
	}
	var name string
	if json.Unmarshal(claims[o.cfg.NameClaim], &name) != nil || name == "" {
		return Principal{}, nserror.New(nserror.Unauthenticated, "the token has no %q claim to name its principal", o.cfg.NameClaim)
	}
	var groups []string
	if raw, ok := claims[o.cfg.RoleClaim]; ok {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			groups = []string{one}
		} else {
			_ = json.Unmarshal(raw, &groups)
		}
	}
	p := Principal{Name: name, Role: o.cfg.Roles["*"], Groups: groups}
	for _, g := range groups {
		p.Role = max(p.Role, o.cfg.Roles[g])
	}
	return p, nil
}

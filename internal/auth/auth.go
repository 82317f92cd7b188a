package auth

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/flightns/flightns/nserror"
)

// Role is what a caller may do.
type Role int

// The roles, each allowing what the previous allows. A principal's role
// holds on the whole catalog; None holds nothing there, so that what it
// may do comes from its grants alone (Grants: a role on a namespace's
// subtree).
const (
	None  Role = iota // nothing catalog-wide
	Read              // query and describe
	Write             // and mutate the catalog, commit versions
	Admin             // and administer (recover, compact)
)

func (r Role) String() string {
	switch r {
	case None:
		return "none"
	case Read:
		return "read"
	case Write:
		return "write"
	case Admin:
		return "admin"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ParseRole reads "none", "read", "write" or "admin".
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(s) {
	case "none":
		return None, nil
	case "read":
		return Read, nil
	case "write":
		return Write, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("auth: unknown role %q (want none, read, write or admin)", s)
}

// Principal is an authenticated caller: its name, its catalog-wide role,
// and the groups it belongs to (an OIDC token's group claim, or the
// groups the auth file gives it), which grants may name.
type Principal struct {
	Name   string
	Role   Role
	Groups []string
}

// Anonymous is the caller when authentication is off.
var Anonymous = Principal{Name: "anonymous", Role: Admin}

// Config lists the credentials. A user's Password is a bcrypt hash, the
// password itself or "sha256:<hex of its SHA-256>" (password.go).
type Config struct {
	Tokens []TokenEntry `json:"tokens"`
	Users  []UserEntry  `json:"users"`
	// Certificates name the principals of client certificates (mutual
	// TLS, --tls-client-ca).
	Certificates []CertificateEntry `json:"certificates"`
	// SessionTTL is how long a session token (what a basic handshake
	// answers) lives (default 12h); a handshake with a live one answers a
	// new one.
	SessionTTL time.Duration `json:"-"`
	// SessionKey signs session tokens (SessionKeyBytes or more). Servers
	// that share it (the replicas of a catalog, a restarted server) accept
	// each other's sessions; nil: a key of this process alone.
	SessionKey []byte `json:"-"`
	// Revocations, when set, ends the sessions a revocation names on every
	// replica (within seconds).
	Revocations Revocations `json:"-"`
	// OIDC, when set, accepts bearer JWTs of an OpenID Connect issuer.
	OIDC *OIDCConfig `json:"-"`
}

// TokenEntry is a static bearer token.
type TokenEntry struct {
	Token  string   `json:"token"`
	Name   string   `json:"name"`
	Role   string   `json:"role"`
	Groups []string `json:"groups,omitempty"`
}

// CertificateEntry is the principal of a client certificate whose
// subject, as Go writes it (RFC 2253: "CN=etl,O=Acme"), is Subject.
type CertificateEntry struct {
	Subject string   `json:"subject"`
	Name    string   `json:"name"`
	Role    string   `json:"role"`
	Groups  []string `json:"groups,omitempty"`
}

// UserEntry is a basic-auth user.
type UserEntry struct {
	Name     string   `json:"name"`
	Password string   `json:"password"`
	Role     string   `json:"role"`
	Groups   []string `json:"groups,omitempty"`
}

// LoadFile reads a Config from a JSON file, strictly: a file that names
// nobody would turn authentication off without a word, so an empty file,
// unknown fields (a typo such as "token" for "tokens"), no users and no
// tokens, or anything after the object are errors. New checks the
// entries themselves.
func LoadFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("auth: %s: "+format, append([]any{path}, args...)...)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return bad("the file is empty: list tokens and/or users (or drop --auth-file to run without authentication)")
		}
		return bad("%v (the file holds {\"tokens\": [{\"token\", \"name\", \"role\"}], \"users\": [{\"name\", \"password\", \"role\"}]})", err)
	}
	if dec.More() {
		return bad("more than one JSON value")
	}
	if len(c.Tokens) == 0 && len(c.Users) == 0 && len(c.Certificates) == 0 {
		return bad("no tokens, no users and no certificates: it would turn authentication off (drop --auth-file for that)")
	}
	return c, nil
}

// Authenticator checks credentials. It is safe for concurrent use.
type Authenticator struct {
	tokens    map[string]Principal // token -> its principal
	users     map[string]user
	byName    map[string]Principal // every principal, by name
	certs     map[string]Principal // certificate subject -> its principal
	sessions  *sessions
	logins    *loginLimiter
	passwords *passwords
	oidc      *oidcVerifier // nil without OIDC
}

type user struct {
	password password
	p        Principal
}

// EnsureDefaults fills what is unset: the sessions' lifetime
// (DefaultSessionTTL) and key (one of this process alone), and the OIDC
// issuer's claims.
func (c *Config) EnsureDefaults() {
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.SessionKey == nil {
		c.SessionKey = NewSessionKey() // sessions of this process alone
	}
	if c.OIDC != nil {
		c.OIDC.EnsureDefaults()
	}
}

// Validate refuses what New could not admit: a short session key, an
// unknown role, an empty name or secret, a short token, a bad password
// hash, an OIDC issuer without an audience, or a name, token or
// certificate subject given twice.
func (c *Config) Validate() error {
	if len(c.SessionKey) < SessionKeyBytes {
		return nserror.New(nserror.InvalidInput, "auth: a session key has at least %d bytes, not %d", SessionKeyBytes, len(c.SessionKey))
	}
	names, tokens, subjects := map[string]bool{}, map[string]bool{}, map[string]bool{}
	// named checks a principal's role, groups and that its name is no
	// other's.
	named := func(name, role string, groups []string) error {
		if _, err := ParseRole(role); err != nil {
			return err
		}
		if names[name] {
			return fmt.Errorf("the name %q is given twice", name)
		}
		if slices.Contains(groups, "") {
			return fmt.Errorf("an empty group name")
		}
		names[name] = true
		return nil
	}
	for i, t := range c.Tokens {
		switch {
		case t.Name == "":
			return fmt.Errorf("auth: token %d has no name (the name is who the logs and audit say called)", i+1)
		case len(t.Token) < 8:
			return fmt.Errorf("auth: token of %q is shorter than 8 characters", t.Name)
		case tokens[t.Token]:
			return fmt.Errorf("auth: the token of %q is another's too", t.Name)
		}
		if err := named(t.Name, t.Role, t.Groups); err != nil {
			return fmt.Errorf("auth: token %d (%q): %w", i+1, t.Name, err)
		}
		tokens[t.Token] = true
	}
	for _, u := range c.Users {
		if u.Name == "" || u.Password == "" {
			return fmt.Errorf("auth: a user needs a name and a password")
		}
		if err := named(u.Name, u.Role, u.Groups); err != nil {
			return fmt.Errorf("auth: user %q: %w", u.Name, err)
		}
		if _, err := parsePassword(u.Password); err != nil {
			return fmt.Errorf("auth: password of %q: %w", u.Name, err)
		}
	}
	if c.OIDC != nil {
		if err := c.OIDC.Validate(); err != nil {
			return err
		}
	}
	for _, ce := range c.Certificates {
		if ce.Subject == "" || ce.Name == "" {
			return fmt.Errorf("auth: a certificate needs a subject and a name")
		}
		if subjects[ce.Subject] {
			return fmt.Errorf("auth: the certificate subject %q is given twice", ce.Subject)
		}
		if err := named(ce.Name, ce.Role, ce.Groups); err != nil {
			return fmt.Errorf("auth: certificate %q: %w", ce.Subject, err)
		}
		subjects[ce.Subject] = true
	}
	return nil
}

// New builds an Authenticator; it fails on what Config.Validate refuses.
func New(c Config) (*Authenticator, error) {
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{tokens: map[string]Principal{}, users: map[string]user{}, byName: map[string]Principal{}, certs: map[string]Principal{},
		sessions: newSessions(c.SessionKey, c.SessionTTL, c.Revocations), logins: newLoginLimiter(), passwords: newPasswords()}
	for _, t := range c.Tokens {
		a.tokens[t.Token] = a.named(t.Name, t.Role, t.Groups)
	}
	for _, u := range c.Users {
		pw, _ := parsePassword(u.Password) // checked by Validate
		a.passwords.add(pw)
		a.users[u.Name] = user{password: pw, p: a.named(u.Name, u.Role, u.Groups)}
	}
	if c.OIDC != nil {
		a.oidc = newOIDC(*c.OIDC)
	}
	for _, ce := range c.Certificates {
		a.certs[ce.Subject] = a.named(ce.Name, ce.Role, ce.Groups)
	}
	return a, nil
}

// named records a principal, checked by Config.Validate, by its name.
func (a *Authenticator) named(name, role string, groups []string) Principal {
	r, _ := ParseRole(role)
	p := Principal{Name: name, Role: r, Groups: groups}
	a.byName[name] = p
	return p
}

// Principals counts the tokens and the users.
func (a *Authenticator) Principals() (tokens, users int) {
	if a == nil {
		return 0, 0
	}
	return len(a.tokens), len(a.users)
}

// Enabled reports whether callers must authenticate.
func (a *Authenticator) Enabled() bool {
	return a != nil && (len(a.tokens) > 0 || len(a.users) > 0 || len(a.certs) > 0 || a.oidc != nil)
}

func unauthenticated(format string, args ...any) error {
	return nserror.New(nserror.Unauthenticated, format, args...)
}

// Bearer authenticates a bearer token: a static one or a session token
// (session.go), whose principal must still be configured: it gets the
// role the principal has now.
func (a *Authenticator) Bearer(token string) (Principal, error) {
	if !a.Enabled() {
		return Anonymous, nil
	}
	for t, p := range a.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return p, nil
		}
	}
	if a.oidc != nil && looksLikeJWT(token) {
		return a.oidc.verify(token)
	}
	if !IsSession(token) {
		return Principal{}, errBadSession
	}
	name, err := a.sessions.check(token)
	if err != nil {
		return Principal{}, err
	}
	p, ok := a.byName[name]
	if !ok {
		return Principal{}, errBadSession // removed since
	}
	return p, nil
}

// Basic authenticates a user and password; a name with too many failed
// logins of late is refused (Throttling: limit.go).
func (a *Authenticator) Basic(name, pw string) (Principal, error) {
	if !a.Enabled() {
		return Anonymous, nil
	}
	if err := a.logins.allow(name); err != nil {
		return Principal{}, err
	}
	var stored *password
	u, ok := a.users[name]
	if ok {
		stored = &u.password
	}
	match, err := a.passwords.match(name, stored, pw)
	if err != nil {
		return Principal{}, err
	}
	if !match {
		a.logins.failed(name)
		return Principal{}, unauthenticated("invalid user or password")
	}
	a.logins.succeeded(name)
	return u.p, nil
}

// Header authenticates an Authorization header value ("Basic …" or
// "Bearer …"); an empty one fails when authentication is on.
func (a *Authenticator) Header(v string) (Principal, error) {
	if !a.Enabled() {
		return Anonymous, nil
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
	switch strings.ToLower(scheme) {
	case "bearer":
		return a.Bearer(strings.TrimSpace(cred))
	case "basic":
		// Padding is optional: arrow-go's Flight client sends it unpadded.
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(cred), "="))
		if err != nil {
			return Principal{}, unauthenticated("malformed basic credentials")
		}
		name, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return Principal{}, unauthenticated("malformed basic credentials")
		}
		return a.Basic(name, pass)
	case "":
		return Principal{}, unauthenticated("credentials required (Authorization: Basic or Bearer)")
	}
	return Principal{}, unauthenticated("unsupported authorization scheme %q", scheme)
}

// EndSession ends the session of token (a logout): it is refused from
// now on by this server and by every server of the catalog within
// seconds. A token that is not a live session token (a static token, an
// OIDC token, garbage) has nothing to end.
func (a *Authenticator) EndSession(ctx context.Context, token string) error {
	if !a.Enabled() || !IsSession(token) {
		return nil
	}
	return a.sessions.end(ctx, token)
}

// IssueToken starts a session for p and returns its bearer token, good
// for SessionTTL on every server that shares the session key.
func (a *Authenticator) IssueToken(p Principal) string { return a.sessions.issue(p.Name) }

// SessionTTL is how long a session token lives.
func (a *Authenticator) SessionTTL() time.Duration { return a.sessions.ttl }

type principalKey struct{}

// WithPrincipal is ctx carrying the caller a surface authenticated, for
// what below the surface depends on it (the credentials a table's
// description vends).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom is the caller of ctx (WithPrincipal); ok is false for a
// call that came through no surface (the Go API).
func PrincipalFrom(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// WeakPasswords names the users whose password the auth file holds as
// the password itself or an unsalted SHA-256, and how (for the startup
// log: `flightns hash-password` prints a bcrypt hash to put instead).
func (a *Authenticator) WeakPasswords() map[string]string {
	weak := map[string]string{}
	if a == nil {
		return weak
	}
	for name, u := range a.users {
		if u.password.weak != "" {
			weak[name] = u.password.weak
		}
	}
	return weak
}

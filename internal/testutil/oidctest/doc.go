// Package oidctest is a local OpenID Connect issuer for tests: its
// discovery document, the keys it publishes now (Publish replaces them:
// key rotation), and JWTs signed with any key and algorithm (Sign), good
// or hostile.
package oidctest

// Package auth authenticates and authorizes callers of every surface
// (Flight SQL and REST) the same way: static bearer tokens and basic
// users, each with a role on the whole catalog — none, read, write or
// admin — and groups; Grants (grants.go) add a role on a namespace's
// subtree to a principal or a group (the namespace service keeps and
// checks them); and session tokens
// issued after a basic handshake: signed with the catalog's session key
// (session.go), so every server of the catalog and a restarted one accept
// them until they expire, a revocation (Revocations) ends them all, or a
// logout ends one (EndSession, SessionEnds). Passwords are kept as bcrypt
// hashes (HashPassword), compared one at a time so that logins never
// take more than a core from commits (password.go); password guessing is
// throttled per user name (limit.go). A request that lasts (a change
// feed that follows) authenticates its credentials again as it goes
// (recheck.go: WithRecheck, Recheck), so that a revoked, ended or expired
// session or a changed role ends it.
//
// When no token and no user is configured, authentication is off and
// every caller is an anonymous admin; as soon as one is configured, every
// call must authenticate. Secrets are compared in constant time and never
// logged.
package auth

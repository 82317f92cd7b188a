// Package console is flightns's web console: pages embedded in the binary
// (web/) and the JSON API they call (docs/console.md). It is an adapter
// like REST and Flight: it authenticates the caller (a cookie holding the
// credential a login gave), then reads the catalog through the namespace
// operations' registry (grants included), runs SQL through the Flight
// SQL server's gate (flightserver.Server.Query), plans through the
// planner, and passes /api/v1/ to the REST surface. It decides nothing
// about access itself, and it refuses cross-site requests (a custom
// header on every API call, Origin and Sec-Fetch-Site checks) under a
// strict Content-Security-Policy. A password login's session is the
// console's own (its cookie marks it): logging out ends it on every
// server (auth.Authenticator.EndSession); a token given at login is kept
// as it is and not ended.
package console

// Package console is flightns's web console: pages embedded in the binary
// (web/) and the JSON API they call (docs/console.md). It is an adapter
// like REST and Flight: it authenticates the caller (a cookie holding the
// credential a login gave), then reads the catalog through the namespace
// operations' registry (grants included), runs SQL through the Flight
// SQL server's gate (flightserver.Server.Query: the SQL page, a table's
// versions, and the maintenance signals of the view table_maintenance,
// scoped to the caller's grants like every query), plans through the
// planner, and passes /api/v1/ to the REST surface. It decides nothing
// about access to an object itself; the pages about the whole catalog
// (activity, health) need read on the whole catalog, as the service
// says it (namespace.Access.Readable). It refuses cross-site requests
// (a custom header on every API call, and restserver.CrossSite: Origin
// and Sec-Fetch-Site) under a strict Content-Security-Policy, and writes
// CSV a spreadsheet cannot run (CSVCell). A password login's session is
// the console's own (its cookie marks it): logging out ends it on every
// server (auth.Authenticator.EndSession); a token given at login is kept
// as it is and not ended.
//
// The activity and table pages are live: they read their state once,
// with the catalog sequence it is at (the seq of /api/metrics and
// /api/table: the commit log's head when the call began), and follow the
// change feed after it through the REST passthrough (/api/v1/changes,
// read with fetch so that it carries the console's header and cookie),
// with no timer; the console itself holds no stream and no state of its
// own for them.
package console

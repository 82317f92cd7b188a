// Package flightserver is the Arrow Flight SQL surface of flightns: SQL over
// __manifest, catalog browsing for DBeaver and ADBC, and the Lance Namespace
// operations as Flight actions (DESIGN §5). It is a thin adapter over the
// namespace service.
//
// Not yet implemented; see issue "flightserver".
package flightserver

// This directory is github.com/duckdb/duckdb-go/v2 v2.10506.0 (MIT, see
// LICENSE), vendored for flightns with one change: getValue (value.go)
// reads a NULL of any type as nil, where upstream aborts the process on a
// NULL VARCHAR argument of a table function. FLIGHTNS-PATCH.md says why;
// flightns's go.mod points here with a replace directive. It must not
// change otherwise: drop the copy once upstream checks for NULL.

package duckdb

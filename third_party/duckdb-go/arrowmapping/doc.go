// Package arrowmapping is upstream duckdb-go's mapping of DuckDB's Arrow C
// API, unchanged in flightns's vendored copy (see ../doc.go and
// ../FLIGHTNS-PATCH.md). It holds no logic of flightns's and must not.
package arrowmapping

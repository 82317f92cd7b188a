// Package mapping is upstream duckdb-go's thin layer over the DuckDB C
// bindings, unchanged in flightns's vendored copy (see ../doc.go and
// ../FLIGHTNS-PATCH.md). It holds no logic of flightns's and must not.
package mapping

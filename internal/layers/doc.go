// Package layers holds flightns's layering to the real import graph: its
// test lists every package in a layer, fails when a package imports one
// of its own layer or above (an upward import), when production code
// imports test machinery, or when a package has no layer; and it keeps
// the import graph in docs/architecture.md equal to the real one (go test
// ./internal/layers -update rewrites it).
//
// It has no code: only the test and this table's documentation.
package layers

// Package layers holds flightns's layering to the real import graph: its
// test lists every package in a layer, fails when a package imports one
// of its own layer or above (an upward import), when production code
// imports test machinery, or when a package has no layer; and it keeps
// the import graph in docs/architecture.md equal to the real one (go test
// ./internal/layers -update rewrites it).
//
// A second test (config_test.go) holds docs/architecture.md's claims
// about configuration and backends to the code, type-checking the
// module's packages: every configuration type the doc lists between its
// markers exists and has EnsureDefaults and Validate, every exported
// Config, Options or Limits type (or one ending in Config) outside the
// test machinery is listed, and nothing outside objstore names a
// backend's kind.
//
// It has no code: only the tests and this table's documentation.
package layers

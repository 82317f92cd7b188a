//go:build !duckdb_arrow

// A build without the duckdb_arrow tag (DuckDB's Arrow API) stops here,
// loudly, rather than building a server without SQL or letting
// `go test ./...` pass while it skipped most of the suite: the error
// names what to do. Build with `make`, or pass -tags duckdb_arrow to every
// go command. The definitions below only keep the rest of the package
// (and its importers) compiling, so that this is the one error shown.

package sqlengine

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
)

var _ = flightns_needs_the_build_tag_duckdb_arrow__use_make_or_go_build_tags_duckdb_arrow

var errNoEngine = errors.New("sqlengine: flightns was built without the duckdb_arrow tag; build with -tags duckdb_arrow")

// DB is the engine (see engine.go).
type DB struct{}

// Writer is the engine's writer (see engine.go).
type Writer struct{}

// Open fails: no engine without the tag.
func Open(Config, ...string) (*DB, error) { return nil, errNoEngine }

// Close does nothing.
func (*DB) Close() error { return nil }

// MaxQueries is 0.
func (*DB) MaxQueries() int { return 0 }

// Running is 0.
func (*DB) Running() int { return 0 }

// Write fails.
func (*DB) Write(func(*Writer) error) error { return errNoEngine }

// Visible is 0.
func (*DB) Visible() uint64 { return 0 }

// WaitVisible fails.
func (*DB) WaitVisible(context.Context, uint64) error { return errNoEngine }

// Query fails.
func (*DB) Query(context.Context, string, ...any) (*Result, error) { return nil, errNoEngine }

// Schema fails.
func (*DB) Schema(context.Context, string) (*arrow.Schema, []arrow.DataType, error) {
	return nil, nil, errNoEngine
}

// RegisterTableFunction fails.
func (*DB) RegisterTableFunction(TableFunc) error { return errNoEngine }

// Exec fails.
func (*Writer) Exec(string, ...any) error { return errNoEngine }

// ExecAll fails.
func (*Writer) ExecAll(...string) error { return errNoEngine }

// ExecPrepared fails.
func (*Writer) ExecPrepared(string, ...any) error { return errNoEngine }

// InsertArrow fails.
func (*Writer) InsertArrow(string, []string, arrow.RecordBatch) error { return errNoEngine }

// Publish fails.
func (*Writer) Publish(uint64, func() error) error { return errNoEngine }

// Replace fails.
func (*Writer) Replace(uint64, func() error) error { return errNoEngine }

// Forget fails.
func (*Writer) Forget(uint64) error { return errNoEngine }

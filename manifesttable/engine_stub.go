//go:build !duckdb_arrow

// A build without the duckdb_arrow tag (DuckDB's Arrow API) stops here,
// loudly, rather than building a server without SQL or letting
// `go test ./...` pass while it skipped most of the suite (issue 19):
// the error names what to do. Build with `make`, or pass
// -tags duckdb_arrow to every go command. The definitions below only keep
// the rest of the package compiling, so that this is the one error shown.

package manifesttable

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
)

var _ = flightns_needs_the_build_tag_duckdb_arrow__use_make_or_go_build_tags_duckdb_arrow

// EngineConfig bounds the SQL engine (see engine.go).
type EngineConfig struct {
	Threads     int
	MemoryLimit string
	MaxQueries  int
	SpillDir    string
	SpillLimit  string
}

var errNoEngine = errors.New("manifesttable: flightns was built without the duckdb_arrow tag; build with -tags duckdb_arrow")

type engine struct{}

func openEngine(context.Context, EngineConfig) (*engine, error) { return nil, errNoEngine }

func (e *engine) close() error                                           { return nil }
func (e *engine) applySegment(*segment) error                            { return errNoEngine }
func (e *engine) loadFrozen(*frozen) error                               { return errNoEngine }
func (e *engine) reload(*frozen) error                                   { return errNoEngine }
func (e *engine) query(context.Context, string, ...any) (*Result, error) { return nil, errNoEngine }
func (e *engine) purgeHistory(uint64) error                              { return errNoEngine }
func (e *engine) waitVisible(context.Context, uint64) error              { return errNoEngine }
func (e *engine) Visible() uint64                                        { return 0 }

func (e *engine) schema(context.Context, string) (*arrow.Schema, []arrow.DataType, error) {
	return nil, nil, errNoEngine
}

func (e *engine) registerTableFunction(TableFunc) error { return errNoEngine }

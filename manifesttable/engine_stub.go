//go:build !duckdb_arrow

package manifesttable

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
)

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

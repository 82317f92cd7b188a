package sqlengine

import (
	"context"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Config bounds the SQL engine.
type Config struct {
	// Threads DuckDB may use (default 2).
	Threads int
	// MemoryLimit, e.g. "2GB" (default "4GB"). It bounds the data and every
	// query together.
	MemoryLimit string
	// MaxQueries is the number of queries that run at once (default 32),
	// the server's one bound on them: one more fails at once with
	// Throttling (a gRPC ResourceExhausted, an HTTP 429) that names it. As
	// many statements are planned at once; more wait.
	MaxQueries int
	// SpillDir is where queries may spill what does not fit in memory
	// (default: nowhere, spilling is off).
	SpillDir string
	// SpillLimit bounds the spill directory (default "1GiB").
	SpillLimit string
}

// EnsureDefaults fills what is unset.
func (c *Config) EnsureDefaults() {
	if c.Threads <= 0 {
		c.Threads = 2
	}
	if c.MemoryLimit == "" {
		c.MemoryLimit = "4GB"
	}
	if c.SpillLimit == "" {
		c.SpillLimit = "1GiB"
	}
	if c.MaxQueries <= 0 {
		c.MaxQueries = 32
	}
}

// settings are the DuckDB settings of the engine, all set before the
// database opens; lock_configuration makes every one final.
func (c Config) settings() [][2]string {
	// Paths first: with external access off, DuckDB refuses to set them.
	var s [][2]string
	if c.SpillDir != "" {
		s = append(s, [2]string{"temp_directory", c.SpillDir}, [2]string{"max_temp_directory_size", c.SpillLimit})
	} else {
		s = append(s, [2]string{"max_temp_directory_size", "0B"})
	}
	s = append(s, [][2]string{
		{"enable_external_access", "false"}, {"autoinstall_known_extensions", "false"}, {"autoload_known_extensions", "false"},
		{"allow_community_extensions", "false"}, {"allow_unsigned_extensions", "false"},
		{"threads", strconv.Itoa(c.Threads)}, {"memory_limit", c.MemoryLimit},
	}...)
	return append(s, [2]string{"lock_configuration", "true"})
}

// DatabaseName is the database every connection works in, so that the
// catalog name Flight SQL clients see (flightns.main.__manifest) also
// works in SQL; SchemaName is its schema.
const (
	DatabaseName = "flightns"
	SchemaName   = "main"
)

// QuoteIdent quotes an SQL identifier.
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// TableFunc is a table function of the engine, implemented outside it
// (the planner's plan_scan): SELECT … FROM name('arg', …). Its arguments
// are VARCHARs (a NULL, or a parameter not bound yet when a statement is
// prepared, reaches Bind as ""); Bind answers with Arrow record batches of
// one schema, whose types are among the types the engine's tables hold
// (plus uint64 and int32). It must not query the engine.
type TableFunc struct {
	Name string
	Args int
	Bind func(ctx context.Context, args []string) (*arrow.Schema, []arrow.RecordBatch, error)
}

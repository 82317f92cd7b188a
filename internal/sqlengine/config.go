package sqlengine

import (
	"context"
	"fmt"
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

// Validate refuses sizes DuckDB could not read (ParseSize), naming the
// setting.
func (c *Config) Validate() error {
	if _, err := ParseSize(c.MemoryLimit); err != nil {
		return fmt.Errorf("sqlengine: memory limit: %w", err)
	}
	if _, err := ParseSize(c.SpillLimit); err != nil {
		return fmt.Errorf("sqlengine: spill limit: %w", err)
	}
	return nil
}

// ParseSize reads a size the way DuckDB writes them: a number and a unit,
// B, KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024),
// case-insensitive.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: want a number and a unit such as 512MB or 4GiB", s)
	}
	mult := map[string]float64{"": 1, "b": 1, "bytes": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	return int64(f * mult), nil
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

package manifesttable

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// TableFunc is a table function of the SQL engine, implemented outside it
// (the planner's plan_scan): SELECT … FROM name('arg', …). Its arguments
// are VARCHARs (a NULL, or a parameter not bound yet when a statement is
// prepared, reaches Bind as ""); Bind answers with Arrow record batches of one schema,
// whose types are among the extra column types' Arrow types (plus uint64
// and int32). It must not query the engine.
type TableFunc struct {
	Name string
	Args int
	Bind func(ctx context.Context, args []string) (*arrow.Schema, []arrow.RecordBatch, error)
}

// RegisterTableFunction makes f callable from every query of the table.
func (t *Table) RegisterTableFunction(ctx context.Context, f TableFunc) error {
	if t.eng == nil {
		return errNoSQL
	}
	return t.eng.registerTableFunction(f)
}

package manifesttable

import (
	"context"

	"github.com/flightns/flightns/internal/sqlengine"
)

// RegisterTableFunction makes f callable from every query of the table.
func (t *Table) RegisterTableFunction(ctx context.Context, f sqlengine.TableFunc) error {
	if t.eng == nil {
		return errNoSQL
	}
	return t.eng.db.RegisterTableFunction(f)
}

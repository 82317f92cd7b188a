package planner

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/sqlengine"
)

// SQLFunctionName is the SQL table function of plan_scan:
// SELECT * FROM plan_scan('<table id, $-joined>', '<filter>').
const SQLFunctionName = "plan_scan"

// RegisterSQL makes plan_scan a table function of the catalog's SQL
// engine, answered by this planner. Registering it again (a second
// surface over one service) keeps the first.
func (p *Planner) RegisterSQL(ctx context.Context) error {
	err := p.cat.RegisterTableFunction(ctx, sqlengine.TableFunc{
		Name: SQLFunctionName,
		Args: 2,
		Bind: func(ctx context.Context, args []string) (*arrow.Schema, []arrow.RecordBatch, error) {
			id, err := api.ParseID(args[0], api.Delimiter)
			if err != nil {
				return nil, nil, err
			}
			pl, err := p.PlanScan(ctx, id, args[1])
			if err != nil {
				return nil, nil, err
			}
			return pl.Schema(), pl.Records(memory.DefaultAllocator), nil
		},
	})
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

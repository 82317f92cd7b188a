//go:build !duckdb_arrow

package bench

import (
	"context"
	"errors"
)

func flightScenario() Scenario {
	return Scenario{
		Name:        "flight",
		Description: "SQL through ADBC over Flight at 1M rows (needs the duckdb_arrow build tag)",
		Run: func(context.Context, Config, *Report) error {
			return errors.New("the flight benchmark needs a build with -tags duckdb_arrow")
		},
	}
}

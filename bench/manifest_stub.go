//go:build !duckdb_arrow

package bench

import (
	"context"
	"errors"
)

func manifestScenario() Scenario {
	return Scenario{
		Name:        "manifest",
		Description: "__manifest at 1M rows (needs the duckdb_arrow build tag)",
		Run: func(context.Context, Config, *Report) error {
			return errors.New("the manifest benchmark needs a build with -tags duckdb_arrow")
		},
	}
}

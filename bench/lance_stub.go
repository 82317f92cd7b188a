//go:build !duckdb_arrow

package bench

import (
	"context"
	"errors"
)

func lanceScenario() Scenario {
	return Scenario{
		Name:        "lance",
		Description: "LanceDB appends through flightns REST vs Lance's directory namespace (needs the duckdb_arrow build tag)",
		Run: func(context.Context, Config, *Report) error {
			return errors.New("the lance benchmark needs a build with -tags duckdb_arrow")
		},
	}
}

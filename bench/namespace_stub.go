//go:build !duckdb_arrow

package bench

import (
	"context"
	"errors"
)

func namespaceScenario() Scenario {
	return Scenario{
		Name:        "namespace",
		Description: "namespace service mutations and commits (needs the duckdb_arrow build tag)",
		Run: func(context.Context, Config, *Report) error {
			return errors.New("the namespace benchmark needs a build with -tags duckdb_arrow")
		},
	}
}

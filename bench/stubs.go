//go:build !duckdb_arrow

package bench

import (
	"context"
	"fmt"
)

// The scenarios that need the SQL engine, in a build without it.

// needsDuckDB stands in for a scenario that needs the SQL engine: it is
// listed, and fails if run.
func needsDuckDB(name, description string) Scenario {
	return Scenario{Name: name, Description: description + " (needs the duckdb_arrow build tag)",
		Run: func(context.Context, Config, *Report) error {
			return fmt.Errorf("the %s benchmark needs a build with -tags duckdb_arrow", name)
		}}
}

func manifestScenario() Scenario {
	return needsDuckDB("manifest", "__manifest at 1M rows")
}

func flightScenario() Scenario {
	return needsDuckDB("flight", "SQL through ADBC over Flight at 1M rows")
}

func namespaceScenario() Scenario {
	return needsDuckDB("namespace", "namespace service mutations and commits")
}

func lanceScenario() Scenario {
	return needsDuckDB("lance", "LanceDB appends through flightns REST vs Lance's directory namespace")
}

func planScenario() Scenario {
	return needsDuckDB("plan", "plan_scan at 10k and 100k leaves")
}

func hostileScenario() Scenario {
	return needsDuckDB("hostile-queries", "commits under hostile queries")
}

func commitStepsScenario() Scenario {
	return needsDuckDB("commit-steps", "a lone writer's commit split into its steps")
}

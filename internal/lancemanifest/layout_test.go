package lancemanifest

import "testing"

func TestSplitChain(t *testing.T) {
	tables := map[string]bool{"ab_t": true, "x/tree/y": true}
	isTable := func(s string) bool { return tables[s] }
	for chain, want := range map[string][2]string{
		"ab_t":                  {"ab_t", ""},
		"ab_t/tree/dev":         {"ab_t", "dev"},
		"ab_t/tree/team/a/b":    {"ab_t", "team/a/b"},
		"ab_t/tree/tree/x":      {"ab_t", "tree/x"},
		"x/tree/y":              {"x/tree/y", ""}, // a table whose location has a tree/ in it
		"x/tree/y/tree/b":       {"x/tree/y", "b"},
		"unknown/tree/b":        {"unknown/tree/b", ""},
		"ab_tx/tree/dev":        {"ab_tx/tree/dev", ""},
		BranchChain("ab_t", ""): {"ab_t", ""},
	} {
		table, branch := SplitChain(chain, isTable)
		if table != want[0] || branch != want[1] {
			t.Errorf("SplitChain(%q) = %q, %q; want %q, %q", chain, table, branch, want[0], want[1])
		}
	}
}

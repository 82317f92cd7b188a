package lancemanifest

import "testing"

func TestParseChain(t *testing.T) {
	tables := map[string]bool{"ab_t": true, "x/tree/y": true}
	isTable := func(s string) bool { return tables[s] }
	for chain, want := range map[string][2]string{
		"ab_t":                     {"ab_t", ""},
		"ab_t/tree/dev":            {"ab_t", "dev"},
		"ab_t/tree/team/a/b":       {"ab_t", "team/a/b"},
		"ab_t/tree/tree/x":         {"ab_t", "tree/x"},
		"x/tree/y":                 {"x/tree/y", ""}, // a table whose location has a tree/ in it
		"x/tree/y/tree/b":          {"x/tree/y", "b"},
		"unknown/tree/b":           {"unknown/tree/b", ""},
		"ab_tx/tree/dev":           {"ab_tx/tree/dev", ""},
		Chain{Table: "ab_t"}.Key(): {"ab_t", ""},
	} {
		c := ParseChain(chain, isTable)
		if string(c.Table) != want[0] || c.Branch != want[1] {
			t.Errorf("ParseChain(%q) = %q, %q; want %q, %q", chain, c.Table, c.Branch, want[0], want[1])
		}
	}
}

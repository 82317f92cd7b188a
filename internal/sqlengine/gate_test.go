//go:build duckdb_arrow

package sqlengine

import (
	"strings"
	"testing"

	"github.com/flightns/flightns/nserror"
)

func TestExplainBodyIsWhatTheExplainExplains(t *testing.T) {
	for q, want := range map[string]string{
		"EXPLAIN SELECT 1":                        "SELECT 1",
		"explain analyze SELECT 1":                "SELECT 1",
		" ;EXPLAIN ANALYSE\n-- x\nSELECT 1":       "",
		" ;-- x\rEXPLAIN ANALYSE\nSELECT 1":       "SELECT 1",
		"EXPLAIN (FORMAT json) SELECT 1":          "SELECT 1",
		"EXPLAIN ANALYZE (FORMAT json, x) FROM t": "FROM t",
		"/* a */ EXPLAIN /* b */ DROP TABLE x":    "",
		"/* a */ EXPLAIN DROP TABLE x":            "DROP TABLE x",
		"EXPLAIN --\rINSERT INTO t --\nSELECT 1":  "",
		"EXPLAINSELECT 1":                         "",
		"EXPLAIN (SELECT 1);":                     "",
		"EXPLAIN ('a') SELECT 1":                  "",
		"EXPLAIN (FORMAT json SELECT 1":           "",
		"EXPLAIN":                                 "",
		"SELECT 1":                                "",
		"EXPLAIN /* /* nested */ */ SELECT 1":     "",
		"EXPLAIN -- no end":                       "",
	} {
		got, ok := explainBody(q)
		if (want == "") == ok || got != want {
			t.Errorf("explainBody(%q) = %q, %v; want %q", q, got, ok, want)
		}
	}
}

// DuckDB's errors get the Lance code of what happened, by type; an
// allocation that failed while DuckDB built its error (the SQL worker's
// data segment is capped) is out of memory, not a fault of DuckDB.
func TestDuckErrorsGetTheCodeOfWhatHappened(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want nserror.Code
	}{
		{"Binder Error: Referenced column \"x\" not found", nserror.InvalidInput},
		{"Out of Memory Error: could not allocate block of size 256 KiB (512.0 MiB/512.0 MiB used)", nserror.Throttling},
		{"INTERNAL Error: Primary exception: (%s %s %s)\nSecondary exception in ExceptionFormatValue: std::bad_alloc", nserror.Throttling},
		{"INTERNAL Error: Attempted to access index 3 within vector of size 3", nserror.Internal},
		{"Permission Error: disabled by configuration", nserror.PermissionDenied},
		{"INTERRUPT Error: Interrupted!", nserror.ServiceUnavailable},
		{"Invalid Input Error: Cannot change configuration option \"threads\" - the configuration has been locked", nserror.PermissionDenied},
	} {
		if got := nserror.CodeOf(prepareError(c.msg)); got != c.want {
			t.Errorf("%q: %s, want %s", c.msg, got, c.want)
		}
	}
}

// The gate's own scanner reads hostile text before DuckDB sees it: it
// must never panic, and what it returns is always a tail of its input.
func FuzzGateScanner(f *testing.F) {
	for _, q := range []string{
		"/*/", "/**/SELECT 1", "--\r;EXPLAIN ANALYZE (x) DROP TABLE t", "EXPLAIN (", ";;/* a */ SELECT",
		"EXPLAIN ((", "/* /* */ */", "\u00a0EXPLAIN\u2028SELECT 1",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		for _, semicolons := range []bool{false, true} {
			if s := skipSpace(q, semicolons); !strings.HasSuffix(q, s) {
				t.Fatalf("skipSpace(%q, %v) = %q, not a tail of it", q, semicolons, s)
			}
		}
		if body, ok := explainBody(q); !strings.HasSuffix(q, body) || ok && body == "" {
			t.Fatalf("explainBody(%q) = %q, %v", q, body, ok)
		}
		if w := leadingKeyword(q); w != strings.ToUpper(w) {
			t.Fatalf("leadingKeyword(%q) = %q, not upper-cased", q, w)
		}
	})
}

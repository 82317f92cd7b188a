package planner

import (
	"strings"
	"testing"

	"github.com/flightns/flightns/nserror"
)

func TestFilterErrorsNameTheirPosition(t *testing.T) {
	_, schema, err := parseSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ filter, want string }{
		{"nope = 1", `unknown column "nope" at position 1`},
		{"i = 1 AND zz > 2", `unknown column "zz" at position 11`},
		{"i = 'x'", `string 'x' does not fit column i of type int64 at position 5`},
		{"d < DATE '2024-13-01'", `at position 5`},
		{"s LIKE 3", `LIKE takes a 'pattern' or NULL`},
		{"i = 1 AND", `expected a column or a literal, found end of filter at position 10`},
		{"(i = 1", `expected ")"`},
		{"i = 1)", `unexpected ")" at position 6`},
		{"i = i", `compare a column with a literal`},
		{"i LIKE 'a%'", `LIKE needs a string column`},
		{"s = 'unterminated", `unterminated ' at position 5`},
		{"i # 2", `unexpected character '#' at position 3`},
		{"ts > TIMESTAMP 'yesterday'", `is not a timestamp`},
		{strings.Repeat("NOT ", 200) + "i = 1", `nested deeper than`},
	} {
		_, err := ParseFilter(c.filter, schema)
		if err == nil {
			t.Errorf("%q parsed", c.filter)
			continue
		}
		if nserror.CodeOf(err) != nserror.InvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v (code %d), want InvalidInput containing %q", c.filter, err, nserror.CodeOf(err), c.want)
		}
	}
}

func TestFiltersParseAndPrintBack(t *testing.T) {
	_, schema, _ := parseSchema(testSchema)
	for _, c := range []struct{ filter, want string }{
		{"", "TRUE"},
		{"i = 1", "i = 1"},
		{"3 < i", "i > 3"},
		{"I >= -2.0", "i >= -2"},
		{`"s" IN ('a', 'b''c')`, "s IN ('a', 'b''c')"},
		{"s NOT LIKE 'ab%'", "s NOT LIKE 'ab%'"},
		{"d BETWEEN '2024-01-01' AND DATE '2024-02-01'", "(d >= DATE '2024-01-01' AND d <= DATE '2024-02-01')"},
		{"ts = '2024-01-01T10:00:00Z'", "ts = TIMESTAMP '2024-01-01 10:00:00'"},
		{"NOT b = TRUE OR f IS NOT NULL", "((NOT b = TRUE) OR f IS NOT NULL)"},
		{"i = NULL", "NULL"},
		{"NOT i = NULL", "(NOT NULL)"},
		{"i NOT IN (1, NULL)", "(i NOT IN (1) AND NULL)"},
		{"i IN (NULL, 2)", "(i IN (2) OR NULL)"},
		{"i IN (NULL)", "NULL"},
		{"d NOT BETWEEN DATE '1970-05-29' AND NULL", "(d < DATE '1970-05-29' OR NULL)"},
		{"i BETWEEN NULL AND 3", "(NULL AND i <= 3)"},
		{"s LIKE NULL", "NULL"},
		{"NULL", "NULL"},
		{"NULL IS NULL", "TRUE"},
		{"3 IS NULL", "FALSE"},
		{"NULL IS NOT NULL OR i = 1", "(FALSE OR i = 1)"},
	} {
		e, err := ParseFilter(c.filter, schema)
		if err != nil {
			t.Errorf("%q: %v", c.filter, err)
			continue
		}
		if got := e.String(); got != c.want {
			t.Errorf("%q parsed to %s, want %s", c.filter, got, c.want)
		}
		if _, err := ParseFilter(e.String(), schema); err != nil {
			t.Errorf("%q printed %s, which does not parse: %v", c.filter, e, err)
		}
	}
}

// FuzzParseFilter: never a panic; a filter either parses (and its printed
// form parses to the same text) or fails with InvalidInput.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"i = 1", "s LIKE 'a%' AND NOT (d < DATE '2024-01-01')", "ts BETWEEN '2024-01-01' AND '2024-02-01' OR i IN (1,2,3)",
		`"s" IS NOT NULL`, "b = TRUE", "f >= -1.5e3", "(((i)))", "i NOT IN (1, NULL)", "n <> 4 OR n != 5"} {
		f.Add(s)
	}
	_, schema, _ := parseSchema(testSchema)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseFilter(s, schema)
		if err != nil {
			if nserror.CodeOf(err) != nserror.InvalidInput {
				t.Fatalf("%q: %v is not InvalidInput", s, err)
			}
			return
		}
		again, err := ParseFilter(e.String(), schema)
		if err != nil {
			t.Fatalf("%q printed as %q, which fails: %v", s, e, err)
		}
		if again.String() != e.String() {
			t.Fatalf("%q printed as %q, reparsed as %q", s, e, again)
		}
	})
}

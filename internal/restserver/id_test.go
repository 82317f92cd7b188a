package restserver

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
)

func TestParseID(t *testing.T) {
	for _, tc := range []struct {
		raw, delim string
		want       []string // nil: InvalidInput
	}{
		{"%24", "$", []string{}},        // the root, as Lance sends it
		{"$", "$", []string{}},          // the root, unescaped
		{"prod", "$", []string{"prod"}}, // one name
		{"prod%24sales%24orders", "$", []string{"prod", "sales", "orders"}},
		{"prod$sales", "$", []string{"prod", "sales"}},
		{"a%2Fb", "$", []string{"a/b"}},                // an encoded slash stays in its name
		{"with+space", "$", []string{"with space"}},    // form-encoded, as Lance sends a space
		{"a%2Bb", "$", []string{"a+b"}},                // and a plus
		{"a%20b", "$", []string{"a b"}},                // a space percent-encoded
		{"caf%C3%A9", "$", []string{"café"}},           // UTF-8
		{"prod.sales", ".", []string{"prod", "sales"}}, // another delimiter
		{".", ".", []string{}},                         // its root
		{"a%3A%3Ab", "::", []string{"a", "b"}},         // a longer one
		{"prod$sales", ".", nil},                       // "$" is never part of a name
		{"", "$", nil},                                 // empty: the root is the delimiter
		{"a%24%24b", "$", nil},                         // an empty name
		{"%24a", "$", nil},                             // a leading empty name
		{"a%24", "$", nil},                             // a trailing empty name
		{"%zz", "$", nil},                              // bad percent-encoding
		{"a%00b", "$", nil},                            // a control character
		{"%FF", "$", nil},                              // not UTF-8
		{"..", "$", nil},                               // not a name
		{strings.Repeat("a%24", 16) + "a", "$", nil},   // 17 levels
		{strings.Repeat("x", api.MaxNameLen+1), "$", nil},
	} {
		got, err := parseID(tc.raw, tc.delim)
		if tc.want == nil {
			if err == nil || nserror.CodeOf(err) != nserror.InvalidInput {
				t.Errorf("parseID(%q, %q) = %q, %v; want InvalidInput", tc.raw, tc.delim, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal([]string(got), tc.want) || got == nil {
			t.Errorf("parseID(%q, %q) = %#v, %v; want %q", tc.raw, tc.delim, got, err, tc.want)
		}
	}
}

func TestDelimiterOf(t *testing.T) {
	for _, tc := range []struct {
		query, want string
		ok          bool
	}{
		{"", "$", true},
		{"delimiter=%24", "$", true},
		{"delimiter=", "$", true},
		{"delimiter=.", ".", true},
		{"delimiter=%3A%3A", "::", true},
		{"delimiter=%0A", "", false},
		{"delimiter=" + strings.Repeat("x", MaxDelimiterLen+1), "", false},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := delimiterOf(q)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("delimiterOf(%q) = %q, %v", tc.query, got, err)
		}
	}
}

// FuzzParseID: no input panics; an accepted id has valid names without the
// delimiter, and joining and escaping it again gives the same id.
func FuzzParseID(f *testing.F) {
	for _, s := range []struct{ raw, delim string }{
		{"%24", "$"}, {"prod%24sales%24orders", "$"}, {"a%2Fb", "$"}, {"a+b", "$"}, {"a%2Bb", "+"}, {"a%24%24b", "$"},
		{"%zz", "$"}, {"prod.sales", "."}, {"a%3A%3Ab", "::"}, {"%C3%A9", "$"}, {"", ""}, {"%", "%"},
		{"a$b", "a"}, {"..", "."}, {"%2e%2e", "$"},
	} {
		f.Add(s.raw, s.delim)
	}
	f.Fuzz(func(t *testing.T, raw, delim string) {
		if delim == "" {
			delim = "$"
		}
		id, err := parseID(raw, delim)
		if err != nil {
			if nserror.CodeOf(err) != nserror.InvalidInput {
				t.Fatalf("parseID(%q, %q): %v is not InvalidInput", raw, delim, err)
			}
			return
		}
		if err := id.Validate("fuzzed"); err != nil {
			t.Fatalf("parseID(%q, %q) accepted an invalid id %q: %v", raw, delim, id, err)
		}
		for _, n := range id {
			if strings.Contains(n, delim) {
				t.Fatalf("parseID(%q, %q): name %q contains the delimiter", raw, delim, n)
			}
		}
		joined := strings.Join(id, delim)
		if len(id) == 0 {
			joined = delim
		}
		again, err := parseID(url.QueryEscape(joined), delim)
		if err != nil || !again.Equal(id) {
			t.Fatalf("parseID(%q, %q) = %q, but its own escaped form parses to %q, %v", raw, delim, id, again, err)
		}
	})
}

// TestStatusOfEveryCode pins the one table of code -> HTTP status.
func TestStatusOfEveryCode(t *testing.T) {
	want := map[int]int{
		0: http.StatusNotAcceptable,
		1: 404, 4: 404, 6: 404, 8: 404, 10: 404, 11: 404, 12: 404, 22: 404,
		2: 409, 3: 409, 5: 409, 7: 409, 9: 409, 14: 409, 19: 409, 23: 409,
		13: 400, 20: 400,
		15: 403, 16: 401, 17: 503, 21: 429,
		18: 500, 24: 500, 99: 500, -1: 500,
	}
	for code, status := range want {
		if got := StatusOf(nserror.Code(code)); got != status {
			t.Errorf("code %d: HTTP %d, want %d", code, got, status)
		}
	}
}

package api

import (
	"errors"
	"strings"
	"testing"

	"github.com/flightns/flightns/nserror"
)

// Hostile ids are InvalidInput (the REST adapter parses path ids with
// ParseID): a megabyte of delimiters, more levels than MaxDepth, an empty
// name, a name that is a path segment. The root and ordinary ids parse.
func TestParseIDRefusesHostileIDs(t *testing.T) {
	for _, bad := range []string{
		strings.Repeat("$", 1<<20),
		strings.Repeat("a$", MaxDepth) + "a",
		"a$$b", "$a", "a$..",
	} {
		if _, err := ParseID(bad, Delimiter); !errors.Is(err, nserror.ErrInvalidInput) {
			t.Errorf("ParseID(%.40q…) = %v, want InvalidInput", bad, err)
		}
	}
	if id, err := ParseID("$", Delimiter); err != nil || !id.IsRoot() {
		t.Errorf("the root: %v, %v", id, err)
	}
	if id, err := ParseID("a.b.c", "."); err != nil || len(id) != 3 {
		t.Errorf("a.b.c split on '.': %v, %v", id, err)
	}
}

package nserror

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestSentinelsMatchByCodeWhateverTheMessage(t *testing.T) {
	err := New(TableNotFound, "table %q not found", "a$b")
	wrapped := fmt.Errorf("describe: %w", err)
	if !errors.Is(wrapped, ErrTableNotFound) {
		t.Fatalf("errors.Is(%v, ErrTableNotFound) = false", wrapped)
	}
	if errors.Is(wrapped, ErrNamespaceNotFound) {
		t.Fatalf("a TableNotFound error matched ErrNamespaceNotFound")
	}
	if got := wrapped.Error(); got != `describe: table "a$b" not found` {
		t.Fatalf("message = %q", got)
	}
}

func TestNewWrapsTheCauseGivenWithPercentW(t *testing.T) {
	err := New(Internal, "reading manifest: %w", io.ErrUnexpectedEOF)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cause lost: %v", err)
	}
	if !errors.Is(err, ErrInternal) {
		t.Fatalf("code lost: %v", err)
	}
}

func TestCodeOf(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, -1},
		{"plain error is internal", io.EOF, Internal},
		{"direct", New(InvalidInput, "bad id"), InvalidInput},
		{"wrapped", fmt.Errorf("x: %w", New(ConcurrentModification, "taken")), ConcurrentModification},
		{"sentinel", ErrThrottling, Throttling},
	}
	for _, c := range cases {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("%s: CodeOf = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCodeNamesFollowTheSpecNumbers(t *testing.T) {
	for code, name := range map[Code]string{1: "NamespaceNotFound", 11: "TableVersionNotFound", 14: "ConcurrentModification", 21: "Throttling"} {
		if code.String() != name {
			t.Errorf("Code(%d).String() = %q, want %q", int(code), code.String(), name)
		}
	}
	if got := Code(99).String(); got != "Code(99)" {
		t.Errorf("unknown code prints %q", got)
	}
}

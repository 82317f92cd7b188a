package configtest

import (
	"strings"
	"testing"
)

// Check fails tb unless err, a Validate's answer, is what want says: nil
// when want is "", else an error whose text holds want.
func Check(tb testing.TB, err error, want string) {
	tb.Helper()
	switch {
	case want == "" && err != nil:
		tb.Fatalf("Validate() = %v, want nil", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		tb.Fatalf("Validate() = %v, want an error with %q", err, want)
	}
}

package restserver

import (
	"strings"
	"testing"
)

func TestOptionsValidateRefusesANegativeBodyLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string // "" accepted, else a part of the error
	}{
		{"the zero value (every default)", Options{}, ""},
		{"a body limit", Options{MaxBodyBytes: 1 << 10}, ""},
		{"a negative body limit", Options{MaxBodyBytes: -1}, "Options.MaxBodyBytes -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.EnsureDefaults()
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

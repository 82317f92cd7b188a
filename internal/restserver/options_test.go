package restserver

import (
	"testing"

	"github.com/flightns/flightns/internal/testutil/configtest"
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
			configtest.Check(t, err, tc.want)
		})
	}
}

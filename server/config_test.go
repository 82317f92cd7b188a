package server

import (
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/configtest"
)

func TestHTTPValidateRefusesNegativeBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		http HTTP
		want string // "" accepted, else a part of the error
	}{
		{"the zero value (every default)", HTTP{}, ""},
		{"every bound set", HTTP{ReadHeaderTimeout: time.Second, IdleTimeout: time.Second, MaxHeaderBytes: 1 << 10}, ""},
		{"negative header timeout", HTTP{ReadHeaderTimeout: -time.Second}, "HTTP.ReadHeaderTimeout -1s is negative"},
		{"negative idle timeout", HTTP{IdleTimeout: -time.Second}, "HTTP.IdleTimeout -1s is negative"},
		{"negative header size", HTTP{MaxHeaderBytes: -1}, "HTTP.MaxHeaderBytes -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.http.Validate()
			configtest.Check(t, err, tc.want)
			// EnsureDefaults fills only what is unset: a negative bound
			// stays, for Config.Validate to refuse.
			h := tc.http
			h.EnsureDefaults()
			if err := h.Validate(); (err == nil) != (tc.want == "") {
				t.Fatalf("after EnsureDefaults: Validate() = %v", err)
			}
		})
	}
}

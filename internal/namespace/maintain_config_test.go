package namespace

import (
	"math"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/configtest"
)

func TestMaintainConfigValidateRefusesNegativeIntervalsAndBusyOutsideAShare(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  MaintainConfig
		want string // "" accepted, else a part of the error
	}{
		{"the zero value (every default)", MaintainConfig{}, ""},
		{"bench's", MaintainConfig{Interval: time.Hour, CleanupEvery: time.Millisecond}, ""},
		{"never resting", MaintainConfig{Busy: 1}, ""},
		{"negative interval", MaintainConfig{Interval: -time.Second}, "MaintainConfig.Interval -1s is negative"},
		{"negative cleanup spacing", MaintainConfig{CleanupEvery: -time.Second}, "MaintainConfig.CleanupEvery -1s is negative"},
		{"negative follow spacing", MaintainConfig{FollowEvery: -time.Second}, "MaintainConfig.FollowEvery -1s is negative"},
		{"negative full pass count", MaintainConfig{FullEvery: -1}, "MaintainConfig.FullEvery -1 is negative"},
		{"negative busy", MaintainConfig{Busy: -0.5}, "MaintainConfig.Busy -0.5 is not a share"},
		{"busy above 1", MaintainConfig{Busy: 2}, "MaintainConfig.Busy 2 is not a share"},
		{"busy NaN", MaintainConfig{Busy: math.NaN()}, "MaintainConfig.Busy NaN is not a share"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			configtest.Check(t, err, tc.want)
			c := tc.cfg
			c.EnsureDefaults()
			if err := c.Validate(); (err == nil) != (tc.want == "") {
				t.Fatalf("after EnsureDefaults: Validate() = %v", err)
			}
		})
	}
}

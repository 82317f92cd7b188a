package redisclaim

import (
	"context"

	"github.com/flightns/flightns/nserror"
)

// Attempts is the one budget of a Redis call that may have to wait for
// recovery (Redis lost the catalog's state) or seed a table's head from
// storage before it settles: ten rounds, plus extra for a call that may
// seed each of several members once for each of two reasons (a claim
// over n tables: 2n). Past it the call fails with ServiceUnavailable: the
// outcome is unknown and a retry is safe.
func Attempts(extra int) int { return 10 + extra }

// WithEpoch is the one "recover when Redis lost the catalog's state, then
// retry" policy of every Redis call of the catalog (claims, reads, the
// namespace scripts). call runs a script (or reads Redis); a reply whose
// status is NOEPOCH means Redis holds no epoch for the catalog: the
// catalog is recovered from storage and call runs again. settle decides
// every other reply: done ends the call, !done runs call again within the
// same budget (after it seeded a head from storage, say). what names the
// call in the error of a call that never settles.
func (s *Store) WithEpoch(ctx context.Context, what string, extra int, call func() ([]any, error), settle func(r []any) (done bool, err error)) error {
	for range Attempts(extra) {
		r, err := call()
		if err != nil {
			return err
		}
		if reply(r).status() == StatusNoEpoch {
			if err := s.Recover(ctx); err != nil {
				return err
			}
			continue
		}
		done, err := settle(r)
		if err != nil || done {
			return err
		}
	}
	return nserror.New(nserror.ServiceUnavailable, "%s did not settle after %d attempts: Redis keeps losing the catalog's state, or its heads keep moving", what, Attempts(extra))
}

// StatusNoEpoch is the status of a script's reply when Redis holds no
// epoch for the catalog: it lost its state (a restart without
// persistence, a FLUSHALL, a failover to an empty replica).
const StatusNoEpoch = "NOEPOCH"

// Final is WithEpoch's settle function for calls whose every reply but
// NOEPOCH is final.
func Final([]any) (bool, error) { return true, nil }

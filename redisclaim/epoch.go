package redisclaim

import (
	"context"
	"errors"

	"github.com/flightns/flightns/internal/redisstate"
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
// namespace scripts). call runs a script (or reads Redis), keeps its
// typed reply and returns its status; redisstate.NoEpoch means Redis
// holds no epoch for the catalog: the catalog is recovered from storage
// and call runs again. settle decides every other status: done ends the
// call, !done runs call again within the same budget (after it seeded a
// head from storage, say), and so does an error of Again. what names the
// call in the error of a call that never settles (ServiceUnavailable, or
// the last Again's error).
func (s *Store) WithEpoch(ctx context.Context, what string, extra int, call func() (redisstate.Status, error), settle func(redisstate.Status) (done bool, err error)) error {
	var last *again
	for range Attempts(extra) {
		st, err := call()
		if err != nil {
			return err
		}
		if st == redisstate.NoEpoch {
			if err := s.Recover(ctx); err != nil {
				return err
			}
			continue
		}
		done, err := settle(st)
		if errors.As(err, &last) {
			continue
		}
		if err != nil || done {
			return err
		}
	}
	if last != nil {
		return last.err
	}
	return nserror.New(nserror.ServiceUnavailable, "%s did not settle after %d attempts: Redis keeps losing the catalog's state, or its heads keep moving", what, Attempts(extra))
}

// Again is a settle function's error that runs the call again within
// WithEpoch's budget; err is the call's error once the budget is spent.
// A change built from what was read answers it when a guard finds that
// what it read changed meanwhile: it is built again from what is there
// now, and err says the change kept losing that race.
func Again(err error) error { return &again{err} }

type again struct{ err error }

func (a *again) Error() string { return a.err.Error() }

// Final is WithEpoch's settle function for calls whose every reply but
// NOEPOCH is final.
func Final(redisstate.Status) (bool, error) { return true, nil }

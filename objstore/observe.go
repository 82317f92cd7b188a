package objstore

import "time"

// ObserveFunc is called after every operation on one key has run against
// storage, with its duration and its raw error (nil, a not-found or
// already-exists condition, or a failure), for an operator's metrics. It
// must be cheap and must not block; it cannot change an outcome.
type ObserveFunc func(op Op, key string, took time.Duration, err error)

func (s *Store) observe(op Op, key string, start time.Time, err error) {
	if s.obs != nil {
		s.obs(op, key, time.Since(start), err)
	}
}

package auth

// roomFor makes room in m, a map this package bounds to max entries
// (failed logins, remembered matches, ended sessions): when it is full,
// the entries stale says are of no more use go. It reports whether a new
// entry fits; one that does not is left out, never an entry still of use.
func roomFor[K comparable, V any](m map[K]V, max int, stale func(V) bool) bool {
	if len(m) < max {
		return true
	}
	for k, v := range m {
		if stale(v) {
			delete(m, k)
		}
	}
	return len(m) < max
}

package auth

import (
	"sync"
	"time"

	"github.com/flightns/flightns/nserror"
)

// Password guessing is limited per user name: after maxLoginFailures
// failed logins of a name within loginWindow, every login of that name
// (the right password too, or the limit would not stop a guesser) is
// refused with Throttling until the window that began with the first of
// them ends. Names nobody has are counted alike, so the refusal does not
// tell which names exist. The count is this process's: n servers of a
// catalog allow n times as many guesses. Sessions and tokens already
// issued are not affected.
const (
	maxLoginFailures = 10
	loginWindow      = time.Minute
	// maxLoginNames bounds the names counted at once; past it (after the
	// finished windows are dropped) a new name is not counted.
	maxLoginNames = 100000
)

type loginLimiter struct {
	now func() time.Time

	mu    sync.Mutex
	names map[string]loginFailures
}

type loginFailures struct {
	n     int
	since time.Time // the first failure of the window
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{now: time.Now, names: map[string]loginFailures{}}
}

// allow refuses a login of name while it is throttled.
func (l *loginLimiter) allow(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.names[name]
	if !ok || f.n < maxLoginFailures {
		return nil
	}
	left := loginWindow - l.now().Sub(f.since)
	if left <= 0 {
		delete(l.names, name)
		return nil
	}
	return nserror.New(nserror.Throttling, "too many failed logins of this user: try again in %s", left.Round(time.Second))
}

// failed counts a failed login of name.
func (l *loginLimiter) failed(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f, ok := l.names[name]
	if !ok || now.Sub(f.since) >= loginWindow {
		if !ok && !roomFor(l.names, maxLoginNames, func(v loginFailures) bool { return now.Sub(v.since) >= loginWindow }) {
			return
		}
		f = loginFailures{since: now}
	}
	f.n++
	l.names[name] = f
}

// succeeded forgets name's failures: its user knows the password.
func (l *loginLimiter) succeeded(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.names, name)
}

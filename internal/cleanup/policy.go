package cleanup

import (
	"time"

	"github.com/flightns/flightns/nserror"
)

// DefaultGrace is the grace period of a Policy that sets none: Lance's own
// (UNVERIFIED_THRESHOLD_DAYS in lance rust/lance/src/dataset/cleanup.rs),
// within which Lance keeps an unreferenced file because it may belong to
// a write still in progress. A writer uploads data, deletion and index
// files before the manifest that names them, and an index build or a
// compaction of a large table can run for hours, so a file that no
// manifest names yet may still be about to be named.
const DefaultGrace = 7 * 24 * time.Hour

// MinGrace is the shortest grace period a Policy may ask for: shorter, a
// long write (an index build, a compaction) could lose its files before it
// commits.
const MinGrace = time.Hour

// Policy says which versions of a table a cleanup keeps and which files it
// may delete. The zero value is not valid: KeepLast must be set.
type Policy struct {
	// OlderThan prunes the versions whose manifest was written more than
	// OlderThan before Now (a version exactly at the cutoff is kept, as
	// Lance keeps a version whose timestamp is not before its cutoff).
	// 0: age prunes nothing; KeepLast alone decides.
	OlderThan time.Duration
	// KeepLast keeps at least the last KeepLast versions of each chain
	// (main and every branch), whatever their age. It must be at least 1:
	// 0 would prune a chain's head.
	KeepLast int
	// Grace keeps every file, referenced or not, that was modified less
	// than Grace before Now. 0 means DefaultGrace; anything else below
	// MinGrace is refused.
	Grace time.Duration
	// Now is the time the policy is applied at; zero means time.Now().
	Now time.Time

	// exactGrace makes Grace apply as given, even 0 or below MinGrace:
	// for tests, which compare with Lance's delete_unverified=true.
	exactGrace bool
}

// Validate reports whether the policy can be applied, as an InvalidInput
// error naming the field at fault.
func (p Policy) Validate() error {
	_, err := p.normalized()
	return err
}

// normalized is the policy with its defaults filled in, or InvalidInput.
func (p Policy) normalized() (Policy, error) {
	switch {
	case p.OlderThan < 0:
		return p, nserror.New(nserror.InvalidInput, "cleanup: OlderThan is %v; it must not be negative", p.OlderThan)
	case p.Grace < 0:
		return p, nserror.New(nserror.InvalidInput, "cleanup: Grace is %v; it must not be negative", p.Grace)
	case p.KeepLast < 1:
		return p, nserror.New(nserror.InvalidInput, "cleanup: KeepLast is %d; it must be at least 1 (0 would prune the latest version)", p.KeepLast)
	}
	if !p.exactGrace {
		if p.Grace == 0 {
			p.Grace = DefaultGrace
		}
		if p.Grace < MinGrace {
			return p, nserror.New(nserror.InvalidInput, "cleanup: Grace is %v; it must be at least %v (a long write could lose its files)", p.Grace, MinGrace)
		}
	}
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	return p, nil
}

// cutoff is the time before which a version's manifest is old enough to
// prune (zero: age prunes nothing).
func (p Policy) cutoff() time.Time {
	if p.OlderThan == 0 {
		return time.Time{}
	}
	return p.Now.Add(-p.OlderThan)
}

package redisclaim

import (
	"regexp"

	"github.com/flightns/flightns/internal/commitlog"
	"github.com/flightns/flightns/nserror"
)

// keys names the Redis keys of one catalog (commitlog.Keys, the one
// definition of them).
type keys = commitlog.Keys

var catalogName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidateCatalog checks a catalog name: 1-64 letters, digits, '_', '.',
// '-', starting with a letter or digit (it becomes a Redis hash tag).
func ValidateCatalog(name string) error {
	if !catalogName.MatchString(name) {
		return nserror.New(nserror.InvalidInput, "catalog name %q must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
	}
	return nil
}

func newKeys(catalog string) keys { return commitlog.KeysOf(catalog) }

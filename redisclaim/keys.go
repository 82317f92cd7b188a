package redisclaim

import (
	"regexp"

	"github.com/flightns/flightns/nserror"
)

var catalogName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidateCatalog checks a catalog name: 1-64 letters, digits, '_', '.',
// '-', starting with a letter or digit (it becomes a Redis hash tag).
func ValidateCatalog(name string) error {
	if !catalogName.MatchString(name) {
		return nserror.New(nserror.InvalidInput, "catalog name %q must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
	}
	return nil
}

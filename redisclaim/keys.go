package redisclaim

import (
	"regexp"

	"github.com/flightns/flightns/nserror"
)

// keys names the Redis keys of one catalog. Every key starts with the hash
// tag {catalog}, so all of a catalog's keys live in one slot and every
// multi-key script runs unchanged on Redis Cluster.
type keys struct {
	tag string // "{catalog}"
}

var catalogName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidateCatalog checks a catalog name: 1-64 letters, digits, '_', '.',
// '-', starting with a letter or digit (it becomes a Redis hash tag).
func ValidateCatalog(name string) error {
	if !catalogName.MatchString(name) {
		return nserror.New(nserror.InvalidInput, "catalog name %q must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
	}
	return nil
}

func newKeys(catalog string) keys { return keys{tag: "{" + catalog + "}"} }

// Epoch is present while Redis holds the catalog's state.
func (k keys) Epoch() string { return k.tag + ":epoch" }

// Recovering is the lock of a running recovery.
func (k keys) Recovering() string { return k.tag + ":recovering" }

// Heads maps table -> head version.
func (k keys) Heads() string { return k.tag + ":heads" }

// Seq is the catalog sequence counter.
func (k keys) Seq() string { return k.tag + ":seq" }

// Log is the commit-log stream.
func (k keys) Log() string { return k.tag + ":log" }

// Versions maps version -> record of one table.
func (k keys) Versions(table string) string { return k.tag + ":v:" + table }

// Index is the sorted set of one table's recorded versions.
func (k keys) Index(table string) string { return k.tag + ":z:" + table }

// Txn holds a transaction's record bytes and epoch until it settles.
func (k keys) Txn(id string) string { return k.tag + ":txn:" + id }

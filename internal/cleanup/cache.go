package cleanup

import (
	"sync"
	"time"

	"github.com/flightns/flightns/internal/lancemanifest"
)

// What a manifest references never changes: a final manifest is written
// create-only and never rewritten, and a staging one has a unique name.
// So each process remembers what it read of the manifests it met last
// (a cleanup of a busy table reads only its new manifests again), keyed
// by the object's key, size, ETag and modification time: an object
// deleted and written again under the same key (a branch deleted and
// made again) is another entry.

// cacheEntries bounds the manifests remembered, and cacheNames the names
// one may hold to be remembered (a huge manifest is read again).
const (
	cacheEntries = 4096
	cacheNames   = 20000
)

type refsKey struct {
	key, etag string
	size      int64
	mod       time.Time
}

// refsCache is the process's memory of manifests' references.
var refsCache = struct {
	sync.Mutex
	m map[refsKey]*lancemanifest.References
}{m: map[refsKey]*lancemanifest.References{}}

// cachedRefs is what a manifest references, if remembered.
func cachedRefs(k refsKey) (*lancemanifest.References, bool) {
	if k.mod.IsZero() && k.etag == "" {
		return nil, false // nothing tells one object under the key from another
	}
	refsCache.Lock()
	defer refsCache.Unlock()
	r, ok := refsCache.m[k]
	return r, ok
}

// rememberRefs remembers what a manifest references; when the memory is
// full, it forgets everything first (the next cleanups read again).
func rememberRefs(k refsKey, r *lancemanifest.References) {
	if k.mod.IsZero() && k.etag == "" || len(r.DataFiles)+len(r.DeletionFiles)+len(r.ExternalFiles)+len(r.Indices) > cacheNames {
		return
	}
	refsCache.Lock()
	defer refsCache.Unlock()
	if len(refsCache.m) >= cacheEntries {
		clear(refsCache.m)
	}
	refsCache.m[k] = r
}

package namespace

import "sync"

// maxCachedLocs bounds the location cache; past it the cache starts over.
const maxCachedLocs = 1 << 16

// locCache remembers the locations of tables that committed versions
// lately. It is a hint, never the truth: every claim made with a location
// from it carries a guard that the catalog's index still gives that
// location, so a stale entry costs a retry, never a wrong commit.
type locCache struct {
	mu sync.RWMutex
	m  map[string]string // table id -> location; guarded by mu
}

func (c *locCache) get(id string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	loc, ok := c.m[id]
	return loc, ok
}

func (c *locCache) put(id, loc string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedLocs {
		c.m = make(map[string]string)
	}
	c.m[id] = loc
}

func (c *locCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

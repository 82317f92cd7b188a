package lancemanifest

import (
	"context"
	"fmt"

	"github.com/flightns/flightns/objstore"
)

// Fetch reads and parses the manifest at key. size is its size when the
// caller knows it (a version record has it), else 0: then one HEAD checks
// it before the read, so that no object over MaxSize is ever loaded.
func Fetch(ctx context.Context, objs *objstore.Store, key string, size int64) (*Manifest, error) {
	if size <= 0 {
		a, err := objs.Head(ctx, key)
		if err != nil {
			return nil, err
		}
		size = a.Size
	}
	if size > MaxSize {
		return nil, fmt.Errorf("%w: %s has %d bytes, more than the %d a manifest may have", ErrNotManifest, key, size, MaxSize)
	}
	b, err := objs.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return Read(b)
}

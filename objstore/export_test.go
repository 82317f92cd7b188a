package objstore

import "context"

// OpenThroughOSRoot opens uri as Open does, its file:// store resolving
// keys through os.Root, as on a kernel without openat2.
func OpenThroughOSRoot(ctx context.Context, uri string) (*Store, error) {
	noOpenat2.Store(true)
	defer noOpenat2.Store(false)
	return Open(ctx, uri)
}

// ResolvesBeneath reports whether s is a file:// store that resolves
// keys with openat2.
func ResolvesBeneath(s *Store) bool {
	return s.disk != nil && s.disk.beneath
}

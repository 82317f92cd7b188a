package objstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// A key a storage policy would read as a pattern gets no credentials (it
// would widen them past its own directory), and only an s3:// store
// vends.
func TestVendingRefusesPatternsAndNonS3Stores(t *testing.T) {
	ctx := context.Background()
	m := s3test.Start(t, "cat")
	s, err := objstore.Open(ctx, m.URI("cat", "root"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for _, key := range []string{"t*", "t?x", "t/${aws:username}", "a*/b"} {
		_, err := s.VendCredentials(ctx, key, false, objstore.VendOptions{Duration: 15 * time.Minute})
		if nserror.CodeOf(err) != nserror.InvalidInput || (objstore.ValidateKey(key) == nil && !strings.Contains(err.Error(), "pattern")) {
			t.Errorf("credentials for %q: %v, want InvalidInput", key, err)
		}
	}
	if _, err := s.VendCredentials(ctx, "ok$table", true, objstore.VendOptions{Duration: 15 * time.Minute}); err != nil {
		t.Errorf("credentials for a table id with $: %v", err)
	}
	f, err := objstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.VendCredentials(ctx, "t", false, objstore.VendOptions{}); nserror.CodeOf(err) != nserror.Unsupported {
		t.Errorf("a file store vending: %v, want Unsupported", err)
	}
}

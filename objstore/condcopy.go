package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/uuid"
)

// Conditional copy. AWS S3 has honoured If-None-Match: * on CopyObject's
// destination since October 2025: the copy is refused (412) when the
// destination exists. Where a store proves it does, a promotion whose
// source the caller has not read (o.Known nil: a reader finishing another
// writer's commit, a multi-table transaction's members) is one
// server-side copy instead of a GET and a conditional PUT. Stores that
// overwrite on such a copy — MinIO, the pinned release and its last —
// keep the GET and the PUT: ProbeConditionalCopy tells them apart, and
// nothing assumes the condition before it has seen a store refuse.

// probePrefix is where ProbeConditionalCopy writes its two scratch
// objects, under the store's root.
const probePrefix = "_flightns/probe/"

// errCopyRefused is a conditional copy refused because its destination
// exists.
var errCopyRefused = errors.New("objstore: the copy's destination exists")

// ProbeConditionalCopy finds out whether an s3:// store refuses a
// CopyObject onto an existing object when the copy asks to create only:
// it writes two scratch objects, copies one onto the other with
// If-None-Match: *, and deletes both. It returns true only when the store
// refused with 412 and the destination kept its bytes; how the store
// answered; and an error when the probe could not run (the scratch
// objects could not be written). Other stores: false (a directory
// promotes with a link; mem:// is one process's).
func (s *Store) ProbeConditionalCopy(ctx context.Context) (bool, string, error) {
	if s.s3 == nil {
		return false, "is not an s3:// store", nil
	}
	id := uuid.NewString()
	src, dst := probePrefix+id+".src", probePrefix+id+".dst"
	defer func() { _ = s.DeleteMany(context.WithoutCancel(ctx), []string{src, dst}) }()
	if err := s.Put(ctx, src, []byte("source of flightns's conditional-copy probe")); err != nil {
		return false, "", fmt.Errorf("objstore: the conditional-copy probe: %w", err)
	}
	kept := []byte("destination of flightns's conditional-copy probe")
	if err := s.Put(ctx, dst, kept); err != nil {
		return false, "", fmt.Errorf("objstore: the conditional-copy probe: %w", err)
	}
	err := s.s3.copyIfAbsent(ctx, src, dst)
	after, rerr := s.Get(ctx, dst)
	switch {
	case rerr != nil:
		return false, "", fmt.Errorf("objstore: the conditional-copy probe: reading the destination back: %w", rerr)
	case errors.Is(err, errCopyRefused) && string(after) == string(kept):
		return true, "refused a conditional copy onto an existing object (412)", nil
	case err == nil:
		return false, "overwrote an existing object on a conditional copy", nil
	default:
		return false, fmt.Sprintf("answered a conditional copy onto an existing object with %v", err), nil
	}
}

// SetConditionalCopy makes promotions of a source the caller has not read
// one server-side CopyObject with If-None-Match: * (on only when
// ProbeConditionalCopy said the store refuses such a copy).
func (s *Store) SetConditionalCopy(on bool) { s.condCopy.Store(on && s.s3 != nil) }

// ConditionalCopy reports whether promotions copy on the server.
func (s *Store) ConditionalCopy() bool { return s.condCopy.Load() }

// Promotions says how the store promotes a staging object whose bytes
// the caller has not read (for the logs and /readyz).
func (s *Store) Promotions() string {
	switch {
	case s.condCopy.Load():
		return "one server-side conditional CopyObject"
	case s.s3 != nil:
		return "a GET and a conditional PUT"
	}
	return "the store's own create-only write"
}

// copyIfAbsent copies src to dst on the server unless dst exists
// (errCopyRefused); a missing source is fs.ErrNotExist. S3 answers 409
// ConditionalRequestConflict while another conditional write to the key
// is in flight: retried, and the condition then decides.
func (b *s3Bucket) copyIfAbsent(ctx context.Context, src, dst string) error {
	in := &s3.CopyObjectInput{Bucket: aws.String(b.name), Key: aws.String(b.prefix + dst),
		CopySource: aws.String(url.PathEscape(b.name) + "/" + escapeKey(b.prefix+src)), IfNoneMatch: aws.String("*")}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if _, err = b.client.CopyObject(ctx, in); err == nil {
			return nil
		}
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "ConditionalRequestConflict" {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	var re *smithyhttp.ResponseError
	var ae smithy.APIError
	switch {
	case errors.As(err, &re) && re.HTTPStatusCode() == http.StatusPreconditionFailed,
		errors.As(err, &ae) && ae.ErrorCode() == "PreconditionFailed":
		return fmt.Errorf("%w: %w", errCopyRefused, err)
	case errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound"),
		errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound:
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

// escapeKey escapes a key for CopySource: each segment path-escaped, the
// slashes kept.
func escapeKey(k string) string {
	return (&url.URL{Path: k}).EscapedPath()
}

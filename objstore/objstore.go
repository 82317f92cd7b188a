package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	"github.com/flightns/flightns/nserror"
)

// Errors to match with errors.Is. Invalid keys and URIs are
// nserror.ErrInvalidInput errors.
var (
	ErrNotFound      = errors.New("object not found")
	ErrAlreadyExists = errors.New("object already exists")
)

// Op names a Store operation, for fault injection and errors.
type Op string

// The operations.
const (
	OpPut          Op = "put"
	OpPutIfAbsent  Op = "put-if-absent"
	OpGet          Op = "get"
	OpHead         Op = "head"
	OpList         Op = "list"
	OpCopyIfAbsent Op = "copy-if-absent"
	OpDelete       Op = "delete"
)

// Phase says whether a fault hook runs before an operation touches storage
// or after it succeeded (an error then models a reply lost in transit: the
// effect happened, the caller does not know).
type Phase int

// The phases.
const (
	Before Phase = iota
	After
)

func (p Phase) String() string {
	if p == Before {
		return "before"
	}
	return "after"
}

// FaultFunc is called at every operation, before and after it runs; a
// non-nil error fails the operation with that error. Tests use it to cut
// protocols at named seams.
type FaultFunc func(ctx context.Context, op Op, key string, phase Phase) error

// Options configure a Store (OpenWith).
type Options struct {
	// Faults, when set, is called at every operation (tests).
	Faults FaultFunc
	// Logger receives what the storage client has to say (the AWS SDK's
	// warnings; its debug lines only at debug level); default
	// slog.Default().
	Logger *slog.Logger
	// Observer, when set, is called after every operation (metrics).
	Observer ObserveFunc
}

// EnsureDefaults fills what is unset.
func (o *Options) EnsureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate refuses options OpenWith cannot use. Every field is optional
// and every value of one is valid, so it refuses nothing; OpenWith calls
// it, as every constructor calls its configuration's.
func (o *Options) Validate() error { return nil }

// Attrs describes an object.
type Attrs struct {
	Key     string
	Size    int64
	ETag    string // empty when the store has none
	ModTime time.Time
}

// CopyResult says what CopyIfAbsent found.
type CopyResult int

// The results of CopyIfAbsent.
const (
	// Copied: the destination did not exist and now holds the source.
	Copied CopyResult = iota + 1
	// AlreadyIdentical: the destination already held the same bytes.
	AlreadyIdentical
)

// Store is an object store rooted at a URI. It is safe for concurrent use.
type Store struct {
	uri    string
	bucket *blob.Bucket
	disk   *diskBucket // set for file://
	s3     *s3Bucket   // set for s3://
	fault  FaultFunc
	obs    ObserveFunc
	log    *slog.Logger
	// condCopy: promotions of unread sources are one conditional
	// CopyObject (condcopy.go).
	condCopy atomic.Bool
}

// s3Bucket is the S3 client of an s3:// store, for what gocloud.dev/blob
// does in more requests than S3 needs (a delete is a HEAD and a DELETE
// there) or not at all (batched deletes).
type s3Bucket struct {
	client   *s3.Client
	name     string
	prefix   string // "" or "prefix/"
	endpoint string // the URI's endpoint (an S3 server other than AWS), or ""
}

// Open opens the store at uri: file:///absolute/dir (created when missing),
// s3://bucket[/prefix][?endpoint=…&region=…&use_path_style=true&disable_https=true]
// (credentials from the standard AWS environment), or mem:// (a new, empty,
// process-local store). A bad URI, an unknown scheme or a missing bucket is
// an error that names the problem; nothing is written.
func Open(ctx context.Context, uri string) (*Store, error) { return OpenWith(ctx, uri, Options{}) }

// OpenWith is Open with options.
func OpenWith(ctx context.Context, uri string, o Options) (*Store, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	u, err := url.Parse(uri)
	if err != nil {
		return nil, nserror.New(nserror.InvalidInput, "storage URI %q: %v", uri, err)
	}
	s := &Store{uri: uri, log: o.Logger, fault: o.Faults, obs: o.Observer}
	switch u.Scheme {
	case "file":
		s.bucket, s.disk, err = openFileURI(u)
	case "s3":
		s.bucket, s.s3, err = openS3URI(ctx, u, s.log)
	case "mem":
		if u.Host != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, nserror.New(nserror.InvalidInput, "storage URI %q: mem:// takes no name, path or parameters", uri)
		}
		s.bucket = memblob.OpenBucket(nil)
	case "":
		return nil, nserror.New(nserror.InvalidInput, "storage URI %q has no scheme (want file://, s3:// or mem://)", uri)
	default:
		return nil, nserror.New(nserror.InvalidInput, "storage URI %q: unsupported scheme %q (want file, s3 or mem)", uri, u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func openFileURI(u *url.URL) (*blob.Bucket, *diskBucket, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, nil, nserror.New(nserror.InvalidInput, "file URI %q names host %q; want file:///absolute/path", u.String(), u.Host)
	}
	if u.RawQuery != "" {
		return nil, nil, nserror.New(nserror.InvalidInput, "file URI %q takes no parameters", u.String())
	}
	if !filepath.IsAbs(u.Path) {
		return nil, nil, nserror.New(nserror.InvalidInput, "file URI %q: path %q is not absolute", u.String(), u.Path)
	}
	if filepath.Clean(u.Path) != strings.TrimSuffix(u.Path, "/") && u.Path != "/" {
		return nil, nil, nserror.New(nserror.InvalidInput, "file URI %q: path is not clean (no \"..\", \".\" or \"//\")", u.String())
	}
	return openDisk(u.Path)
}

// paramChecksums is the s3:// URI parameter of response checksum
// validation (gocloud.dev/aws reads it).
const paramChecksums = "response_checksum_validation"

// ParamClientEndpoint is the s3:// URI parameter naming the endpoint
// engines reach the store at when it is not the one flightns reaches it
// at (endpoint): MinIO in a compose network is http://minio:9000 to
// flightns and http://127.0.0.1:9000 to LanceDB on the host. flightns
// never sends a request there; it answers it to engines as their
// endpoint (Lance's aws_endpoint). gocloud.dev refuses parameters it does
// not know, so it is taken out of the URI before gocloud reads it.
const ParamClientEndpoint = "client_endpoint"

// openS3URI opens the bucket of an s3:// URI. gocloud.dev's URL opener
// reads every parameter (region, endpoint, profile, use_path_style,
// disable_https, ssetype, kmskeyid, accelerate, …); the bucket is then
// opened again on a copy of its client whose log lines go to log, and
// that client serves the requests gocloud does not make as S3 would
// (one DELETE, batched DeleteObjects).
func openS3URI(ctx context.Context, u *url.URL, log *slog.Logger) (*blob.Bucket, *s3Bucket, error) {
	if u.Host == "" {
		return nil, nil, nserror.New(nserror.InvalidInput, "s3 URI %q names no bucket", u.String())
	}
	prefix := strings.Trim(u.Path, "/")
	if err := ValidatePrefix(prefix); err != nil {
		return nil, nil, nserror.New(nserror.InvalidInput, "s3 URI %q: bad prefix: %w", u.String(), err)
	}
	bu := *u
	bu.Path = ""
	q := bu.Query()
	if q.Has(ParamClientEndpoint) {
		if err := checkEndpoint(q.Get(ParamClientEndpoint)); err != nil {
			return nil, nil, nserror.New(nserror.InvalidInput, "s3 URI %q: %s: %w", u.String(), ParamClientEndpoint, err)
		}
		q.Del(ParamClientEndpoint)
	}
	// Objects are validated by what flightns reads of them, not by a
	// checksum the store may not send (MinIO, most S3 servers other than
	// AWS's): without this the SDK says so once per GET.
	if !q.Has(paramChecksums) {
		q.Set(paramChecksums, "when_required")
	}
	bu.RawQuery = q.Encode()
	opener := &s3blob.URLOpener{}
	parsed, err := opener.OpenBucketURL(ctx, &bu)
	if err != nil {
		return nil, nil, nserror.New(nserror.InvalidInput, "s3 URI %q: %v", u.String(), err)
	}
	var parsedClient *s3.Client
	if !parsed.As(&parsedClient) {
		_ = parsed.Close()
		return nil, nil, fmt.Errorf("s3 URI %q: the bucket has no S3 client", u.String())
	}
	_ = parsed.Close()
	client := s3.New(parsedClient.Options(), func(o *s3.Options) { o.Logger = sdkLogger{log} })
	b, err := s3blob.OpenBucket(ctx, client, u.Host, &opener.Options)
	if err != nil {
		return nil, nil, nserror.New(nserror.InvalidInput, "s3 URI %q: %v", u.String(), err)
	}
	ok, err := b.IsAccessible(ctx)
	if err != nil || !ok {
		_ = b.Close()
		if err == nil {
			err = errors.New("it does not exist or is not accessible")
		}
		return nil, nil, fmt.Errorf("s3 bucket %q: %w", u.Host, err)
	}
	sb := &s3Bucket{client: client, name: u.Host, endpoint: u.Query().Get("endpoint")}
	if prefix != "" {
		b = blob.PrefixedBucket(b, prefix+"/")
		sb.prefix = prefix + "/"
	}
	return b, sb, nil
}

// checkEndpoint refuses what is not an S3 endpoint URL: http or https,
// a host, nothing after it but a path.
func checkEndpoint(v string) error {
	e, err := url.Parse(v)
	if err != nil {
		return err
	}
	if (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil || e.RawQuery != "" || e.Fragment != "" {
		return fmt.Errorf("%q is not an endpoint URL (want http[s]://host[:port])", v)
	}
	return nil
}

// sdkLogger passes the AWS SDK's log lines to slog: warnings as
// warnings, the rest (debug) at debug level.
type sdkLogger struct{ log *slog.Logger }

func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	if l.log.Enabled(context.Background(), level) {
		l.log.Log(context.Background(), level, "objstore: S3 client: "+fmt.Sprintf(format, v...))
	}
}

// S3URI is the root URI of bucket (and an optional prefix) on the S3
// server at endpoint (http://host:port), path-style, region us-east-1:
// what a self-hosted S3 server such as MinIO is opened with.
func S3URI(endpoint, bucket, prefix string) string {
	p := ""
	if prefix != "" {
		p = "/" + prefix
	}
	q := url.Values{"endpoint": {endpoint}, "region": {"us-east-1"}, "use_path_style": {"true"}}
	if strings.HasPrefix(endpoint, "http://") {
		q.Set("disable_https", "true")
	}
	return "s3://" + bucket + p + "?" + q.Encode()
}

// URI returns the URI the store was opened with.
func (s *Store) URI() string { return s.uri }

// Close releases the store.
func (s *Store) Close() error { return s.bucket.Close() }

func (s *Store) hook(ctx context.Context, op Op, key string, phase Phase) error {
	if s.fault == nil {
		return nil
	}
	if err := s.fault(ctx, op, key, phase); err != nil {
		return s.wrap(op, key, err) // classified as the same error from storage would be
	}
	return nil
}

var writeOpts = blob.WriterOptions{ContentType: "application/octet-stream", DisableContentTypeDetection: true}

// Put writes data at key, replacing any object there.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	return s.PutWith(ctx, key, data, WriteOptions{})
}

// PutWith is Put with options (NoSync; Gate, Known and Synced do not
// apply).
func (s *Store) PutWith(ctx context.Context, key string, data []byte, o WriteOptions) error {
	return s.do(ctx, OpPut, key, func() error {
		if s.disk != nil {
			return s.disk.writeFile(key, data, false, o.NoSync, nil)
		}
		return s.bucket.WriteAll(ctx, key, data, &writeOpts)
	})
}

// PutIfAbsent writes data at key only if no object exists there; otherwise
// it fails with ErrAlreadyExists and the existing bytes stay. Exactly one of
// several concurrent callers (in any process) succeeds.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.PutIfAbsentWith(ctx, key, data, WriteOptions{})
}

// PutIfAbsentWith is PutIfAbsent with options (a Gate; Known, Synced
// and NoSync do not apply).
func (s *Store) PutIfAbsentWith(ctx context.Context, key string, data []byte, o WriteOptions) error {
	return s.do(ctx, OpPutIfAbsent, key, func() error { return s.putIfAbsent(ctx, key, data, o.gate) })
}

func (s *Store) putIfAbsent(ctx context.Context, key string, data []byte, gate func() error) error {
	if s.disk != nil {
		return s.disk.writeFile(key, data, true, false, gate)
	}
	if err := gate(); err != nil {
		return err
	}
	opts := writeOpts
	opts.IfNotExist = true
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.bucket.WriteAll(ctx, key, data, &opts)
		// S3 answers 409 ConditionalRequestConflict while another
		// conditional write to the key is in flight: retry, and the
		// condition then decides.
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "ConditionalRequestConflict" {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	return err
}

// Get reads the whole object at key.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	var data []byte
	err := s.do(ctx, OpGet, key, func() (err error) {
		data, err = s.read(ctx, key)
		return err
	})
	return data, err
}

// GetWithAttrs reads the whole object at key and its attributes, in one
// request where the store's answer to a read carries them (S3: a GET
// answers with the object's size and ETag); elsewhere the attributes are
// asked for too.
func (s *Store) GetWithAttrs(ctx context.Context, key string) ([]byte, Attrs, error) {
	if s.disk != nil {
		data, err := s.Get(ctx, key)
		if err != nil {
			return nil, Attrs{}, err
		}
		a, err := s.Head(ctx, key)
		return data, a, err
	}
	var data []byte
	a := Attrs{Key: key}
	err := s.do(ctx, OpGet, key, func() error {
		r, err := s.bucket.NewReader(ctx, key, nil)
		if err != nil {
			return err
		}
		defer func() { _ = r.Close() }()
		if data, err = io.ReadAll(r); err != nil {
			return err
		}
		a.Size, a.ModTime = r.Size(), r.ModTime()
		var out s3.GetObjectOutput
		if r.As(&out) && out.ETag != nil {
			a.ETag = *out.ETag
			return nil
		}
		ba, err := s.bucket.Attributes(ctx, key)
		if err != nil {
			return err
		}
		a.ETag = ba.ETag
		return nil
	})
	if err != nil {
		return nil, Attrs{}, err
	}
	return data, a, nil
}

// Head returns the object's attributes.
func (s *Store) Head(ctx context.Context, key string) (Attrs, error) {
	var a Attrs
	err := s.do(ctx, OpHead, key, func() error {
		var ba *blob.Attributes
		var err error
		if s.disk != nil {
			var da *driver.Attributes
			if da, err = s.disk.Attributes(ctx, key); err == nil {
				ba = &blob.Attributes{Size: da.Size, ETag: da.ETag, ModTime: da.ModTime}
			}
		} else {
			ba, err = s.bucket.Attributes(ctx, key)
		}
		if err != nil {
			return err
		}
		a = Attrs{Key: key, Size: ba.Size, ETag: ba.ETag, ModTime: ba.ModTime}
		return nil
	})
	return a, err
}

// Delete removes the object at key. Deleting an object that is not there
// succeeds too (S3 answers a DELETE the same either way), so on S3 it is
// one request.
func (s *Store) Delete(ctx context.Context, key string) error {
	err := s.do(ctx, OpDelete, key, func() error {
		switch {
		case s.disk != nil:
			return s.disk.Delete(ctx, key, nil)
		case s.s3 != nil:
			_, err := s.s3.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.s3.name), Key: aws.String(s.s3.prefix + key)})
			return err
		}
		return s.bucket.Delete(ctx, key)
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// deleteBatch is the most keys one S3 DeleteObjects request takes.
const deleteBatch = 1000

// DeleteMany removes the objects at keys, as Delete does each: on S3 in
// one request per thousand keys (DeleteObjects). An error names a key
// that could not be deleted; the others may be gone.
func (s *Store) DeleteMany(ctx context.Context, keys []string) error {
	if s.s3 == nil {
		for _, k := range keys {
			if err := s.Delete(ctx, k); err != nil {
				return err
			}
		}
		return nil
	}
	for len(keys) > 0 {
		n := min(len(keys), deleteBatch)
		if err := s.deleteObjects(ctx, keys[:n]); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// deleteObjects deletes up to deleteBatch keys in one request.
func (s *Store) deleteObjects(ctx context.Context, keys []string) error {
	ids := make([]types.ObjectIdentifier, len(keys))
	for i, k := range keys {
		if err := ValidateKey(k); err != nil {
			return err
		}
		if err := s.hook(ctx, OpDelete, k, Before); err != nil {
			return err
		}
		ids[i] = types.ObjectIdentifier{Key: aws.String(s.s3.prefix + k)}
	}
	start := time.Now()
	out, err := s.s3.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(s.s3.name),
		Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
	if err == nil && len(out.Errors) > 0 {
		e := out.Errors[0]
		err = fmt.Errorf("%d of %d keys not deleted, the first %s: %s", len(out.Errors), len(keys), aws.ToString(e.Key), aws.ToString(e.Message))
	}
	s.observe(OpDelete, keys[0], start, err)
	if err != nil {
		return s.wrap(OpDelete, keys[0], err)
	}
	for _, k := range keys {
		if err := s.hook(ctx, OpDelete, k, After); err != nil {
			return err
		}
	}
	return nil
}

// List yields every object whose key starts with prefix, in ascending key
// order. An empty prefix lists the whole store; "a/b/" lists below a/b.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[Attrs, error] {
	return func(yield func(Attrs, error) bool) {
		if err := ValidatePrefix(prefix); err != nil {
			yield(Attrs{}, err)
			return
		}
		if err := s.hook(ctx, OpList, prefix, Before); err != nil {
			yield(Attrs{}, err)
			return
		}
		token := blob.FirstPageToken
		last := ""
		first := true
		for {
			objs, next, err := s.bucket.ListPage(ctx, token, 1000, &blob.ListOptions{Prefix: prefix})
			if err != nil {
				yield(Attrs{}, s.wrap(OpList, prefix, err))
				return
			}
			for _, o := range objs {
				if strings.HasPrefix(o.Key[strings.LastIndex(o.Key, "/")+1:], tempPrefix) {
					continue
				}
				if !first && o.Key <= last {
					yield(Attrs{}, fmt.Errorf("objstore: list %q: store returned %q after %q: listing is not sorted", prefix, o.Key, last))
					return
				}
				first, last = false, o.Key
				etag := ""
				if len(o.MD5) > 0 {
					etag = fmt.Sprintf("%q", fmt.Sprintf("%x", o.MD5))
				}
				if !yield(Attrs{Key: o.Key, Size: o.Size, ETag: etag, ModTime: o.ModTime}, nil) {
					return
				}
			}
			if len(next) == 0 {
				break
			}
			token = next
		}
		if err := s.hook(ctx, OpList, prefix, After); err != nil {
			yield(Attrs{}, err)
		}
	}
}

// ListAll collects List into a slice.
func (s *Store) ListAll(ctx context.Context, prefix string) ([]Attrs, error) {
	var out []Attrs
	for a, err := range s.List(ctx, prefix) {
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// CopyIfAbsent materializes the object at src under dst, create-only. If dst
// does not exist it gets src's bytes (Copied); if it already holds the same
// bytes the call succeeds (AlreadyIdentical), so a retried or helping copy is
// idempotent; if it holds other bytes the result is ErrAlreadyExists and dst
// is left alone. A missing src is ErrNotFound.
//
// On file:// the copy is a hard link of the fsynced source. Elsewhere the
// bytes are read and written with a conditional PUT (If-None-Match: *) rather
// than a server-side copy: S3 protocol servers such as gofakes3 ignore
// conditions on CopyObject, and a copy that is not create-only could
// overwrite a committed manifest.
func (s *Store) CopyIfAbsent(ctx context.Context, src, dst string) (CopyResult, error) {
	return s.materialize(ctx, src, dst, false, WriteOptions{})
}

// PromoteIfAbsent is CopyIfAbsent for a source that is no longer needed
// afterwards (a staging manifest): where PromotesByRename (file://) the
// source is renamed to dst with renameat2(RENAME_NOREPLACE) — one
// directory operation, create-only — so it is gone when Copied is
// returned; elsewhere it is copied as by CopyIfAbsent and the caller
// deletes it. o.Known, when not nil, is src's bytes, read by the caller
// (src is immutable): elsewhere than file:// the promotion is then one
// conditional PUT, without reading src again; o.Synced, when not nil, is
// what Durable returned for src: on file:// the promotion skips src's
// fsync if src is still the file Durable synced.
func (s *Store) PromoteIfAbsent(ctx context.Context, src, dst string, o WriteOptions) (CopyResult, error) {
	return s.materialize(ctx, src, dst, true, o)
}

// WriteOptions adjust a write: a create-only one (PutIfAbsentWith,
// PromoteIfAbsent) or a Put (PutWith); each says which apply.
type WriteOptions struct {
	// Gate, when set, runs right before the destination can become
	// visible — after the slow preparation (fsyncing the source, reading
	// it) — and the write gives up, with its error, when it fails. A
	// caller whose right to write the destination expires with time (a
	// claim) checks it there.
	Gate func() error
	// Known is the source's bytes, read by the caller (promotions).
	Known []byte
	// Synced is what Durable returned for the source (promotions).
	Synced *Synced
	// NoSync skips the fsyncs of a file:// Put: the object is complete
	// and visible when PutWith returns, but may not survive a crash. For
	// staging objects, which CopyIfAbsent and PromoteIfAbsent fsync
	// before they publish them (Lance's own writers do not fsync theirs
	// either). Other backends ignore it.
	NoSync bool
}

func (o WriteOptions) gate() error {
	if o.Gate == nil {
		return nil
	}
	return o.Gate()
}

// PromotesByRename reports whether a promotion renames its source into
// place (file://): the source is then gone afterwards, reading it first
// saves nothing, and making it durable ahead (Durable) shortens the
// promotion. Elsewhere a promotion copies the bytes: reading them with the
// source's attributes saves a request, and the caller deletes the source.
func (s *Store) PromotesByRename() bool { return s.disk != nil }

// Remote reports whether every operation is a request over the network
// (s3://), so that a caller which batches writes (fewer, larger objects)
// saves more by waiting longer; file:// and mem:// answer in process.
func (s *Store) Remote() bool { return s.s3 != nil }

// Synced is what Durable made durable: on file://, the file's identity,
// size and modification time when its fsync began.
type Synced struct{ fi fs.FileInfo }

// Durable makes the object at key durable and says what it synced. On
// file:// it fsyncs the object's file (sharing the fsync with concurrent
// callers), so that a later promotion of the object need not: a writer
// runs it while it waits for something else (its claim). Other stores'
// objects are durable once written: Durable does nothing there and
// returns nil, which a promotion takes as "nothing synced ahead".
func (s *Store) Durable(key string) (*Synced, error) {
	if s.disk == nil {
		return nil, nil
	}
	fi, err := s.disk.syncObject(key)
	if err != nil {
		return nil, err
	}
	return &Synced{fi: fi}, nil
}

// materialize is CopyIfAbsent (consume false) and PromoteIfAbsent.
func (s *Store) materialize(ctx context.Context, src, dst string, consume bool, o WriteOptions) (CopyResult, error) {
	if err := ValidateKey(src); err != nil {
		return 0, err
	}
	var res CopyResult
	err := s.do(ctx, OpCopyIfAbsent, dst, func() error {
		srcData := o.Known
		var err error
		before := o.gate
		switch {
		case s.disk != nil && consume:
			var fi fs.FileInfo
			if o.Synced != nil {
				fi = o.Synced.fi
			}
			err = s.disk.promoteIfAbsent(src, dst, fi, before)
		case s.disk != nil:
			err = s.disk.linkIfAbsent(src, dst, before)
		case srcData == nil && s.condCopy.Load():
			if err = before(); err == nil {
				err = s.s3.copyIfAbsent(ctx, src, dst)
			}
		default:
			if srcData == nil {
				if srcData, err = s.bucket.ReadAll(ctx, src); err != nil {
					return s.wrap(OpGet, src, err)
				}
			}
			err = s.putIfAbsent(ctx, dst, srcData, before) // (its gate runs before the PUT)
		}
		if err == nil {
			res = Copied
			return nil
		}
		if gcerrors.Code(err) == gcerrors.NotFound || errors.Is(err, fs.ErrNotExist) {
			return s.wrap(OpGet, src, err)
		}
		if gcerrors.Code(err) != gcerrors.FailedPrecondition && !errors.Is(err, errDiskExists) && !errors.Is(err, errCopyRefused) {
			return err
		}
		same, err := s.sameContent(ctx, src, dst, srcData)
		if err != nil {
			return err
		}
		if !same {
			return &opError{op: OpCopyIfAbsent, key: dst, kind: ErrAlreadyExists,
				err: fmt.Errorf("%s already exists with content different from %s", dst, src)}
		}
		res = AlreadyIdentical
		return nil
	})
	return res, err
}

// read reads a whole object.
func (s *Store) read(ctx context.Context, key string) ([]byte, error) {
	if s.disk != nil {
		return s.disk.readFile(key)
	}
	return s.bucket.ReadAll(ctx, key)
}

// sameContent compares dst with src (whose bytes are srcData when already
// read).
func (s *Store) sameContent(ctx context.Context, src, dst string, srcData []byte) (bool, error) {
	if s.disk != nil {
		si, err1 := s.disk.stat(src)
		di, err2 := s.disk.stat(dst)
		if err1 == nil && err2 == nil && os.SameFile(si, di) {
			return true, nil
		}
	}
	var err error
	if srcData == nil {
		if srcData, err = s.read(ctx, src); err != nil {
			return false, s.wrap(OpGet, src, err)
		}
	}
	dstData, err := s.read(ctx, dst)
	if err != nil {
		return false, s.wrap(OpGet, dst, err)
	}
	return bytes.Equal(srcData, dstData), nil
}

// do validates key, runs the fault hooks around fn and maps its error.
func (s *Store) do(ctx context.Context, op Op, key string, fn func() error) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := s.hook(ctx, op, key, Before); err != nil {
		return err
	}
	start := time.Now()
	err := fn()
	s.observe(op, key, start, err)
	if err != nil {
		return s.wrap(op, key, err)
	}
	return s.hook(ctx, op, key, After)
}

// opError is an error of one operation on one key. kind is ErrNotFound,
// ErrAlreadyExists, an nserror sentinel, or nil.
type opError struct {
	op   Op
	key  string
	kind error
	err  error
}

func (e *opError) Error() string {
	msg := ""
	switch {
	case e.kind != nil && e.err != nil:
		msg = e.kind.Error() + ": " + e.err.Error()
	case e.kind != nil:
		msg = e.kind.Error()
	case e.err != nil:
		msg = e.err.Error()
	}
	return fmt.Sprintf("objstore: %s %s: %s", e.op, e.key, msg)
}

func (e *opError) Unwrap() []error {
	var out []error
	if e.kind != nil {
		out = append(out, e.kind)
	}
	if e.err != nil {
		out = append(out, e.err)
	}
	return out
}

// wrap classifies an error of the blob layer.
func (s *Store) wrap(op Op, key string, err error) error {
	var oe *opError
	if errors.As(err, &oe) {
		return err
	}
	var ne *nserror.Error
	if errors.As(err, &ne) {
		return err
	}
	e := &opError{op: op, key: key, err: err}
	code := gcerrors.Code(err)
	if code == gcerrors.Unknown && s.disk != nil {
		// The disk's own calls (reads, promotions) do not go through the
		// blob layer: the driver classifies them as it does its own.
		code = s.disk.ErrorCode(err)
	}
	switch {
	case code == gcerrors.NotFound, errors.Is(err, fs.ErrNotExist):
		e.kind = ErrNotFound
	case code == gcerrors.FailedPrecondition:
		e.kind = ErrAlreadyExists
	case code == gcerrors.InvalidArgument:
		return nserror.New(nserror.InvalidInput, "objstore: %s %s: %w", op, key, err)
	case code == gcerrors.PermissionDenied:
		return nserror.New(nserror.PermissionDenied, "objstore: %s %s: %w", op, key, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		// A full disk or quota: nothing was written; retry once space is back.
		return nserror.New(nserror.ServiceUnavailable, "objstore: %s %s: %w", op, key, err)
	}
	return e
}

// CheckNoSymlinks refuses a key (a table location) whose existing path
// components include a symbolic link: on file:// a table must be a plain
// directory inside the root. Other backends have no links; it returns nil.
func (s *Store) CheckNoSymlinks(key string) error {
	if err := ValidatePrefix(key); err != nil {
		return err
	}
	if s.disk == nil {
		return nil
	}
	cur := ""
	for seg := range strings.SplitSeq(strings.TrimSuffix(key, "/"), "/") {
		if cur != "" {
			cur += "/"
		}
		cur += seg
		fi, err := s.disk.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return nserror.New(nserror.InvalidInput, "location %q: %v", key, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nserror.New(nserror.InvalidInput, "location %q: %q is a symbolic link", key, cur)
		}
	}
	return nil
}

// LocalDir is the root directory of a file:// store ("" for others).
func (s *Store) LocalDir() string {
	if s.disk == nil {
		return ""
	}
	return s.disk.dir
}

// DeletePrefix deletes every object whose key starts with prefix and
// returns how many it deleted.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	return s.DeletePrefixExcept(ctx, prefix, nil)
}

// DeletePrefixExcept deletes every object whose key starts with prefix
// (a directory: it ends in '/') but those inside one of the directories
// keep (each below prefix, ending in '/'), and returns how many it
// deleted. A directory left on a disk root is removed only when nothing
// was kept.
func (s *Store) DeletePrefixExcept(ctx context.Context, prefix string, keep []string) (int, error) {
	if prefix == "" || !strings.HasSuffix(prefix, "/") {
		return 0, nserror.New(nserror.InvalidInput, "DeletePrefix needs a directory prefix ending in /, not %q", prefix)
	}
	for _, k := range keep {
		if !strings.HasPrefix(k, prefix) || !strings.HasSuffix(k, "/") {
			return 0, nserror.New(nserror.InvalidInput, "DeletePrefixExcept keeps directories inside %q, not %q", prefix, k)
		}
	}
	kept := func(key string) bool {
		for _, k := range keep {
			if strings.HasPrefix(key, k) {
				return true
			}
		}
		return false
	}
	// On S3 a thousand keys go in one DeleteObjects request (DeleteMany),
	// not a request each.
	n := 0
	batch := make([]string, 0, deleteBatch)
	flush := func() error {
		if err := s.DeleteMany(ctx, batch); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	for a, err := range s.List(ctx, prefix) {
		if err != nil {
			return n, err
		}
		if kept(a.Key) {
			continue
		}
		if batch = append(batch, a.Key); len(batch) == deleteBatch {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := flush(); err != nil {
		return n, err
	}
	if s.disk != nil && len(keep) == 0 {
		// Directories are not objects; leave none behind.
		_ = s.disk.root.RemoveAll(strings.TrimSuffix(prefix, "/"))
	}
	return n, nil
}

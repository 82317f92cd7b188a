package namespace

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// root is what the service knows of the catalog root to turn locations and
// manifest paths between the three forms they travel in: keys relative to
// the root (what flightns stores), URIs (what DescribeTable returns for
// Lance to open), and object-store paths (what Lance sends and expects for
// manifests: no scheme, no leading slash, relative to the bucket or to the
// filesystem root).
type root struct {
	objs      *objstore.Store
	scheme    string // file, s3, mem
	base      string // URI of the root, no query: file:///data/root, s3://bucket/prefix
	dir       string // file: the absolute root directory
	bucket    string // s3: the bucket
	storePath string // object-store path of the root: "data/root", "prefix", ""
	options   map[string]string
}

func newRoot(objs *objstore.Store) (root, error) {
	r, err := parseRoot(objs.URI())
	r.objs = objs
	return r, err
}

// parseRoot reads a root's URI (the store's, with its options).
func parseRoot(uri string) (root, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return root{}, nserror.New(nserror.InvalidInput, "root URI: %v", err)
	}
	r := root{scheme: u.Scheme}
	switch u.Scheme {
	case "file":
		r.dir = filepath.Clean(u.Path)
		r.base = "file://" + r.dir
		r.storePath = strings.TrimPrefix(r.dir, "/")
	case "s3":
		r.bucket = u.Host
		prefix := strings.Trim(u.Path, "/")
		r.base = "s3://" + u.Host
		if prefix != "" {
			r.base += "/" + prefix
		}
		r.storePath = prefix
		r.options = s3Options(u.Query())
	default:
		r.base = u.Scheme + "://"
	}
	return r, nil
}

// s3Options turns the root URI's S3 parameters into Lance storage options.
// The endpoint answered is the one engines reach the store at: the
// root's client_endpoint when it names one (flightns itself reaches the
// store at endpoint), else endpoint.
func s3Options(q url.Values) map[string]string {
	opts := map[string]string{}
	if v := q.Get(objstore.ParamClientEndpoint); v != "" {
		opts["aws_endpoint"] = v
		if strings.HasPrefix(v, "http://") {
			opts["aws_allow_http"] = "true"
		}
	} else if v := q.Get("endpoint"); v != "" {
		opts["aws_endpoint"] = v
		if strings.HasPrefix(v, "http://") || q.Get("disable_https") == "true" {
			opts["aws_allow_http"] = "true"
		}
	}
	if v := q.Get("region"); v != "" {
		opts["aws_region"] = v
	}
	if q.Get("use_path_style") == "true" {
		opts["aws_virtual_hosted_style_request"] = "false"
	}
	if len(opts) == 0 {
		return nil
	}
	return opts
}

// LocationURI returns the function that turns a table location (a key
// under the catalog root objs) into the URI engines open, as
// Service.LocationURI does.
func LocationURI(objs *objstore.Store) (func(key string) string, error) {
	r, err := newRoot(objs)
	if err != nil {
		return nil, err
	}
	return r.uri, nil
}

// uri is the URI of a key (a table directory) for Lance to open.
func (r root) uri(key string) string {
	if r.scheme == "mem" {
		return r.base + key
	}
	return r.base + "/" + key
}

// objectPath is the object-store path of a key.
func (r root) objectPath(key string) string {
	if r.storePath == "" {
		return key
	}
	return r.storePath + "/" + key
}

// toKey turns a location or manifest path in any of the three forms into a
// key relative to the root, refusing anything outside it.
func (r root) toKey(p, what string) (string, error) {
	if p == "" {
		return "", nserror.New(nserror.InvalidInput, "%s is empty", what)
	}
	rel := ""
	if i := strings.Index(p, "://"); i > 0 {
		u, err := url.Parse(p)
		if err != nil {
			return "", nserror.New(nserror.InvalidInput, "%s %q: %v", what, p, err)
		}
		if u.Scheme != r.scheme {
			return "", nserror.New(nserror.InvalidInput, "%s %q is on %s://, the catalog is on %s://", what, p, u.Scheme, r.scheme)
		}
		switch r.scheme {
		case "file":
			if u.Host != "" && u.Host != "localhost" {
				return "", nserror.New(nserror.InvalidInput, "%s %q names a host", what, p)
			}
			if rel = r.underDir(u.Path); rel == "" {
				return "", nserror.New(nserror.InvalidInput, "%s %q is outside the catalog root %s", what, p, r.base)
			}
		case "s3":
			if u.Host != r.bucket {
				return "", nserror.New(nserror.InvalidInput, "%s %q is in bucket %q, the catalog is in %q", what, p, u.Host, r.bucket)
			}
			rest := strings.TrimPrefix(u.Path, "/")
			if rel = r.underStorePath(rest); rel == "" {
				return "", nserror.New(nserror.InvalidInput, "%s %q is outside the catalog root %s", what, p, r.base)
			}
		default:
			rel = strings.TrimPrefix(p, r.base)
		}
	} else if r.scheme == "file" && strings.HasPrefix(p, "/") {
		if rel = r.underDir(p); rel == "" {
			return "", nserror.New(nserror.InvalidInput, "%s %q is outside the catalog root %s", what, p, r.dir)
		}
	} else if strings.HasPrefix(p, "/") {
		return "", nserror.New(nserror.InvalidInput, "%s %q is absolute", what, p)
	} else if under := r.underStorePath(p); under != "" {
		rel = under // an object-store path
	} else {
		rel = p // relative to the root
	}
	if err := objstore.ValidateKey(rel); err != nil {
		return "", nserror.New(nserror.InvalidInput, "%s %q: %w", what, p, err)
	}
	return rel, nil
}

// underDir returns the path of abs below the root directory, or "".
func (r root) underDir(abs string) string {
	if strings.Contains("/"+abs+"/", "/../") {
		return ""
	}
	if rest, ok := strings.CutPrefix(abs, r.dir+"/"); ok {
		return strings.TrimSuffix(rest, "/")
	}
	return ""
}

// underStorePath returns the part of an object-store path below the root,
// or "" when it is not below it. Below a root that is a whole bucket
// (storePath "") is every path but the bucket itself.
func (r root) underStorePath(p string) string {
	if r.storePath == "" {
		return strings.TrimSuffix(p, "/")
	}
	if rest, ok := strings.CutPrefix(p, r.storePath+"/"); ok {
		return strings.TrimSuffix(rest, "/")
	}
	return ""
}

// tableLocation validates a client-given table location and returns its
// key: inside the root, not the catalog's own __manifest, not inside a
// table's _versions, and on file:// free of symbolic links.
func (r root) tableLocation(given string) (string, error) {
	key, err := r.toKey(given, "table location")
	if err != nil {
		return "", err
	}
	if key == "__manifest" || strings.HasPrefix(key, "__manifest/") || strings.Contains("/"+key+"/", "/_versions/") {
		return "", nserror.New(nserror.InvalidInput, "table location %q is reserved", given)
	}
	// The location goes back to engines as a URI, which URL parsers read
	// differently from the path it names when it holds '%' (decoded, even
	// twice: %252e%252e), '?' (a query) or '#' (a fragment): refuse them,
	// or the engine would write elsewhere, even outside the root.
	if i := strings.IndexAny(key, "%?#"); i >= 0 {
		return "", nserror.New(nserror.InvalidInput, "table location %q has %q: a URI of it names another path; choose a location without '%%', '?' or '#'", given, key[i:i+1])
	}
	for seg := range strings.SplitSeq(key, "/") {
		if u, err := url.PathUnescape(seg); err == nil && (u == "." || u == "..") {
			return "", nserror.New(nserror.InvalidInput, "table location %q has an encoded %q segment", given, u)
		}
	}
	if err := r.objs.CheckNoSymlinks(key); err != nil {
		return "", err
	}
	return key, nil
}

// defaultLocation names a new table's directory <hash8>_<object_id>: the
// random hash spreads prefixes and keeps a re-created table apart from a
// dropped one; characters that are awkward in paths become '-'.
func defaultLocation(id api.ID) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.', r == '$':
			return r
		}
		return '-'
	}, id.String())
	if len(name) > 200 {
		name = name[:200]
	}
	return hex.EncodeToString(b[:]) + "_" + name
}

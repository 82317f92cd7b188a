package objstore

import (
	"strings"
	"unicode/utf8"

	"github.com/flightns/flightns/nserror"
)

// MaxKeyLen bounds a key in bytes (S3's own limit).
const MaxKeyLen = 1024

// MaxSegmentLen bounds one '/'-separated segment of a key in bytes: a
// file name's limit on the disks a file:// root (or MinIO) lives on, kept
// on every store so that a catalog never holds a key one of them refuses.
const MaxSegmentLen = 255

// tempPrefix starts the name of every temp file the disk driver writes.
// Keys may not use it, and listings never show such files.
const tempPrefix = ".flightns-tmp-"

// ValidateKey checks that key names an object inside the root: non-empty,
// at most MaxKeyLen bytes of UTF-8, relative, made of non-empty segments of
// at most MaxSegmentLen bytes that are neither "." nor "..", without control
// characters or backslashes.
func ValidateKey(key string) error {
	if key == "" {
		return nserror.New(nserror.InvalidInput, "object key is empty")
	}
	if strings.HasSuffix(key, "/") {
		return nserror.New(nserror.InvalidInput, "object key %q ends with a slash", key)
	}
	return validatePath(key)
}

// ValidatePrefix checks a listing prefix: empty (everything), or a key
// prefix whose complete segments obey ValidateKey's rules. It may end with a
// slash.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return validatePath(strings.TrimSuffix(prefix, "/"))
}

func validatePath(p string) error {
	switch {
	case len(p) > MaxKeyLen:
		return nserror.New(nserror.InvalidInput, "object key is %d bytes, more than %d", len(p), MaxKeyLen)
	case !utf8.ValidString(p):
		return nserror.New(nserror.InvalidInput, "object key %q is not valid UTF-8", p)
	case strings.HasPrefix(p, "/"):
		return nserror.New(nserror.InvalidInput, "object key %q is absolute; keys are relative to the root", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return nserror.New(nserror.InvalidInput, "object key %q contains %q", p, r)
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return nserror.New(nserror.InvalidInput, "object key %q has an empty segment", p)
		case seg == "." || seg == "..":
			return nserror.New(nserror.InvalidInput, "object key %q has a %q segment", p, seg)
		case len(seg) > MaxSegmentLen:
			return nserror.New(nserror.InvalidInput, "object key %.80q… has a segment of %d bytes, more than %d", p, len(seg), MaxSegmentLen)
		case strings.HasPrefix(seg, tempPrefix):
			return nserror.New(nserror.InvalidInput, "object key %q uses the reserved name prefix %q", p, tempPrefix)
		}
	}
	return nil
}

package api

import (
	"strings"
	"unicode/utf8"

	"github.com/flightns/flightns/nserror"
)

// ID identifies a namespace or table: a list of names from the root. The
// root namespace is the empty ID.
type ID []string

// Delimiter joins an ID's names in its string form (object_id).
const Delimiter = "$"

// Limits of an ID.
const (
	MaxDepth   = 16
	MaxNameLen = 256
	MaxIDLen   = 1024
)

// String is the $-joined form ("" for the root).
func (id ID) String() string { return strings.Join(id, Delimiter) }

// IsRoot reports whether id is the root namespace.
func (id ID) IsRoot() bool { return len(id) == 0 }

// Parent is the namespace holding id (the root holds top-level objects).
func (id ID) Parent() ID {
	if len(id) == 0 {
		return nil
	}
	return id[:len(id)-1]
}

// Name is the last name of id ("" for the root).
func (id ID) Name() string {
	if len(id) == 0 {
		return ""
	}
	return id[len(id)-1]
}

// Child is id extended by name.
func (id ID) Child(name string) ID {
	out := make(ID, len(id), len(id)+1)
	copy(out, id)
	return append(out, name)
}

// Equal reports whether two ids are the same.
func (id ID) Equal(o ID) bool {
	if len(id) != len(o) {
		return false
	}
	for i := range id {
		if id[i] != o[i] {
			return false
		}
	}
	return true
}

// Validate checks an id: at most MaxDepth names, each a non-empty string of
// UTF-8 without control characters or the delimiter, at most MaxNameLen
// bytes, MaxIDLen bytes in all. what names the object in the error.
func (id ID) Validate(what string) error {
	if len(id) > MaxDepth {
		return nserror.New(nserror.InvalidInput, "%s id has %d levels, more than %d", what, len(id), MaxDepth)
	}
	total := 0
	for _, n := range id {
		total += len(n) + 1
		switch {
		case n == "":
			return nserror.New(nserror.InvalidInput, "%s id %q has an empty name", what, id.String())
		case len(n) > MaxNameLen:
			return nserror.New(nserror.InvalidInput, "%s id has a name of %d bytes, more than %d", what, len(n), MaxNameLen)
		case !utf8.ValidString(n):
			return nserror.New(nserror.InvalidInput, "%s id has a name that is not UTF-8", what)
		case strings.Contains(n, Delimiter):
			return nserror.New(nserror.InvalidInput, "%s id: name %q contains the delimiter %q", what, n, Delimiter)
		case n == "." || n == "..":
			return nserror.New(nserror.InvalidInput, "%s id: name %q is not allowed", what, n)
		}
		for _, r := range n {
			if r < 0x20 || r == 0x7f {
				return nserror.New(nserror.InvalidInput, "%s id: name %q contains a control character", what, n)
			}
		}
	}
	if total > MaxIDLen {
		return nserror.New(nserror.InvalidInput, "%s id is %d bytes, more than %d", what, total, MaxIDLen)
	}
	return nil
}

// ParseID splits the string form of an id on delim ("" means Delimiter).
// The delimiter alone, or the empty string, is the root; empty names are
// an error.
func ParseID(s, delim string) (ID, error) {
	if delim == "" {
		delim = Delimiter
	}
	if s == "" || s == delim {
		return ID{}, nil
	}
	// Bounded before it is split: a hostile string of delimiters must not
	// become a huge slice.
	if len(s) > 4*MaxIDLen {
		return nil, nserror.New(nserror.InvalidInput, "id is %d bytes, more than %d", len(s), MaxIDLen)
	}
	if n := strings.Count(s, delim) + 1; n > MaxDepth {
		return nil, nserror.New(nserror.InvalidInput, "id %q has %d levels, more than %d", s, n, MaxDepth)
	}
	id := ID(strings.Split(s, delim))
	for _, n := range id {
		if n == "" {
			return nil, nserror.New(nserror.InvalidInput, "id %q has an empty name (split on the delimiter %q)", s, delim)
		}
	}
	return id, id.Validate("object")
}

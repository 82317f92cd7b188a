package lancemanifest

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/flightns/flightns/nserror"
)

// NamingScheme is how Lance names a table's manifests.
type NamingScheme int

// Lance's manifest naming schemes.
const (
	// V2: "_versions/{u64::MAX - version:020}.manifest", so that listing in
	// key order yields the newest version first.
	V2 NamingScheme = iota
	// V1: "_versions/{version}.manifest".
	V1
)

func (s NamingScheme) String() string {
	if s == V1 {
		return "V1"
	}
	return "V2"
}

// ParseNamingScheme reads "V1" or "V2" (any case); "" is V2.
func ParseNamingScheme(s string) (NamingScheme, error) {
	switch strings.ToUpper(s) {
	case "", "V2":
		return V2, nil
	case "V1":
		return V1, nil
	}
	return 0, nserror.New(nserror.InvalidInput, "unknown manifest naming scheme %q (want V1 or V2)", s)
}

// VersionsDir is the directory of a table (or a branch's tree) that holds
// its manifests.
const VersionsDir = "_versions"

const (
	manifestExt    = "manifest"
	v2DigitsLen    = 20
	detachedPrefix = "d"
)

// ManifestName is the final file name of version v.
func ManifestName(s NamingScheme, v uint64) string {
	if s == V1 {
		return fmt.Sprintf("%d.%s", v, manifestExt)
	}
	return fmt.Sprintf("%020d.%s", math.MaxUint64-v, manifestExt)
}

// StagingPath returns a fresh staging key for a final manifest key: the
// final key, a dash, and a random UUID.
func StagingPath(final string) string { return final + "-" + uuid.NewString() }

// ManifestFile is what a manifest file name says.
type ManifestFile struct {
	Version uint64
	Scheme  NamingScheme
	// Staging is set for "<final name>-<suffix>"; Suffix is what follows
	// the dash.
	Staging bool
	Suffix  string
	// Detached is set for Lance's detached versions ("d<n>.manifest"),
	// which are not part of the table's linear history.
	Detached bool
}

// FinalName is the final file name this file is (or will be, for staging).
func (m ManifestFile) FinalName() string { return ManifestName(m.Scheme, m.Version) }

// ParseManifestName parses a file name in a table's _versions directory,
// following Lance: a name whose extension is exactly "manifest" is final
// (V2 when its number has 20 digits, V1 otherwise); "<final>-<suffix>" is a
// staging manifest. Anything else is an error.
func ParseManifestName(name string) (ManifestFile, error) {
	bad := func(why string) (ManifestFile, error) {
		return ManifestFile{}, nserror.New(nserror.InvalidInput, "%q is not a Lance manifest name: %s", name, why)
	}
	num, rest, ok := strings.Cut(name, ".")
	if !ok {
		return bad("no extension")
	}
	var m ManifestFile
	if ext, suffix, staged := strings.Cut(rest, "-"); staged {
		if ext != manifestExt || suffix == "" {
			return bad("a staging name is <final name>-<suffix>")
		}
		m.Staging, m.Suffix = true, suffix
	} else if rest != manifestExt {
		return bad("extension is not ." + manifestExt)
	}
	if strings.HasPrefix(num, detachedPrefix) {
		num, m.Detached = num[len(detachedPrefix):], true
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return bad("the version is not a decimal number")
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return bad("the version does not fit in 64 bits")
	}
	switch {
	case m.Detached:
		m.Scheme, m.Version = V2, n
	case len(num) == v2DigitsLen:
		m.Scheme, m.Version = V2, math.MaxUint64-n
	default:
		if len(num) > 1 && num[0] == '0' {
			return bad("a V1 version has no leading zeros")
		}
		m.Scheme, m.Version = V1, n
	}
	return m, nil
}

// ParseManifestPath splits a manifest key into the dataset's directory and
// the parsed file name. The key must be <dir>/_versions/<name>.
func ParseManifestPath(key string) (dir Dir, m ManifestFile, err error) {
	versions, name := path.Split(key)
	versions = strings.TrimSuffix(versions, "/")
	if path.Base(versions) != VersionsDir || path.Dir(versions) == "." && versions == VersionsDir {
		return "", ManifestFile{}, nserror.New(nserror.InvalidInput, "manifest path %q is not <table>/%s/<name>", key, VersionsDir)
	}
	m, err = ParseManifestName(name)
	if err != nil {
		return "", ManifestFile{}, err
	}
	return Dir(path.Dir(versions)), m, nil
}

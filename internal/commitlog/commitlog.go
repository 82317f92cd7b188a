package commitlog

import (
	"fmt"
	"strconv"
	"strings"
)

// KindField is the field that names an entry's kind.
const KindField = "k"

// The kinds of entries.
const (
	Put                 = "put"
	Delete              = "delete"
	Version             = "version"
	ReadVersion         = "read_version"
	DeleteVersions      = "delete_versions"
	DeleteVersionRanges = "delete_version_ranges"
	DropTable           = "drop_table"
	RenameTable         = "rename_table"
	Stats               = "stats"
	Event               = "event"
)

// Kinds are every kind, for the tests that hold writers and the reader to
// them.
var Kinds = []string{Put, Delete, Version, ReadVersion, DeleteVersions, DeleteVersionRanges, DropTable, RenameTable, Stats, Event}

// MaxLen is about how many entries the stream keeps (XADD MAXLEN ~): the
// materializer makes them durable long before; a reader that fell further
// behind re-reads storage.
const MaxLen = 1_000_000

// Range is a range of versions: Start inclusive, End exclusive (0: no end).
type Range struct {
	Start, End uint64
}

// EncodeRanges writes ranges as "start:end;start:end" (end empty: no end).
func EncodeRanges(ranges []Range) string {
	var b strings.Builder
	for i, r := range ranges {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(strconv.FormatUint(r.Start, 10))
		b.WriteByte(':')
		if r.End != 0 {
			b.WriteString(strconv.FormatUint(r.End, 10))
		}
	}
	return b.String()
}

// DecodeRanges reads what EncodeRanges wrote.
func DecodeRanges(s string) ([]Range, error) {
	if s == "" {
		return nil, nil
	}
	var out []Range
	for _, part := range strings.Split(s, ";") {
		lo, hi, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("commitlog: range %q has no ':'", part)
		}
		var r Range
		var err error
		if r.Start, err = strconv.ParseUint(lo, 10, 64); err != nil {
			return nil, fmt.Errorf("commitlog: range %q: %w", part, err)
		}
		if hi != "" {
			if r.End, err = strconv.ParseUint(hi, 10, 64); err != nil {
				return nil, fmt.Errorf("commitlog: range %q: %w", part, err)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// InRanges reports whether v is in one of ranges.
func InRanges(v uint64, ranges []Range) bool {
	for _, r := range ranges {
		if v >= r.Start && (r.End == 0 || v < r.End) {
			return true
		}
	}
	return false
}

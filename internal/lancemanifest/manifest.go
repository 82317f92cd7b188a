package lancemanifest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// MaxSize is the largest manifest file Read accepts.
const MaxSize = 256 << 20

// Manifest is what flightns reads of one version's manifest.
type Manifest struct {
	Version   uint64
	Timestamp time.Time // zero when the manifest has none
	// Branch is the version's Lance branch, "" on main.
	Branch        string
	Fields        []Field
	Fragments     []Fragment
	Indices       int               // indices in the index section
	TableMetadata map[string]string // Lance's table metadata
	WriterLibrary string
	WriterVersion string
}

// Field is one field of the schema: top-level fields have ParentID -1.
type Field struct {
	ID, ParentID int32
	Name         string
	LogicalType  string // Lance's logical type, e.g. "int64", "string", "struct"
	Nullable     bool
}

// Fragment is one fragment of the table.
type Fragment struct {
	ID           uint64
	PhysicalRows uint64 // rows written, deleted ones included
	DeletedRows  uint64
	Files        []DataFile
}

// DataFile is one data file of a fragment.
type DataFile struct {
	Path string
	Size uint64 // 0 when Lance did not record it
}

// Rows is the number of rows of the version, deletions excluded.
func (m *Manifest) Rows() uint64 {
	var n uint64
	for _, f := range m.Fragments {
		n += f.PhysicalRows - min(f.DeletedRows, f.PhysicalRows)
	}
	return n
}

// DeletedRows is the number of rows marked deleted.
func (m *Manifest) DeletedRows() uint64 {
	var n uint64
	for _, f := range m.Fragments {
		n += f.DeletedRows
	}
	return n
}

// DataBytes is the size of the version's data files, as the manifest
// records them.
func (m *Manifest) DataBytes() uint64 {
	var n uint64
	for _, f := range m.Fragments {
		for _, d := range f.Files {
			n += d.Size
		}
	}
	return n
}

// ErrNotManifest is the cause of every error Read returns for bytes that
// are not a manifest it can read.
var ErrNotManifest = errors.New("not a Lance manifest")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotManifest}, args...)...)
}

const footerLen = 16

// Read parses a whole manifest file.
//
//nolint:gocyclo // one case per protobuf field of the manifest: the wire format reads best as one switch
func Read(b []byte) (*Manifest, error) {
	if len(b) > MaxSize {
		return nil, bad("%d bytes, more than the %d a manifest may have", len(b), MaxSize)
	}
	if len(b) < footerLen || string(b[len(b)-4:]) != "LANC" {
		return nil, bad("no LANC footer")
	}
	pos := binary.LittleEndian.Uint64(b[len(b)-footerLen:])
	msg, err := framed(b[:len(b)-footerLen], pos)
	if err != nil {
		return nil, fmt.Errorf("the manifest message: %w", err)
	}
	m := &Manifest{}
	var indexAt uint64
	hasIndex := false
	err = fields(msg, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			f, err := readField(v)
			if err != nil {
				return err
			}
			m.Fields = append(m.Fields, f)
		case num == 2 && typ == protowire.BytesType:
			f, err := readFragment(v)
			if err != nil {
				return err
			}
			m.Fragments = append(m.Fragments, f)
		case num == 3 && typ == protowire.VarintType:
			m.Version = n
		case num == 6 && typ == protowire.VarintType:
			indexAt, hasIndex = n, true
		case num == 7 && typ == protowire.BytesType:
			t, err := readTimestamp(v)
			if err != nil {
				return err
			}
			m.Timestamp = t
		case num == 13 && typ == protowire.BytesType:
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if typ == protowire.BytesType && num == 1 {
					m.WriterLibrary = string(v)
				} else if typ == protowire.BytesType && num == 2 {
					m.WriterVersion = string(v)
				}
				return nil
			})
		case num == 19 && typ == protowire.BytesType:
			k, val, err := readMapEntry(v)
			if err != nil {
				return err
			}
			if m.TableMetadata == nil {
				m.TableMetadata = map[string]string{}
			}
			m.TableMetadata[k] = val
		case num == 20 && typ == protowire.BytesType:
			m.Branch = string(v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if hasIndex {
		sec, err := framed(b[:len(b)-footerLen], indexAt)
		if err != nil {
			return nil, fmt.Errorf("the index section: %w", err)
		}
		if err := fields(sec, func(num protowire.Number, typ protowire.Type, _ []byte, _ uint64) error {
			if num == 1 && typ == protowire.BytesType {
				m.Indices++
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// framed is the message at pos in b: a little-endian uint32 length, then
// that many bytes.
func framed(b []byte, pos uint64) ([]byte, error) {
	if pos > uint64(len(b)) || uint64(len(b))-pos < 4 {
		return nil, bad("position %d is outside the file's %d bytes", pos, len(b))
	}
	n := uint64(binary.LittleEndian.Uint32(b[pos:]))
	if uint64(len(b))-pos-4 < n {
		return nil, bad("a %d-byte message at %d runs past the file's end", n, pos)
	}
	return b[pos+4 : pos+4+n], nil
}

// fields calls fn with each field of a protobuf message: its number, wire
// type, and its bytes (length-delimited) or value (varint, fixed).
// Groups are refused.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, _, v []byte, n uint64) error { return fn(num, typ, v, n) })
}

// eachField is fields with each field's whole encoding (raw: its tag and
// value), which a writer copies as it is.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, raw, v []byte, n uint64) error) error {
	for len(b) > 0 {
		field := b
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return bad("a malformed field tag")
		}
		b = b[l:]
		var v []byte
		var n uint64
		switch typ {
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var x uint32
			x, l = protowire.ConsumeFixed32(b)
			n = uint64(x)
		case protowire.Fixed64Type:
			n, l = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		default:
			return bad("field %d has wire type %d, which manifests do not use", num, typ)
		}
		if l < 0 {
			return bad("field %d is malformed", num)
		}
		b = b[l:]
		if err := fn(num, typ, field[:len(field)-len(b)], v, n); err != nil {
			return err
		}
	}
	return nil
}

func readField(b []byte) (Field, error) {
	var f Field
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == 2 && typ == protowire.BytesType:
			f.Name = string(v)
		case num == 3 && typ == protowire.VarintType:
			f.ID = int32(n)
		case num == 4 && typ == protowire.VarintType:
			f.ParentID = int32(n)
		case num == 5 && typ == protowire.BytesType:
			f.LogicalType = string(v)
		case num == 6 && typ == protowire.VarintType:
			f.Nullable = n != 0
		}
		return nil
	})
	return f, err
}

func readFragment(b []byte) (Fragment, error) {
	var f Fragment
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			f.ID = n
		case num == 2 && typ == protowire.BytesType:
			var d DataFile
			if err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				if num == 1 && typ == protowire.BytesType {
					d.Path = string(v)
				} else if num == 6 && typ == protowire.VarintType {
					d.Size = n
				}
				return nil
			}); err != nil {
				return err
			}
			f.Files = append(f.Files, d)
		case num == 3 && typ == protowire.BytesType:
			return fields(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
				if num == 4 && typ == protowire.VarintType {
					f.DeletedRows = n
				}
				return nil
			})
		case num == 4 && typ == protowire.VarintType:
			f.PhysicalRows = n
		}
		return nil
	})
	return f, err
}

func readTimestamp(b []byte) (time.Time, error) {
	var sec, nsec int64
	err := fields(b, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
		if typ != protowire.VarintType {
			return nil
		}
		switch num {
		case 1:
			sec = int64(n)
		case 2:
			nsec = int64(n)
		}
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	if nsec < 0 || nsec >= 1e9 {
		return time.Time{}, bad("timestamp nanoseconds %d out of range", nsec)
	}
	return time.Unix(sec, nsec).UTC(), nil
}

// readMapEntry reads a map<string, string> entry (key 1, value 2).
func readMapEntry(b []byte) (k, v string, err error) {
	err = fields(b, func(num protowire.Number, typ protowire.Type, raw []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			k = string(raw)
		case 2:
			v = string(raw)
		}
		return nil
	})
	return k, v, err
}

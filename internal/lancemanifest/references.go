package lancemanifest

import (
	"encoding/hex"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// References is every file a manifest names, as Lance's cleanup reads a
// manifest (lance rust/lance/src/dataset/cleanup.rs, process_manifest):
// the data files of its fragments, their deletion files, the indices of
// its index section, and its transaction file; with the version and time
// that decide whether the version is kept.
//
// A file named with a base id lives under the base path of that id, not
// in the dataset's own directory (Lance's multi-base and shallow-clone
// layout: a branch's first manifest names its parent's files that way).
type References struct {
	Version   uint64
	Timestamp time.Time // zero when the manifest has none
	Branch    string    // "" on main

	// DataFiles are the fragments' data files, each a path relative to
	// the data/ directory of its base.
	DataFiles []FileRef
	// DeletionFiles are the fragments' deletion files, each a name under
	// the _deletions/ directory of its base (DeletionFileName).
	DeletionFiles []FileRef
	// ExternalFiles are the files a fragment keeps its row ids and row
	// versions in (lance.table.ExternalFile), each a path relative to
	// the dataset's root.
	ExternalFiles []string
	// Indices are the indices of the index section, each a directory
	// _indices/<uuid>/ of its base.
	Indices []IndexRef
	// TransactionFile is the name of the version's transaction under
	// the dataset's _transactions/ ("" when the manifest names none).
	TransactionFile string
	// BasePaths are the bases the ids above name.
	BasePaths []BasePath
}

// FileRef is a file a manifest names: its path or name, and the base it
// lives in (HasBase false: the dataset's own directory).
type FileRef struct {
	Path    string
	BaseID  uint32
	HasBase bool
}

// IndexRef is an index of a manifest: its UUID as Lance prints it
// (lowercase, hyphenated), which names its directory under _indices/,
// and the base it lives in.
type IndexRef struct {
	UUID    string
	Name    string
	BaseID  uint32
	HasBase bool
}

// BasePath is one of a manifest's base paths (lance.table.BasePath).
type BasePath struct {
	ID            uint32
	Name          string
	IsDatasetRoot bool
	Path          string
}

// Deletion file types (lance.table.DeletionFile.DeletionFileType) and the
// suffix Lance gives each (lance-table format/fragment.rs suffix).
var deletionSuffix = map[uint64]string{0: "arrow", 1: "bin"}

// DeletionFileName is the name under _deletions/ of a fragment's deletion
// file, as lance-table io/deletion.rs deletion_file_path makes it:
// {fragment_id}-{read_version}-{id}.{arrow|bin}.
func DeletionFileName(fragmentID, readVersion, id uint64, fileType uint64) (string, error) {
	suffix, ok := deletionSuffix[fileType]
	if !ok {
		return "", bad("deletion file type %d is not one Lance names (0 arrow, 1 bitmap)", fileType)
	}
	return fmt.Sprintf("%d-%d-%d.%s", fragmentID, readVersion, id, suffix), nil
}

// Manifest, fragment and index fields that name files (protos/table.proto
// of lance-format/lance), besides those write.go uses.
const (
	fFragmentID                    protowire.Number = 1
	fFragmentExternalRowIDs        protowire.Number = 6
	fFragmentExternalLastUpdatedAt protowire.Number = 8
	fFragmentExternalCreatedAt     protowire.Number = 10
	fDataFilePath                  protowire.Number = 1
	fDeletionFileType              protowire.Number = 1
	fDeletionReadVersion           protowire.Number = 2
	fDeletionID                    protowire.Number = 3
	fExternalFilePath              protowire.Number = 1
	fIndexUUID                     protowire.Number = 1
	fIndexName                     protowire.Number = 3
	fUUIDBytes                     protowire.Number = 1

	uuidLen = 16
)

// ReadReferences parses a whole manifest file and returns every file it
// names. It reads what Lance's own cleanup reads and refuses what Lance
// would refuse to read (an index without a 16-byte UUID, a deletion file
// of an unknown type): a file it cannot name is an error, never a
// reference left out, so that a caller deleting what no manifest names
// never deletes a file it could not see named.
func ReadReferences(b []byte) (*References, error) {
	f, err := split(b)
	if err != nil {
		return nil, err
	}
	r := &References{}
	err = fields(f.msg, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == fManifestFragments && typ == protowire.BytesType:
			return r.readFragment(v)
		case num == fManifestVersion && typ == protowire.VarintType:
			r.Version = n
		case num == fManifestTimestamp && typ == protowire.BytesType:
			t, err := readTimestamp(v)
			if err != nil {
				return err
			}
			r.Timestamp = t
		case num == fManifestTransactionFile && typ == protowire.BytesType:
			r.TransactionFile = string(v)
		case num == fManifestBasePaths && typ == protowire.BytesType:
			bp, err := readBasePath(v)
			if err != nil {
				return err
			}
			r.BasePaths = append(r.BasePaths, bp)
		case num == fManifestBranch && typ == protowire.BytesType:
			r.Branch = string(v)
		case isFileField(num) && typ != wireTypeOf(num):
			// A field that names files, in a wire type Lance never
			// writes: what it names cannot be read, so it is an error.
			return bad("manifest field %d has wire type %d", num, typ)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f.index != nil {
		if err := fields(f.index, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			if num != fIndexSectionItem {
				return nil
			}
			if typ != protowire.BytesType {
				return bad("index section item has wire type %d", typ)
			}
			ix, err := readIndexRef(v)
			if err != nil {
				return err
			}
			r.Indices = append(r.Indices, ix)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("the index section: %w", err)
		}
	}
	return r, nil
}

// isFileField says whether a manifest field names files (or holds what
// does), and wireTypeOf is the wire type Lance writes it in.
func isFileField(num protowire.Number) bool {
	switch num {
	case fManifestFragments, fManifestTransactionFile, fManifestBasePaths, fManifestIndexSection:
		return true
	}
	return false
}

func wireTypeOf(num protowire.Number) protowire.Type {
	if num == fManifestIndexSection {
		return protowire.VarintType
	}
	return protowire.BytesType
}

func (r *References) readFragment(b []byte) error {
	var (
		id      uint64
		del     []byte
		hasDel  bool
		files   []FileRef
		extPath []string
	)
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == fFragmentID && typ == protowire.VarintType:
			id = n
		case num == fFragmentFiles:
			if typ != protowire.BytesType {
				return bad("a data file has wire type %d", typ)
			}
			d, err := readFileRef(v, fDataFilePath, fDataFileBaseID)
			if err != nil {
				return err
			}
			files = append(files, d)
		case num == fFragmentDeletion:
			if typ != protowire.BytesType {
				return bad("a deletion file has wire type %d", typ)
			}
			del, hasDel = v, true
		case num == fFragmentExternalRowIDs || num == fFragmentExternalLastUpdatedAt || num == fFragmentExternalCreatedAt:
			if typ != protowire.BytesType {
				return bad("an external file has wire type %d", typ)
			}
			ext, err := readFileRef(v, fExternalFilePath, 0)
			if err != nil {
				return err
			}
			if ext.Path != "" {
				extPath = append(extPath, ext.Path)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.DataFiles = append(r.DataFiles, files...)
	r.ExternalFiles = append(r.ExternalFiles, extPath...)
	if hasDel {
		d, err := readDeletionRef(del, id)
		if err != nil {
			return fmt.Errorf("fragment %d: %w", id, err)
		}
		r.DeletionFiles = append(r.DeletionFiles, d)
	}
	return nil
}

// readFileRef reads a message with a path (field pathNum) and an optional
// base id (field baseNum; 0: none).
func readFileRef(b []byte, pathNum, baseNum protowire.Number) (FileRef, error) {
	var d FileRef
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == pathNum && typ == protowire.BytesType:
			d.Path = string(v)
		case baseNum != 0 && num == baseNum && typ == protowire.VarintType:
			if n > uint64(^uint32(0)) {
				return bad("base id %d does not fit in 32 bits", n)
			}
			d.BaseID, d.HasBase = uint32(n), true
		}
		return nil
	})
	return d, err
}

func readDeletionRef(b []byte, fragmentID uint64) (FileRef, error) {
	var fileType, readVersion, id uint64
	var d FileRef
	err := fields(b, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
		if typ != protowire.VarintType {
			return nil
		}
		switch num {
		case fDeletionFileType:
			fileType = n
		case fDeletionReadVersion:
			readVersion = n
		case fDeletionID:
			id = n
		case fDeletionBaseID:
			if n > uint64(^uint32(0)) {
				return bad("base id %d does not fit in 32 bits", n)
			}
			d.BaseID, d.HasBase = uint32(n), true
		}
		return nil
	})
	if err != nil {
		return d, err
	}
	d.Path, err = DeletionFileName(fragmentID, readVersion, id, fileType)
	return d, err
}

func readIndexRef(b []byte) (IndexRef, error) {
	var ix IndexRef
	var uuid []byte
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == fIndexUUID && typ == protowire.BytesType:
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num == fUUIDBytes && typ == protowire.BytesType {
					uuid = v
				}
				return nil
			})
		case num == fIndexName && typ == protowire.BytesType:
			ix.Name = string(v)
		case num == fIndexBaseID && typ == protowire.VarintType:
			if n > uint64(^uint32(0)) {
				return bad("base id %d does not fit in 32 bits", n)
			}
			ix.BaseID, ix.HasBase = uint32(n), true
		}
		return nil
	})
	if err != nil {
		return ix, err
	}
	if len(uuid) != uuidLen {
		return ix, bad("index %q has a %d-byte UUID, not %d", ix.Name, len(uuid), uuidLen)
	}
	ix.UUID = formatUUID(uuid)
	return ix, nil
}

// formatUUID prints 16 bytes as Lance's uuid::Uuid does (to_string):
// lowercase hex in groups of 8-4-4-4-12.
func formatUUID(u []byte) string {
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:16])
	return string(s[:])
}

func readBasePath(b []byte) (BasePath, error) {
	var bp BasePath
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == fBasePathID && typ == protowire.VarintType:
			if n > uint64(^uint32(0)) {
				return bad("base id %d does not fit in 32 bits", n)
			}
			bp.ID = uint32(n)
		case num == fBasePathName && typ == protowire.BytesType:
			bp.Name = string(v)
		case num == fBasePathIsRoot && typ == protowire.VarintType:
			bp.IsDatasetRoot = n != 0
		case num == fBasePathPath && typ == protowire.BytesType:
			bp.Path = string(v)
		}
		return nil
	})
	return bp, err
}

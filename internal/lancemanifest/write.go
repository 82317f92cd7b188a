package lancemanifest

import (
	"encoding/binary"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Writing manifests. flightns writes two kinds of manifest, each as Lance
// (lance-format/lance 12) writes it, and changes only what Lance changes:
//
//   - Restored: RestoreTable's version N+1, Lance's Dataset::restore
//     (rust/lance/src/dataset.rs restore, io/commit.rs commit_transaction,
//     dataset/transaction.rs restore_old_manifest): the restored
//     version's manifest with the new version number, the commit's time,
//     the new transaction's file and inline section, the latest version's
//     max_fragment_id (fragment ids are never reused), and its own index
//     section written again.
//   - Cloned: a branch's first manifest, Lance's Dataset::create_branch
//     (a shallow clone: io/commit.rs do_commit_new_dataset,
//     lance-table format/manifest.rs Manifest::shallow_clone): the source
//     version's manifest with the branch's name, a new base path (the
//     source dataset's root) that every data and deletion file without a
//     base now names, the base-paths feature flag, the commit's time, and
//     the clone transaction.
//
// Every other field is copied byte for byte, in its place; a field the
// writer sets that the source lacks is appended (protobuf readers take
// fields in any order). A file is [index section][transaction section]
// manifest footer, each section framed by its little-endian uint32
// length, as lance-table io/manifest.rs do_write_manifest lays it out.

// Manifest and message field numbers (protos/table.proto,
// protos/transaction.proto of lance-format/lance).
const (
	fManifestFragments          protowire.Number = 2
	fManifestVersion            protowire.Number = 3
	fManifestIndexSection       protowire.Number = 6
	fManifestTimestamp          protowire.Number = 7
	fManifestTag                protowire.Number = 8
	fManifestReaderFlags        protowire.Number = 9
	fManifestWriterFlags        protowire.Number = 10
	fManifestMaxFragmentID      protowire.Number = 11
	fManifestTransactionFile    protowire.Number = 12
	fManifestBasePaths          protowire.Number = 18
	fManifestBranch             protowire.Number = 20
	fManifestTransactionSection protowire.Number = 21

	fFragmentFiles    protowire.Number = 2
	fFragmentDeletion protowire.Number = 3
	fDataFileBaseID   protowire.Number = 7
	fDeletionBaseID   protowire.Number = 7
	fIndexBaseID      protowire.Number = 9
	fIndexSectionItem protowire.Number = 1

	fBasePathID     protowire.Number = 1
	fBasePathName   protowire.Number = 2
	fBasePathIsRoot protowire.Number = 3
	fBasePathPath   protowire.Number = 4

	fTxnReadVersion protowire.Number = 1
	fTxnUUID        protowire.Number = 2
	fTxnRestore     protowire.Number = 106
	fTxnClone       protowire.Number = 113
)

// flagBasePaths is Lance's feature flag of a manifest with base paths
// (lance-table feature_flags.rs FLAG_BASE_PATHS), set on reading and on
// writing.
const flagBasePaths = 16

// file is a manifest file taken apart: its manifest message, its index
// section (nil: none) and the footer's format version bytes.
type file struct {
	msg, index []byte
	format     [4]byte
}

func split(b []byte) (file, error) {
	var f file
	if len(b) > MaxSize {
		return f, bad("%d bytes, more than the %d a manifest may have", len(b), MaxSize)
	}
	if len(b) < footerLen || string(b[len(b)-4:]) != "LANC" {
		return f, bad("no LANC footer")
	}
	body := b[:len(b)-footerLen]
	copy(f.format[:], b[len(b)-8:len(b)-4])
	msg, err := framed(body, binary.LittleEndian.Uint64(b[len(b)-footerLen:]))
	if err != nil {
		return f, fmt.Errorf("the manifest message: %w", err)
	}
	f.msg = msg
	err = fields(msg, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
		if num == fManifestIndexSection && typ == protowire.VarintType {
			sec, err := framed(body, n)
			if err != nil {
				return fmt.Errorf("the index section: %w", err)
			}
			f.index = sec
		}
		return nil
	})
	return f, err
}

// assemble writes a manifest file: the index section (if any), the
// transaction, then the message that edit makes of the positions.
func assemble(index, txn []byte, format [4]byte, message func(indexAt, txnAt uint64, hasIndex bool) []byte) []byte {
	var out []byte
	frame := func(m []byte) uint64 {
		at := uint64(len(out))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(m)))
		out = append(out, m...)
		return at
	}
	var indexAt uint64
	if index != nil {
		indexAt = frame(index)
	}
	txnAt := frame(txn)
	msgAt := frame(message(indexAt, txnAt, index != nil))
	out = binary.LittleEndian.AppendUint64(out, msgAt)
	out = append(out, format[:]...)
	return append(out, "LANC"...)
}

// edit copies msg field by field: replace decides each field, answering
// raw to keep it, nil to drop it, or other encoded fields in its place.
func edit(msg []byte, replace func(num protowire.Number, typ protowire.Type, raw, v []byte) ([]byte, error)) ([]byte, error) {
	out := make([]byte, 0, len(msg)+128)
	err := eachField(msg, func(num protowire.Number, typ protowire.Type, raw, v []byte, _ uint64) error {
		repl, err := replace(num, typ, raw, v)
		out = append(out, repl...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func varintField(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func bytesField(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
}

// timestampField is a google.protobuf.Timestamp field, as prost writes
// it (zero parts left out).
func timestampField(num protowire.Number, t time.Time) []byte {
	var ts []byte
	if s := t.Unix(); s != 0 {
		ts = append(ts, varintField(1, uint64(s))...)
	}
	if ns := t.Nanosecond(); ns != 0 {
		ts = append(ts, varintField(2, uint64(ns))...)
	}
	return bytesField(num, ts)
}

// RestoreTransaction is Lance's transaction of a restore of version onto
// a table whose latest version is readVersion (operation Restore).
func RestoreTransaction(readVersion uint64, uuid string, version uint64) []byte {
	b := varintField(fTxnReadVersion, readVersion)
	b = append(b, bytesField(fTxnUUID, []byte(uuid))...)
	var op []byte
	if version != 0 {
		op = varintField(1, version)
	}
	return append(b, bytesField(fTxnRestore, op)...)
}

// CloneTransaction is Lance's transaction of a branch's creation (a
// shallow Clone): the branch forks from version refVersion of the dataset
// at refPath, which is branch refName ("" for main).
func CloneTransaction(refVersion uint64, uuid, refName, refPath, branch string) []byte {
	b := varintField(fTxnReadVersion, refVersion)
	b = append(b, bytesField(fTxnUUID, []byte(uuid))...)
	op := varintField(1, 1) // is_shallow
	if refName != "" {
		op = append(op, bytesField(2, []byte(refName))...)
	}
	if refVersion != 0 {
		op = append(op, varintField(3, refVersion)...)
	}
	op = append(op, bytesField(4, []byte(refPath))...)
	op = append(op, bytesField(5, []byte(branch))...)
	return append(b, bytesField(fTxnClone, op)...)
}

// TransactionFile is the name, under a dataset's _transactions/, of the
// file Lance writes a transaction to: <read_version>-<uuid>.txn.
func TransactionFile(readVersion uint64, uuid string) string {
	return fmt.Sprintf("%d-%s.txn", readVersion, uuid)
}

// Restored is the manifest file of version, restoring the manifest file
// old, on a table whose latest manifest file is latest, committed at now
// by transaction txn written to txnFile.
func Restored(old, latest []byte, version uint64, now time.Time, txn []byte, txnFile string) ([]byte, error) {
	f, err := split(old)
	if err != nil {
		return nil, err
	}
	l, err := split(latest)
	if err != nil {
		return nil, fmt.Errorf("the latest version: %w", err)
	}
	maxID, hasMax, err := maxFragmentID(f.msg)
	if err != nil {
		return nil, err
	}
	if lm, ok, err := maxFragmentID(l.msg); err != nil {
		return nil, fmt.Errorf("the latest version: %w", err)
	} else if ok {
		maxID, hasMax = max(maxID, lm), true
	}
	var werr error
	file := assemble(f.index, txn, f.format, func(indexAt, txnAt uint64, hasIndex bool) []byte {
		set := map[protowire.Number][]byte{
			fManifestVersion:            varintField(fManifestVersion, version),
			fManifestTimestamp:          timestampField(fManifestTimestamp, now),
			fManifestTransactionFile:    bytesField(fManifestTransactionFile, []byte(txnFile)),
			fManifestTransactionSection: varintField(fManifestTransactionSection, txnAt),
		}
		if hasIndex {
			set[fManifestIndexSection] = varintField(fManifestIndexSection, indexAt)
		}
		if hasMax {
			set[fManifestMaxFragmentID] = varintField(fManifestMaxFragmentID, maxID)
		}
		out, err := replaceFields(f.msg, set, nil)
		werr = err
		return out
	})
	if werr != nil {
		return nil, werr
	}
	return file, nil
}

// replaceFields copies msg with each field number in set replaced by its
// bytes (written where the first such field was, appended if there was
// none), and each field for which rewrite is non-nil rewritten by it.
func replaceFields(msg []byte, set map[protowire.Number][]byte, rewrite func(num protowire.Number, typ protowire.Type, v []byte) ([]byte, bool, error)) ([]byte, error) {
	done := map[protowire.Number]bool{}
	out, err := edit(msg, func(num protowire.Number, typ protowire.Type, raw, v []byte) ([]byte, error) {
		if repl, ok := set[num]; ok {
			if done[num] {
				return nil, nil
			}
			done[num] = true
			return repl, nil
		}
		if rewrite != nil {
			if repl, ok, err := rewrite(num, typ, v); err != nil || ok {
				return repl, err
			}
		}
		return raw, nil
	})
	if err != nil {
		return nil, err
	}
	for _, num := range []protowire.Number{fManifestVersion, fManifestIndexSection, fManifestTimestamp,
		fManifestReaderFlags, fManifestWriterFlags, fManifestMaxFragmentID, fManifestTransactionFile,
		fManifestBranch, fManifestTransactionSection} {
		if repl, ok := set[num]; ok && !done[num] {
			out = insertInOrder(out, num, repl)
		}
	}
	return out, nil
}

// insertInOrder inserts field (number num) into msg before the first
// field numbered higher, where Lance, which writes a manifest's fields in
// ascending order, has it.
func insertInOrder(msg []byte, num protowire.Number, field []byte) []byte {
	at := len(msg)
	for i := 0; i < len(msg); {
		n, typ, l := protowire.ConsumeTag(msg[i:])
		if l < 0 {
			break
		}
		m := protowire.ConsumeFieldValue(n, typ, msg[i+l:])
		if m < 0 {
			break
		}
		if n > num {
			at = i
			break
		}
		i += l + m
	}
	out := make([]byte, 0, len(msg)+len(field))
	out = append(out, msg[:at]...)
	out = append(out, field...)
	return append(out, msg[at:]...)
}

func maxFragmentID(msg []byte) (uint64, bool, error) {
	var v uint64
	ok := false
	err := fields(msg, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
		if num == fManifestMaxFragmentID && typ == protowire.VarintType {
			v, ok = n, true
		}
		return nil
	})
	return v, ok, err
}

// Clone describes a branch's first manifest: the branch's name, the
// source dataset (its URI, and its branch's name, "" for main), the
// commit's time and its transaction.
type Clone struct {
	Branch  string
	RefName string
	RefPath string
	Now     time.Time
	Txn     []byte
	TxnFile string
}

// Cloned is the first manifest file of a branch that forks from the
// manifest file src.
func Cloned(src []byte, c Clone) ([]byte, error) {
	f, err := split(src)
	if err != nil {
		return nil, err
	}
	// The new base is one past the highest the source names.
	var baseID uint32
	var flags [2]uint64
	err = fields(f.msg, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == fManifestBasePaths && typ == protowire.BytesType:
			var id uint32 // absent: 0, which prost leaves out
			err := fields(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
				if num == fBasePathID && typ == protowire.VarintType {
					id = uint32(n)
				}
				return nil
			})
			baseID = max(baseID, id+1)
			return err
		case num == fManifestReaderFlags && typ == protowire.VarintType:
			flags[0] = n
		case num == fManifestWriterFlags && typ == protowire.VarintType:
			flags[1] = n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	base := varintField(fBasePathID, uint64(baseID))
	if baseID == 0 {
		base = nil // prost leaves a zero out
	}
	if c.RefName != "" {
		base = append(base, bytesField(fBasePathName, []byte(c.RefName))...)
	}
	base = append(base, varintField(fBasePathIsRoot, 1)...)
	base = append(base, bytesField(fBasePathPath, []byte(c.RefPath))...)
	baseField := bytesField(fManifestBasePaths, base)

	var index []byte
	if f.index != nil {
		if index, err = withBaseID(f.index, fIndexSectionItem, fIndexBaseID, baseID); err != nil {
			return nil, fmt.Errorf("the index section: %w", err)
		}
	}
	var werr error
	file := assemble(index, c.Txn, f.format, func(indexAt, txnAt uint64, hasIndex bool) []byte {
		set := map[protowire.Number][]byte{
			fManifestTimestamp:          timestampField(fManifestTimestamp, c.Now),
			fManifestReaderFlags:        varintField(fManifestReaderFlags, flags[0]|flagBasePaths),
			fManifestWriterFlags:        varintField(fManifestWriterFlags, flags[1]|flagBasePaths),
			fManifestTransactionFile:    bytesField(fManifestTransactionFile, []byte(c.TxnFile)),
			fManifestTransactionSection: varintField(fManifestTransactionSection, txnAt),
			fManifestBranch:             bytesField(fManifestBranch, []byte(c.Branch)),
		}
		if hasIndex {
			set[fManifestIndexSection] = varintField(fManifestIndexSection, indexAt)
		}
		out, err := replaceFields(f.msg, set, func(num protowire.Number, typ protowire.Type, v []byte) ([]byte, bool, error) {
			switch {
			case num == fManifestFragments && typ == protowire.BytesType:
				frag, err := rebaseFragment(v, baseID)
				if err != nil {
					return nil, false, err
				}
				return bytesField(num, frag), true, nil
			case num == fManifestTag: // the clone has no tag
				return nil, true, nil
			}
			return nil, false, nil
		})
		if err != nil {
			werr = err
			return nil
		}
		// The new base goes after the source's own.
		return insertInOrder(out, fManifestBasePaths, baseField)
	})
	if werr != nil {
		return nil, werr
	}
	return file, nil
}

// rebaseFragment gives every data file and the deletion file of a
// fragment that names no base the base id.
func rebaseFragment(frag []byte, id uint32) ([]byte, error) {
	return edit(frag, func(num protowire.Number, typ protowire.Type, raw, v []byte) ([]byte, error) {
		if typ != protowire.BytesType {
			return raw, nil
		}
		var field protowire.Number
		switch num {
		case fFragmentFiles:
			field = fDataFileBaseID
		case fFragmentDeletion:
			field = fDeletionBaseID
		default:
			return raw, nil
		}
		sub, err := setIfAbsent(v, field, uint64(id))
		if err != nil {
			return nil, err
		}
		return bytesField(num, sub), nil
	})
}

// withBaseID sets the base id of every item (field item) of a message
// that names none.
func withBaseID(msg []byte, item, field protowire.Number, id uint32) ([]byte, error) {
	return edit(msg, func(num protowire.Number, typ protowire.Type, raw, v []byte) ([]byte, error) {
		if num != item || typ != protowire.BytesType {
			return raw, nil
		}
		sub, err := setIfAbsent(v, field, uint64(id))
		if err != nil {
			return nil, err
		}
		return bytesField(num, sub), nil
	})
}

// setIfAbsent appends varint field num = v to msg unless msg has it.
func setIfAbsent(msg []byte, num protowire.Number, v uint64) ([]byte, error) {
	has := false
	if err := fields(msg, func(n protowire.Number, _ protowire.Type, _ []byte, _ uint64) error {
		has = has || n == num
		return nil
	}); err != nil {
		return nil, err
	}
	if has {
		return msg, nil
	}
	return append(append([]byte{}, msg...), varintField(num, v)...), nil
}

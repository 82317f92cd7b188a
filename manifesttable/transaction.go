package manifesttable

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/objstore"
)

// Which operation a version's Lance transaction was. Lance writes a
// version's transaction into its manifest file (the transaction section,
// manifest field 21, a framed message like the manifest itself) and, on
// older versions only, into a file under the dataset's _transactions/
// that the manifest names (field 12). The operation is the Transaction
// message's oneof (lance-format/lance protos/transaction.proto: fields
// 100 to 114); nothing else of it is read.

// The operations, named as transaction.proto names their oneof fields.
const (
	OpAppend  = "append"
	OpDelete  = "delete"
	OpRewrite = "rewrite" // a compaction (Dataset::compact_files)
	OpRestore = "restore"
	OpClone   = "clone"
)

// operations are transaction.proto's `oneof operation` by field number.
var operations = map[protowire.Number]string{
	100: OpAppend, 101: OpDelete, 102: "overwrite", 103: "create_index", 104: OpRewrite, 105: "merge",
	106: OpRestore, 107: "reserve_fragments", 108: "update", 109: "project", 110: "update_config",
	111: "data_replacement", 112: "update_mem_wal_state", 113: OpClone, 114: "update_bases",
}

// The manifest's fields that locate its transaction (protos/table.proto).
const (
	fieldTransactionFile    protowire.Number = 12
	fieldTransactionSection protowire.Number = 21
)

// maxTransactionFile bounds the transaction file read for a manifest
// without a transaction section: a compaction's lists every fragment it
// replaced, and the operation is not worth more.
const maxTransactionFile = 16 << 20

// errNoTransaction: the manifest neither holds nor names its
// transaction.
var errNoTransaction = errors.New("the manifest holds no transaction")

// internOperation returns the package's copy of a known operation's
// name, so that the index holds one string per operation, not one per
// version; "" for an unknown one.
func internOperation(op string) string {
	for _, name := range operations {
		if name == op {
			return name
		}
	}
	return ""
}

// manifestTransaction finds a manifest file's transaction: its inline
// section (nil when it has none) and the name of its transaction file
// ("" when it names none).
func manifestTransaction(b []byte) (section []byte, file string, err error) {
	const footer = 16 // manifest position (u64), format version, "LANC"
	if len(b) < footer || string(b[len(b)-4:]) != "LANC" {
		return nil, "", errors.New("no LANC footer")
	}
	body := b[:len(b)-footer]
	msg, err := framedAt(body, binary.LittleEndian.Uint64(b[len(b)-footer:]))
	if err != nil {
		return nil, "", fmt.Errorf("the manifest message: %w", err)
	}
	at, hasSection := uint64(0), false
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, "", protowire.ParseError(n)
		}
		msg = msg[n:]
		switch {
		case num == fieldTransactionSection && typ == protowire.VarintType:
			at, n = protowire.ConsumeVarint(msg)
			hasSection = n >= 0
		case num == fieldTransactionFile && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(msg)
			file = string(v)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return nil, "", protowire.ParseError(n)
		}
		msg = msg[n:]
	}
	if hasSection {
		if section, err = framedAt(body, at); err != nil {
			return nil, "", fmt.Errorf("the transaction section: %w", err)
		}
	}
	return section, file, nil
}

// framedAt is the message at pos in b: a little-endian uint32 length,
// then that many bytes.
func framedAt(b []byte, pos uint64) ([]byte, error) {
	if pos > uint64(len(b)) || uint64(len(b))-pos < 4 {
		return nil, fmt.Errorf("position %d is outside the file's %d bytes", pos, len(b))
	}
	n := uint64(binary.LittleEndian.Uint32(b[pos:]))
	if uint64(len(b))-pos-4 < n {
		return nil, fmt.Errorf("a %d-byte message at %d runs past the file's end", n, pos)
	}
	return b[pos+4 : pos+4+n], nil
}

// transactionOperation is the operation of a Transaction message ("" for
// one this version does not know, or none).
func transactionOperation(msg []byte) (string, error) {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		msg = msg[n:]
		if op, ok := operations[num]; ok && typ == protowire.BytesType {
			return op, nil
		}
		if n = protowire.ConsumeFieldValue(num, typ, msg); n < 0 {
			return "", protowire.ParseError(n)
		}
		msg = msg[n:]
	}
	return "", nil
}

// inlineOperation is the operation of the transaction a manifest file
// holds; file names its transaction file when it holds none.
func inlineOperation(b []byte) (op, file string, err error) {
	section, file, err := manifestTransaction(b)
	if err != nil || section == nil {
		return "", file, err
	}
	op, err = transactionOperation(section)
	return op, file, err
}

// readOperation is the operation of the transaction of the manifest at
// key, whose bytes are b: from its section, else from the transaction
// file it names (in the dataset's _transactions/, read when it is at
// most maxTransactionFile bytes).
func readOperation(ctx context.Context, objs *objstore.Store, key string, b []byte) (string, error) {
	op, file, err := inlineOperation(b)
	if err != nil || op != "" {
		return op, err
	}
	if file == "" {
		return "", errNoTransaction
	}
	if file != path.Base(file) || file == "." || file == ".." {
		return "", fmt.Errorf("transaction file %q is not a file name", file)
	}
	dataset := path.Dir(path.Dir(key)) // <dataset>/_versions/<manifest>
	txnKey := lancemanifest.Dir(dataset).Transactions() + file
	if err := objstore.ValidateKey(txnKey); err != nil {
		return "", err
	}
	a, err := objs.Head(ctx, txnKey)
	if err != nil {
		return "", err
	}
	if a.Size > maxTransactionFile {
		return "", fmt.Errorf("transaction file %s has %d bytes, more than the %d read for its operation", txnKey, a.Size, maxTransactionFile)
	}
	txn, err := objs.Get(ctx, txnKey)
	if err != nil {
		return "", err
	}
	return transactionOperation(txn)
}

package lancemanifest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoredIsWhatLanceWrites: restoring version 1 of a table whose
// latest is 2, with the time and transaction Lance used, gives Lance's
// own version 3 byte for byte, and the transaction Lance's .txn file.
func TestRestoredIsWhatLanceWrites(t *testing.T) {
	const uuid = "c62df044-604e-400a-bffb-09095ad87b22"
	v1, v2, want := readTestdata(t, "lance12/restore-v1.manifest"), readTestdata(t, "lance12/restore-v2.manifest"), readTestdata(t, "lance12/restore-v3.manifest")
	txn := RestoreTransaction(2, uuid, 1)
	if wantTxn := readTestdata(t, "lance12/restore-2-"+uuid+".txn"); !bytes.Equal(txn, wantTxn) {
		t.Fatalf("the transaction is\n%x\nLance's is\n%x", txn, wantTxn)
	}
	lance, err := Read(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Restored(v1, v2, 3, lance.Timestamp, txn, TransactionFile(2, uuid))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("restored manifest differs from Lance's:\n got %x\nwant %x", got, want)
	}
}

// TestClonedIsWhatLanceWrites: a branch from main's version 2 is Lance's
// own first manifest of the branch, byte for byte.
func TestClonedIsWhatLanceWrites(t *testing.T) {
	const uuid = "a63d6bd7-d01e-49c9-8140-5f775c74dc81"
	const refPath = "file:///tmp/exp/fdata/root/fb63f077_items"
	src, want := readTestdata(t, "lance12/clone-main-v2.manifest"), readTestdata(t, "lance12/clone-dev-v2.manifest")
	txn := CloneTransaction(2, uuid, "", refPath, "dev")
	if wantTxn := readTestdata(t, "lance12/clone-2-"+uuid+".txn"); !bytes.Equal(txn, wantTxn) {
		t.Fatalf("the transaction is\n%x\nLance's is\n%x", txn, wantTxn)
	}
	lance, err := Read(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Cloned(src, Clone{Branch: "dev", RefPath: refPath, Now: lance.Timestamp, Txn: txn, TxnFile: TransactionFile(2, uuid)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("cloned manifest differs from Lance's:\n got %x\nwant %x", got, want)
	}
}

// TestWritersKeepIndicesAndDeletions: on a manifest with a deletion file
// and an index (the fixture's v4), a restore keeps both, and a clone
// keeps both and names the new base from every file; what they write
// reads back.
func TestWritersKeepIndicesAndDeletions(t *testing.T) {
	v4 := readTestdata(t, "v4.manifest")
	src, err := Read(v4)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1800000000, 5).UTC()
	r, err := Restored(v4, v4, 9, now, RestoreTransaction(8, "u", 4), "8-u.txn")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Read(r)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != 9 || !m.Timestamp.Equal(now) || m.Indices != src.Indices || m.Indices == 0 || m.Rows() != src.Rows() || m.DeletedRows() == 0 {
		t.Fatalf("restored: %+v, from %+v", m, src)
	}
	c, err := Cloned(v4, Clone{Branch: "team/x", RefName: "dev", RefPath: "s3://b/t/tree/dev", Now: now, Txn: CloneTransaction(4, "u", "dev", "s3://b/t/tree/dev", "team/x"), TxnFile: "4-u.txn"})
	if err != nil {
		t.Fatal(err)
	}
	m, err = Read(c)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != src.Version || m.Branch != "team/x" || m.Indices != src.Indices || m.Rows() != src.Rows() || m.DeletedRows() != src.DeletedRows() {
		t.Fatalf("cloned: %+v, from %+v", m, src)
	}
	f, err := split(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(f.msg, []byte("s3://b/t/tree/dev")) || f.index == nil {
		t.Fatalf("the clone names no base at its source, or lost its index section")
	}
	// No file of the source named a base: each data file and the
	// deletion file now names the new one.
	if n, err := baseIDs(f.msg); err != nil || n != len(src.Fragments)+1 { // + the deletion file
		t.Fatalf("%d files name a base (%v), want %d", n, err, len(src.Fragments)+1)
	}
}

// TestWritersRefuseWhatIsNotAManifest: bad input is an error, never a
// panic.
func TestWritersRefuseWhatIsNotAManifest(t *testing.T) {
	good := readTestdata(t, "v1.manifest")
	for _, b := range [][]byte{nil, []byte("LANC"), good[:len(good)-1], append([]byte{1, 2, 3}, good[:20]...)} {
		if _, err := Restored(b, good, 2, time.Now(), nil, "x"); err == nil {
			t.Errorf("Restored(%x) succeeded", b)
		}
		if _, err := Restored(good, b, 2, time.Now(), nil, "x"); err == nil {
			t.Errorf("Restored with latest %x succeeded", b)
		}
		if _, err := Cloned(b, Clone{}); err == nil {
			t.Errorf("Cloned(%x) succeeded", b)
		}
	}
}

// baseIDs counts the data and deletion files of a manifest message that
// name a base.
func baseIDs(msg []byte) (int, error) {
	n := 0
	err := fields(msg, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != fManifestFragments || typ != protowire.BytesType {
			return nil
		}
		return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			if (num == fFragmentFiles || num == fFragmentDeletion) && typ == protowire.BytesType {
				return fields(v, func(num protowire.Number, _ protowire.Type, _ []byte, _ uint64) error {
					if num == fDataFileBaseID {
						n++
					}
					return nil
				})
			}
			return nil
		})
	})
	return n, err
}

// TestCloneOfABranchAddsTheNextBase: a branch of a branch adds a base
// after the source's own (whose first, id 0, prost writes without its
// id), names it with the source branch, and gives it to the source's own
// files only, as Lance's clone of tree/dev does.
func TestCloneOfABranchAddsTheNextBase(t *testing.T) {
	dev, err := Cloned(readTestdata(t, "lance12/clone-main-v2.manifest"), Clone{Branch: "dev", RefPath: "file:///t", Now: time.Unix(1, 0), Txn: []byte{}, TxnFile: "x"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := Cloned(dev, Clone{Branch: "team/sub", RefName: "dev", RefPath: "file:///t/tree/dev", Now: time.Unix(2, 0), Txn: []byte{}, TxnFile: "y"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := split(sub)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	if err := fields(f.msg, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num == fManifestBasePaths {
			id := uint64(0)
			_ = fields(v, func(num protowire.Number, _ protowire.Type, _ []byte, n uint64) error {
				if num == fBasePathID {
					id = n
				}
				return nil
			})
			ids = append(ids, id)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != 0 || ids[1] != 1 {
		t.Fatalf("base path ids %v, want [0 1]", ids)
	}
	if !bytes.Contains(f.msg, []byte("file:///t/tree/dev")) || !bytes.Contains(f.msg, []byte("\x12\x03dev")) {
		t.Fatalf("the new base does not name dev at its path")
	}
}

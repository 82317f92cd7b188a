package manifesttable

import (
	"os"
	"path/filepath"
	"testing"
)

// A manifest's transaction is read from files anyone with write access to
// the table's directory may have written: hostile bytes never panic, and
// an operation read is one of Lance's names or "".
func FuzzTransactionOperation(f *testing.F) {
	for _, name := range []string{"v12.manifest", "v15.manifest", "13-1ea56ab4-df2e-4482-bcb2-bb1dd34e57ec.txn"} {
		b, err := os.ReadFile(filepath.Join("testdata", "compaction", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte("LANC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		op, _, err := inlineOperation(b)
		if err == nil && op != "" && internOperation(op) != op {
			t.Fatalf("operation %q is not one of Lance's", op)
		}
		if op, err := transactionOperation(b); err == nil && op != "" && internOperation(op) != op {
			t.Fatalf("operation %q is not one of Lance's", op)
		}
	})
}

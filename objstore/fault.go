package objstore

import (
	"context"
	"io/fs"
	"syscall"
)

// DiskFull is a fault hook (for WithFaults) that fails every write — Put,
// PutIfAbsent, CopyIfAbsent and PromoteIfAbsent — with ENOSPC before it
// touches storage while full reports true, as a full local disk does.
// Reads, listings and deletes still work, as they do on a full disk.
func DiskFull(full func() bool) FaultFunc {
	return func(_ context.Context, op Op, key string, phase Phase) error {
		if phase != Before || !full() {
			return nil
		}
		switch op {
		case OpPut, OpPutIfAbsent, OpCopyIfAbsent:
			return &fs.PathError{Op: "write", Path: key, Err: syscall.ENOSPC}
		}
		return nil
	}
}

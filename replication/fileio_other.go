//go:build !linux

package replication

// Where the Linux calls of fileio_linux.go are missing: fsync instead of
// fdatasync, and snapshots through the page cache, unpaced.

import (
	"errors"
	"os"
)

// datasync flushes f (fsync where fdatasync is not available).
func datasync(f *os.File) error { return f.Sync() }

// writeBack is not available here: snapshots reach the disk at their
// final fsync.
func writeBack(*os.File, int64, int64, int64) error {
	return errors.New("paced writeback is not supported on this system")
}

// openDirect is not available here: snapshots are written through the
// page cache.
func openDirect(string) (*os.File, error) {
	return nil, errors.New("O_DIRECT is not supported on this system")
}

// clearDirect has nothing to clear here.
func clearDirect(*os.File) error { return nil }

// adviseSequential has no counterpart here.
func adviseSequential(*os.File) {}

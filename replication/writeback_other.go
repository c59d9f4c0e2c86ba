//go:build !linux

package replication

import (
	"errors"
	"os"
)

// writeBack is not available here: snapshots reach the disk at their
// final fsync.
func writeBack(*os.File, int64, int64, int64) error {
	return errors.New("paced writeback is not supported on this system")
}

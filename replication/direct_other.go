//go:build !linux

package replication

import (
	"errors"
	"os"
)

// openDirect is not available here: snapshots are written through the
// page cache.
func openDirect(string) (*os.File, error) {
	return nil, errors.New("O_DIRECT is not supported on this system")
}

// clearDirect has nothing to clear here.
func clearDirect(*os.File) error { return nil }

// adviseSequential has no counterpart here.
func adviseSequential(*os.File) {}

package replication

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeBack waits until the bytes [prev, start) of f are on the disk and
// starts writing [start, end) to it (sync_file_range; neither the file's
// metadata nor the disk's cache is flushed).
func writeBack(f *os.File, prev, start, end int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if start > prev {
			serr = unix.SyncFileRange(int(fd), prev, start-prev,
				unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		}
		if serr == nil && end > start {
			serr = unix.SyncFileRange(int(fd), start, end-start, unix.SYNC_FILE_RANGE_WRITE)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

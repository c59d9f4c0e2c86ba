package replication

// Linux file system calls for the log and snapshot files: fdatasync,
// paced writeback (sync_file_range), O_DIRECT and read-ahead advice.

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// withFD runs fn on f's descriptor and returns fn's error, or the error of
// reaching the descriptor.
func withFD(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// datasync flushes f's data and the metadata needed to read it back.
func datasync(f *os.File) error {
	err := withFD(f, func(fd int) error {
		for {
			if err := unix.Fdatasync(fd); err != unix.EINTR {
				return err
			}
		}
	})
	if err != nil {
		return fmt.Errorf("replication: fdatasync %s: %w", f.Name(), err)
	}
	return nil
}

// writeBack waits until the bytes [prev, start) of f are on the disk and
// starts writing [start, end) to it (sync_file_range; neither the file's
// metadata nor the disk's cache is flushed).
func writeBack(f *os.File, prev, start, end int64) error {
	return withFD(f, func(fd int) error {
		if start > prev {
			err := unix.SyncFileRange(fd, prev, start-prev,
				unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
			if err != nil {
				return err
			}
		}
		if end > start {
			return unix.SyncFileRange(fd, start, end-start, unix.SYNC_FILE_RANGE_WRITE)
		}
		return nil
	})
}

// openDirect creates path for writing with O_DIRECT, with os.Create's
// permissions: its writes go from the caller's buffer to the disk without
// a copy into the page cache. It fails (EINVAL) where the file system
// refuses O_DIRECT (tmpfs on older kernels, some FUSE file systems).
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|unix.O_DIRECT, 0o666)
}

// clearDirect turns O_DIRECT off on f, so that it accepts writes of any
// size and alignment.
func clearDirect(f *os.File) error {
	return withFD(f, func(fd int) error {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return err
		}
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&^unix.O_DIRECT)
		return err
	})
}

// adviseSequential tells the kernel that f will be read from start to end,
// which doubles its read-ahead: a snapshot written with O_DIRECT is not in
// the page cache when it is read back. Only a hint; errors are ignored.
func adviseSequential(f *os.File) {
	_ = withFD(f, func(fd int) error { return unix.Fadvise(fd, 0, 0, unix.FADV_SEQUENTIAL) })
}

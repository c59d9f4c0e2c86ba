package replication

import (
	"os"

	"golang.org/x/sys/unix"
)

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
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil {
			serr = err
			return
		}
		_, serr = unix.FcntlInt(fd, unix.F_SETFL, flags&^unix.O_DIRECT)
	})
	if err != nil {
		return err
	}
	return serr
}

// adviseSequential tells the kernel that f will be read from start to end,
// which doubles its read-ahead: a snapshot written with O_DIRECT is not in
// the page cache when it is read back. Only a hint; errors are ignored.
func adviseSequential(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = unix.Fadvise(int(fd), 0, 0, unix.FADV_SEQUENTIAL)
		})
	}
}

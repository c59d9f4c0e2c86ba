package replication

import (
	"fmt"
	"os"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back.
func datasync(f *os.File) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("replication: fdatasync %s: %w", f.Name(), err)
	}
	var serr error
	if err := conn.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("replication: fdatasync %s: %w", f.Name(), err)
	}
	if serr != nil {
		return fmt.Errorf("replication: fdatasync %s: %w", f.Name(), serr)
	}
	return nil
}

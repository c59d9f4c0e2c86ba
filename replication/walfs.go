package replication

import (
	"github.com/hashicorp/raft-wal/types"
)

// noSyncFS is the WAL's file system with fsync turned off, for
// forceSync=no: writes reach the page cache only, as ZooKeeper's log does
// with forceSync=no. Everything else is the wrapped file system's.
type noSyncFS struct{ types.VFS }

func (f noSyncFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return noSyncFile{w}, nil
}

func (f noSyncFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return noSyncFile{w}, nil
}

// noSyncFile is a segment file whose Sync does nothing.
type noSyncFile struct{ types.WritableFile }

func (noSyncFile) Sync() error { return nil }

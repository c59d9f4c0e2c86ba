package replication

// Crash-stop on a failed write of the log.
//
// After a write or fsync of the log fails, the member cannot know what
// reached the disk: Linux may already have dropped the dirty pages whose
// writeback failed, so a later fsync of the same file can succeed with the
// data gone ("fsyncgate"); and raft-wal's segment writer has already
// recorded the failed entries in memory, so every later append is refused
// as non-monotonic. Neither retrying nor going on is safe. So the first
// failure is logged, naming the file and the fault, and the member is
// stopped through Config.Fatal (by default: the process exits with status
// 1), as ZooKeeper's log thread stops its server on an IOException. From
// then on every write of the log fails, so a member whose Fatal does not
// exit (tests) acknowledges and applies nothing more. A full disk is one of
// these faults: the member stops, and on restart, with space again, it
// recovers from what its log holds, like any restart after a crash.
//
// The faults are observed where the files are written: the WAL's segment
// files (crashStopFS, which names the segment) and its metadata
// (crashStopMeta); raft-boltdb's appends and deletions (crashStopLogs),
// whose file bbolt writes; and the stable store of either
// (crashStopStable).

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/types"
)

// DiskFaultError describes the failed write of the log that stopped the
// member: the file, the operation and the error of the file system.
type DiskFaultError struct {
	File string // the file's path
	Op   string // what failed: "write", "fsync", "create", "commit"
	Err  error
}

func (e *DiskFaultError) Error() string {
	return fmt.Sprintf("replication: %s of %s failed: %v; the member stops and must not continue after a failed log write",
		e.Op, e.File, e.Err)
}

func (e *DiskFaultError) Unwrap() error { return e.Err }

// exitOnDiskFault is the default Config.Fatal: the fault is logged by
// then, and the process exits with a non-zero status.
func exitOnDiskFault(error) { os.Exit(1) }

// diskFaults stops a member at its first disk fault. first is guarded by
// mu; once makes sure fatal runs once.
type diskFaults struct {
	log   *slog.Logger
	fatal func(error)

	once  sync.Once
	mu    sync.Mutex
	first error
}

func newDiskFaults(log *slog.Logger, fatal func(error)) *diskFaults {
	if fatal == nil {
		fatal = exitOnDiskFault
	}
	return &diskFaults{log: log, fatal: fatal}
}

// fault records that op on file failed with err, and stops the member if
// this is the first fault. It returns the first fault.
func (d *diskFaults) fault(file, op string, err error) error {
	d.once.Do(func() {
		ferr := &DiskFaultError{File: file, Op: op, Err: err}
		d.mu.Lock()
		d.first = ferr
		d.mu.Unlock()
		d.log.Error("log write failed: stopping this member", "file", file, "op", op, "err", err)
		d.fatal(ferr)
	})
	return d.failed()
}

// failed returns the first fault, nil when there was none.
func (d *diskFaults) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first
}

// crashStopFS is the WAL's file system with every failed write, fsync or
// segment creation reported to faults, and every one after it refused.
type crashStopFS struct {
	types.VFS
	faults *diskFaults
}

func (f crashStopFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	if err := f.faults.failed(); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		return nil, f.faults.fault(path, "create", err)
	}
	return &crashStopFile{WritableFile: w, path: path, faults: f.faults}, nil
}

// OpenWriter reopens the tail segment when the WAL opens; a failure there
// fails the open, which reports it.
func (f crashStopFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return &crashStopFile{WritableFile: w, path: filepath.Join(dir, name), faults: f.faults}, nil
}

// crashStopFile is a segment file of crashStopFS.
type crashStopFile struct {
	types.WritableFile
	path   string
	faults *diskFaults
}

func (f *crashStopFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.faults.failed(); err != nil {
		return 0, err
	}
	n, err := f.WritableFile.WriteAt(p, off)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(p)) {
		return n, f.faults.fault(f.path, "write", err)
	}
	return n, err
}

func (f *crashStopFile) Sync() error {
	if err := f.faults.failed(); err != nil {
		return err
	}
	if err := f.WritableFile.Sync(); err != nil {
		return f.faults.fault(f.path, "fsync", err)
	}
	return nil
}

// crashStopMeta is the WAL's metadata store with a failed commit reported
// to faults.
type crashStopMeta struct {
	types.MetaStore
	path   string
	faults *diskFaults
}

func (m crashStopMeta) CommitState(st types.PersistentState) error {
	if err := m.faults.failed(); err != nil {
		return err
	}
	if err := m.MetaStore.CommitState(st); err != nil {
		return m.faults.fault(m.path, "commit", err)
	}
	return nil
}

// crashStopStable is raft's stable store (current term, vote) with a
// failed write reported to faults. raft panics on such a failure anyway;
// this makes the member stop with the file named first.
type crashStopStable struct {
	raft.StableStore
	path   string
	faults *diskFaults
}

func (s crashStopStable) Set(key, val []byte) error {
	if err := s.StableStore.Set(key, val); err != nil {
		return s.faults.fault(s.path, "commit", err)
	}
	return nil
}

func (s crashStopStable) SetUint64(key []byte, val uint64) error {
	if err := s.StableStore.SetUint64(key, val); err != nil {
		return s.faults.fault(s.path, "commit", err)
	}
	return nil
}

// crashStopLogs is raft-boltdb's log store with every failed append or
// deletion (a failed bbolt commit) reported to faults, and every one after
// the first fault refused.
type crashStopLogs struct {
	raft.LogStore
	path   string
	faults *diskFaults
}

func (l crashStopLogs) StoreLog(log *raft.Log) error {
	return l.StoreLogs([]*raft.Log{log})
}

func (l crashStopLogs) StoreLogs(logs []*raft.Log) error {
	if err := l.faults.failed(); err != nil {
		return err
	}
	if err := l.LogStore.StoreLogs(logs); err != nil {
		return l.faults.fault(l.path, "write", err)
	}
	return nil
}

func (l crashStopLogs) DeleteRange(min, max uint64) error {
	if err := l.faults.failed(); err != nil {
		return err
	}
	if err := l.LogStore.DeleteRange(min, max); err != nil {
		return l.faults.fault(l.path, "write", err)
	}
	return nil
}

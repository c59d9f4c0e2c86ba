package replication

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
)

// wrapFS is a file system whose writable files are the wrapped file
// system's, each wrapped by wrap. Everything else is the wrapped file
// system's.
type wrapFS struct {
	types.VFS
	wrap func(types.WritableFile) types.WritableFile
}

func (f wrapFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return f.wrap(w), nil
}

func (f wrapFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return f.wrap(w), nil
}

// syncAtOpenFS syncs a segment when it is reopened. That happens when the
// WAL opens, and the tail segment may hold entries that a killed process
// wrote and never synced (it died between the write and the fsync of an
// append): they are synced now, so that the log a member starts with, and
// votes and acknowledges with, is on disk.
type syncAtOpenFS struct{ types.VFS }

func (f syncAtOpenFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return nil, fmt.Errorf("replication: sync %s on open: %w", name, err)
	}
	return w, nil
}

// noSyncFS is the WAL's file system with fsync turned off, for
// forceSync=no: writes reach the page cache only, as ZooKeeper's log does
// with forceSync=no.
func noSyncFS(vfs types.VFS) types.VFS {
	return wrapFS{vfs, func(w types.WritableFile) types.WritableFile { return noSyncFile{w} }}
}

// noSyncFile is a segment file whose Sync does nothing.
type noSyncFile struct{ types.WritableFile }

func (noSyncFile) Sync() error { return nil }

// zeroChunk is how far ahead of the last write zeroFS zeroes a segment.
const zeroChunk = 256 << 10

// zeroFS is the WAL's file system for forceSync=yes. raft-wal preallocates
// a segment with fallocate, which leaves its blocks "unwritten": the first
// write into each block then makes the next fsync commit the file system's
// journal as well as the data, and so does every mtime change. zeroFS
// writes zeros a chunk ahead of the log's writes, so that one journal
// commit covers a chunk's worth of entries, and syncs with fdatasync after
// the file's first sync (which also syncs its directory), as ZooKeeper's
// log does (what it bought: docs/dev/perf-journal.md, "Replication
// constants").
// Its files' fsyncs are timed by syncs (nil: not timed).
type zeroFS struct {
	types.VFS
	syncs *logSyncs
}

func (f zeroFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return &zeroFile{WritableFile: w, size: int64(size), name: name, syncs: f.syncs}, nil
}

// OpenWriter reopens the tail segment. How far it was zeroed is not known,
// so zeroing starts at the first write, which raft-wal places after the
// last entry it recovered.
func (f zeroFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	z := &zeroFile{WritableFile: w, zeroed: -1, name: name, syncs: f.syncs}
	if st, ok := w.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil {
			z.size = fi.Size()
		}
	}
	return z, nil
}

// zeroFile is a segment that zeroFS zeroes ahead of its writes. raft-wal
// writes a segment at increasing offsets from one goroutine at a time, so
// nothing is ever written at or past zeroed before zeroFile zeroes it;
// zeroed (-1 until the first write of a reopened file) and zeros are only
// touched by WriteAt. synced is set by the first Sync.
type zeroFile struct {
	types.WritableFile
	name   string
	syncs  *logSyncs
	size   int64
	zeroed int64
	zeros  []byte // zeroChunk zero bytes, allocated by the first zeroing
	synced atomic.Bool
}

func (f *zeroFile) WriteAt(p []byte, off int64) (int, error) {
	if f.zeroed < 0 {
		f.zeroed = off
	}
	if end := off + int64(len(p)); end > f.zeroed && f.zeroed < f.size {
		if f.zeros == nil {
			f.zeros = make([]byte, zeroChunk)
		}
		to := min(f.size, end+zeroChunk)
		for f.zeroed < to {
			n := min(to-f.zeroed, zeroChunk)
			if _, err := f.WritableFile.WriteAt(f.zeros[:n], f.zeroed); err != nil {
				return 0, fmt.Errorf("replication: zero segment ahead: %w", err)
			}
			f.zeroed += n
		}
	}
	return f.WritableFile.WriteAt(p, off)
}

// Sync makes the file's data durable. The first sync is the wrapped file's
// own (raft-wal's also syncs the directory of a new file); later ones only
// need the data and the metadata that reads depend on, which fdatasync
// covers. Files that are not raft-wal's (tests inject their own) keep
// their own Sync. Every sync is timed (logsyncs.go).
func (f *zeroFile) Sync() error {
	return f.syncs.timed(f.name, f.sync)
}

func (f *zeroFile) sync() error {
	file, ok := f.WritableFile.(*walfs.File)
	if !ok || !f.synced.Load() {
		if err := f.WritableFile.Sync(); err != nil {
			return err
		}
		f.synced.Store(true)
		return nil
	}
	return datasync(&file.File)
}

// segmentDeleter is the WAL's file system with Delete moved to a goroutine
// of its own: each old segment file is shrunk (shrinkFile) and then deleted
// by the wrapped file system. raft-wal deletes the segments a
// compaction freed while it still holds its write lock (the old state's
// finalizer runs when DeleteRange releases it, before the lock), and
// removing a written 64 MiB segment and syncing its directory took 16-28 ms
// on the benchmark disk: every append waited, once or twice per snapshot,
// and that was the p99.9 of a standalone 1 KiB set run. Deleting later is
// safe: a segment's file name carries its ID, which only grows, so a name
// is never reused; and raft-wal deletes, when it opens, any segment file its
// metadata does not list, so a file a crash left behind goes then. Its
// fields are guarded by mu.
type segmentDeleter struct {
	types.VFS // the file system that deletes
	log       *slog.Logger

	mu      sync.Mutex
	queue   []walFile // still to delete
	running bool      // a goroutine is draining queue
	done    sync.WaitGroup
}

// walFile names a file of the WAL as its file system does.
type walFile struct{ dir, name string }

// Delete queues dir/name and starts a goroutine to delete it if none runs.
func (d *segmentDeleter) Delete(dir, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.queue = append(d.queue, walFile{dir, name})
	if !d.running {
		d.running = true
		d.done.Add(1)
		go d.drain()
	}
	return nil
}

// drain deletes queued files until none is left.
func (d *segmentDeleter) drain() {
	defer d.done.Done()
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.running = false
			d.mu.Unlock()
			return
		}
		f := d.queue[0]
		d.queue = d.queue[1:]
		d.mu.Unlock()
		if err := shrinkFile(filepath.Join(f.dir, f.name)); err != nil && !os.IsNotExist(err) {
			d.log.Debug("shrink old log segment", "dir", f.dir, "name", f.name, "err", err)
		}
		if err := d.VFS.Delete(f.dir, f.name); err != nil && !os.IsNotExist(err) {
			d.log.Warn("delete old log segment", "dir", f.dir, "name", f.name, "err", err)
		}
	}
}

// wait returns once every queued file is deleted.
func (d *segmentDeleter) wait() error {
	d.done.Wait()
	return nil
}

// shrinkStep is how much shrinkFile frees at a time.
const shrinkStep = 1 << 20

// shrinkFile truncates the file at path to nothing, shrinkStep at a time,
// before it is removed. Freeing a large file's blocks in one go is one long
// file-system journal transaction (longer still where the file system
// discards freed blocks, as ext4 mounted with -o discard does), and every
// fsync of the log waits for it: unlinking two 64 MiB files at once held a
// concurrent writer's fdatasync for 10 ms. Freed a step at a time, the same
// writer's syncs stayed under 0.7 ms, and the two files took 40 ms.
func shrinkFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	for size := fi.Size(); size > 0; {
		size = max(0, size-shrinkStep)
		if err := f.Truncate(size); err != nil {
			return err
		}
	}
	return nil
}

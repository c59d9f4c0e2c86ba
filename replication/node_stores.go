package replication

// The store stack under raft: the snapshot store, the log and stable
// store (raft-wal or raft-boltdb) wrapped in the member's fault handling,
// and closing them.

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"go.etcd.io/bbolt"
)

// openStores opens the snapshot store and the log and stable store in the
// configured directories (or in memory, or with the seams s sets; see
// seams), and checks the log and the snapshots before raft reads them.
func (n *Node) openStores(s seams) (raft.LogStore, raft.StableStore, raft.SnapshotStore, error) {
	if s.memStores {
		store := raft.NewInmemStore()
		return store, store, raft.NewInmemSnapshotStore(), nil
	}
	logDir := filepath.Join(n.cfg.LogDir, "raft")
	snapDir := filepath.Join(n.cfg.DataDir, "raft")
	for _, d := range []string{logDir, snapDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, nil, nil, fmt.Errorf("replication: create %s: %w", d, err)
		}
	}
	snaps, err := newSnapshotStore(snapDir, 2, n.log)
	if err != nil {
		return nil, nil, nil, err
	}
	kind, err := chooseLogStore(n.cfg.LogStore, logDir)
	if err != nil {
		return nil, nil, nil, err
	}
	n.log.Info("raft log store", "kind", kind, "dir", logDir)
	logs, stable, path, err := n.openLogStore(kind, logDir, s.walFS)
	if err != nil {
		return nil, nil, nil, err
	}
	if s.wrapLogStore != nil {
		logs = s.wrapLogStore(logs)
	}
	// The WAL's faults are caught at its files (openWAL), which name the
	// segment; an error of its StoreLogs that is not a disk fault must
	// not stop the member.
	stablePath := path
	if kind == "wal" {
		stablePath = filepath.Join(path, metadb.FileName)
	} else {
		logs = crashStopLogs{LogStore: logs, path: path, faults: n.faults}
	}
	stable = crashStopStable{StableStore: stable, path: stablePath, faults: n.faults}
	var covered uint64
	if list, err := snaps.List(); err == nil && len(list) > 0 {
		covered = list[0].Index
	}
	if err := verifyLog(logs, path, covered); err != nil {
		return nil, nil, nil, err
	}
	if err := snaps.checkAtOpen(logs); err != nil {
		return nil, nil, nil, err
	}
	if s.wrapSnapshotStore != nil {
		return logs, stable, s.wrapSnapshotStore(snaps), nil
	}
	return logs, stable, snaps, nil
}

// openLogStore opens the log and stable store of the kind chooseLogStore
// chose in logDir, and returns the path of the files they live in. vfs is
// raft-wal's file system (nil: the operating system's).
func (n *Node) openLogStore(kind, logDir string, vfs types.VFS) (raft.LogStore, raft.StableStore, string, error) {
	if kind == "wal" {
		walDir := filepath.Join(logDir, "wal")
		if err := os.MkdirAll(walDir, 0o750); err != nil {
			return nil, nil, "", fmt.Errorf("replication: create %s: %w", walDir, err)
		}
		logs, stable, err := n.openWAL(walDir, vfs)
		if err != nil {
			return nil, nil, "", err
		}
		return logs, stable, walDir, nil
	}
	// The freelist is not written on every commit (it is rebuilt on open):
	// with a log that grows and is compacted, syncing it makes every commit
	// slower over time. The map freelist keeps allocation cheap.
	path := filepath.Join(logDir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        path,
		NoSync:      !n.cfg.ForceSync,
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return nil, nil, "", fmt.Errorf("replication: open log store: %w", err)
	}
	n.closers = append(n.closers, store.Close)
	return store, store, path, nil
}

// openWAL opens the raft-wal log store in walDir. With forceSync every
// append is fsynced before StoreLogs returns (raft's contract for a log
// store), on segments that zeroFS (walfs.go) zeroes ahead of the writes,
// and a segment reopened at start is synced first (syncAtOpenFS); without,
// its files are never synced. Either way a failed write, fsync or metadata
// commit stops the member (crashStopFS, crashStopMeta). Its segments go
// through vfs (nil: the operating system's file system), under those layers.
// Each segment file is WALSegmentSize bytes (raft-wal reserves it when
// it creates the segment).
func (n *Node) openWAL(walDir string, vfs types.VFS) (raft.LogStore, raft.StableStore, error) {
	// The WAL does not close its metadata database itself; it is ours
	// to close after the WAL (closers run in reverse order).
	bolt := &metadb.BoltMetaDB{}
	n.closers = append(n.closers, bolt.Close)
	var meta types.MetaStore = crashStopMeta{MetaStore: bolt, path: filepath.Join(walDir, metadb.FileName), faults: n.faults}
	if vfs == nil {
		vfs = walfs.New()
	}
	deleter := &segmentDeleter{VFS: vfs, log: n.log}
	n.closers = append(n.closers, deleter.wait) // after the WAL's Close
	vfs = deleter
	if n.cfg.ForceSync {
		vfs = syncAtOpenFS{crashStopFS{VFS: zeroFS{VFS: vfs, syncs: n.syncs}, faults: n.faults}}
	} else {
		vfs = crashStopFS{VFS: noSyncFS(vfs), faults: n.faults}
	}
	size := n.cfg.WALSegmentSize
	if size <= 0 {
		size = wal.DefaultSegmentSize
	}
	store, err := wal.Open(walDir, wal.WithMetaStore(meta), wal.WithSegmentFiler(segment.NewFiler(walDir, vfs)), wal.WithSegmentSize(size))
	if err != nil {
		return nil, nil, fmt.Errorf("replication: open log store: %w", err)
	}
	n.closers = append(n.closers, store.Close)
	return store, store, nil
}

// chooseLogStore decides which log store to open in logDir. A data
// directory keeps the store it was created with: opening the other one
// would start from an empty log and lose the entries after the last
// snapshot. So an explicit choice that contradicts the directory is an
// error, and no choice means whichever store is there (wal when neither).
func chooseLogStore(configured, logDir string) (string, error) {
	_, boltErr := os.Stat(filepath.Join(logDir, "raft.db"))
	_, walErr := os.Stat(filepath.Join(logDir, "wal"))
	hasBolt, hasWAL := boltErr == nil, walErr == nil
	switch {
	case configured == "" && hasBolt && hasWAL:
		return "", fmt.Errorf("replication: %s holds both a boltdb and a wal log store; set logStore to the one in use", logDir)
	case configured == "" && hasBolt:
		return "boltdb", nil
	case configured == "":
		return "wal", nil
	case configured == "wal" && hasBolt && !hasWAL, configured == "boltdb" && hasWAL && !hasBolt:
		return "", fmt.Errorf("replication: logStore=%s but %s holds the other log store; remove logStore or convert the directory", configured, logDir)
	}
	return configured, nil
}

func (n *Node) closeStores() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		if err := n.closers[i](); err != nil {
			n.log.Warn("close store", "err", err)
		}
	}
	n.closers = nil
}

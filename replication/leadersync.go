package replication

// A leader's fsync in parallel with replication.
//
// hashicorp/raft writes a leader's new entries with StoreLogs and only then
// hands them to its replicators. With a log that fsyncs inside StoreLogs, a
// write therefore waits for the leader's fsync and then for a follower's,
// one after the other. ZooKeeper's leader logs a proposal and sends it to
// the followers at the same time. leaderSync gives us the same overlap on
// the WAL log store (forceSync=yes): while this member leads, the WAL's
// fsyncs are deferred to a syncer goroutine, so StoreLogs returns once the
// entries are written and raft replicates them while they are synced.
//
// Three rules keep the promise that nothing is acknowledged, applied or
// shown to a reader before it is on disk on a quorum:
//
//  1. A follower's appends stay synchronous, so raft counts a follower's
//     match only for entries on that follower's disk. raft counts the
//     leader's own match at once; so a commit index c means c is on disk on
//     at least quorum-1 followers, and written on the leader.
//  2. Every member's FSM applies an entry only once its own log is synced
//     past it (fsm.Apply calls waitSynced). On the leader that is the
//     missing quorum member: its replies and its reads follow the quorum.
//  3. The commit index sent to followers is capped at what the leader has
//     synced (leaderTransport, transport.go), so a follower applies nothing
//     the leader could still lose in a crash of its machine.
//
// A failed deferred fsync stops the member (diskfault.go) and is sticky:
// later appends fail (raft then steps down), and the FSM applies nothing
// more: waitSynced fails as if the syncer were closed (syncFailed), which
// the FSM takes for a member being stopped.

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/types"
)

// leaderSync owns the deferred fsyncs of one WAL log store. Its fields are
// guarded by mu; the syncer goroutine (run) does the fsyncs without it.
type leaderSync struct {
	mu   sync.Mutex
	cond *sync.Cond

	deferring bool        // a leader's StoreLogs is running: file syncs are deferred
	dirty     []*syncFile // files whose sync was deferred and not yet started
	pending   bool        // deferred appends wait for the syncer
	requested uint64      // last index written by a deferred append
	synced    uint64      // every entry up to synced is on disk
	busy      bool        // the syncer is syncing
	closed    bool
	err       error // the first failed fsync

	done chan struct{}
}

var errSyncClosed = errors.New("replication: log syncer closed")

func newLeaderSync() *leaderSync {
	s := &leaderSync{done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	go s.run()
	return s
}

// run is the syncer goroutine: it fsyncs the files written by deferred
// appends, all appends that arrived since the last round in one go.
func (s *leaderSync) run() {
	defer close(s.done)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for !s.pending && !s.closed {
			s.cond.Wait()
		}
		if !s.pending {
			return
		}
		target, files := s.requested, s.dirty
		s.pending, s.dirty, s.busy = false, nil, true
		for _, f := range files {
			f.dirty = false
		}
		s.mu.Unlock()
		err := syncFiles(files)
		s.mu.Lock()
		s.busy = false
		if err != nil {
			s.err = &syncFailed{err}
			s.cond.Broadcast()
			return
		}
		s.synced = target
		s.cond.Broadcast()
	}
}

// syncFailed is the sticky error of a failed deferred fsync. The syncer
// has stopped, so it also counts as errSyncClosed.
type syncFailed struct{ err error }

func (e *syncFailed) Error() string   { return "replication: deferred log fsync: " + e.err.Error() }
func (e *syncFailed) Unwrap() []error { return []error{e.err, errSyncClosed} }

func syncFiles(files []*syncFile) error {
	for _, f := range files {
		if err := f.WritableFile.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// flush waits until no deferred fsync is pending or under way.
func (s *leaderSync) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked()
}

func (s *leaderSync) flushLocked() error {
	for (s.pending || s.busy) && s.err == nil {
		s.cond.Wait()
	}
	return s.err
}

// waitSynced waits until every entry up to index is on this member's disk.
func (s *leaderSync) waitSynced(index uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.synced < index && s.err == nil {
		if s.closed && !s.pending && !s.busy {
			return errSyncClosed
		}
		s.cond.Wait()
	}
	return s.err
}

// syncedIndex returns the last index known to be on disk.
func (s *leaderSync) syncedIndex() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// beginDeferred starts a leader's append: file syncs until endDeferred are
// recorded instead of done.
func (s *leaderSync) beginDeferred() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.deferring = true
	return nil
}

// endDeferred ends a leader's append that wrote entries up to last (0 when
// it failed) and hands its syncs to the syncer.
func (s *leaderSync) endDeferred(last uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deferring = false
	if last > 0 {
		s.requested, s.pending = last, true
		s.cond.Broadcast()
	}
}

// setSynced records that a synchronous append made the log durable up to
// last.
func (s *leaderSync) setSynced(last uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.synced = last
	s.cond.Broadcast()
}

// truncated records that the log's suffix from min on was removed: entries
// at those indexes written later are not covered by an earlier sync.
func (s *leaderSync) truncated(min uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if min > 0 && s.synced >= min {
		s.synced = min - 1
	}
}

// close syncs what is pending and stops the syncer.
func (s *leaderSync) close() error {
	s.mu.Lock()
	err := s.flushLocked()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
	return err
}

// deferSync is called by a file's Sync: true means the sync was recorded
// for the syncer and must not be done now.
func (s *leaderSync) deferSync(f *syncFile) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.deferring {
		return false
	}
	if !f.dirty {
		f.dirty = true
		s.dirty = append(s.dirty, f)
	}
	return true
}

// isDirty reports whether f has a deferred sync that has not started.
func (s *leaderSync) isDirty(f *syncFile) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f.dirty
}

// syncFS is the WAL's file system with leaderSync's deferred fsyncs.
type syncFS struct {
	types.VFS
	sync *leaderSync
}

func (f syncFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return &syncFile{WritableFile: w, sync: f.sync}, nil
}

// OpenWriter opens a segment to append to. That happens when the WAL is
// opened, and the segment may hold entries a killed process wrote and never
// synced: they are synced now, so that the log at open is on disk.
func (f syncFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return nil, fmt.Errorf("replication: sync %s on open: %w", name, err)
	}
	return &syncFile{WritableFile: w, sync: f.sync}, nil
}

// syncFile is a segment file whose Sync is deferred during a leader's
// append. dirty is guarded by sync.mu.
type syncFile struct {
	types.WritableFile
	sync  *leaderSync
	dirty bool
}

func (f *syncFile) Sync() error {
	if f.sync.deferSync(f) {
		return nil
	}
	return f.WritableFile.Sync()
}

// Close syncs a file with a deferred sync before closing it.
func (f *syncFile) Close() error {
	if f.sync.isDirty(f) {
		if err := f.sync.flush(); err != nil {
			f.WritableFile.Close()
			return err
		}
	}
	return f.WritableFile.Close()
}

// syncMeta is the WAL's metadata store behind leaderSync: a metadata commit
// (a sealed segment, a truncation) waits for the deferred fsyncs before it,
// so the metadata never points at log data that is not on disk yet.
type syncMeta struct {
	types.MetaStore
	sync *leaderSync
}

func (m syncMeta) CommitState(st types.PersistentState) error {
	if err := m.sync.flush(); err != nil {
		return err
	}
	return m.MetaStore.CommitState(st)
}

// syncedLogStore is the raft log store behind leaderSync: appends made
// while this member leads are deferred, others are synchronous.
type syncedLogStore struct {
	raft.LogStore
	sync    *leaderSync
	leading func() bool // whether this member leads now
}

func (l *syncedLogStore) StoreLog(log *raft.Log) error {
	return l.StoreLogs([]*raft.Log{log})
}

// StoreLogs appends entries. raft calls it from one goroutine at a time:
// the leader's loop (deferred) or a follower's (synchronous).
func (l *syncedLogStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	last := logs[len(logs)-1].Index
	if !l.leading() {
		if err := l.sync.flush(); err != nil {
			return err
		}
		if err := l.LogStore.StoreLogs(logs); err != nil {
			return err
		}
		l.sync.setSynced(last)
		return nil
	}
	if err := l.sync.beginDeferred(); err != nil {
		return err
	}
	if err := l.LogStore.StoreLogs(logs); err != nil {
		l.sync.endDeferred(0)
		return err
	}
	l.sync.endDeferred(last)
	return nil
}

// DeleteRange removes entries: a prefix (compaction) or a suffix (a
// follower dropping entries that conflict with its leader's).
func (l *syncedLogStore) DeleteRange(min, max uint64) error {
	if err := l.sync.flush(); err != nil {
		return err
	}
	last, err := l.LogStore.LastIndex()
	if err != nil {
		return err
	}
	if err := l.LogStore.DeleteRange(min, max); err != nil {
		return err
	}
	if max >= last {
		l.sync.truncated(min)
	}
	return nil
}

package replication

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"

	"github.com/zkserverd/zkserverd/jute"
)

// gateFS is a real file system whose fsyncs wait while the gate g is
// closed and fail while its fail is set. g counts the fsyncs that ran.
func gateFS(vfs types.VFS, g *syncGate) types.VFS {
	return wrapFS{vfs, func(w types.WritableFile) types.WritableFile { return gateFile{w, g} }}
}

type syncGate struct {
	mu     sync.Mutex
	open   chan struct{} // closed while fsyncs may proceed
	fail   atomic.Bool
	syncs  atomic.Int64
	waited atomic.Int64 // fsyncs that found the gate closed
}

func newSyncGate() *syncGate {
	g := &syncGate{open: make(chan struct{})}
	close(g.open)
	return g
}

// close makes later fsyncs wait. Closing a closed gate keeps its channel,
// so that an fsync already waiting on it is freed by the next release.
func (g *syncGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

func (g *syncGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *syncGate) wait() error {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
	default:
		g.waited.Add(1)
		<-ch
	}
	if g.fail.Load() {
		return errors.New("injected fsync failure")
	}
	g.syncs.Add(1)
	return nil
}

type gateFile struct {
	types.WritableFile
	g *syncGate
}

func (f gateFile) Sync() error {
	if err := f.g.wait(); err != nil {
		return err
	}
	return f.WritableFile.Sync()
}

// syncedWAL is a WAL behind leaderSync, as openWAL builds it, with a
// switch for leadership.
type syncedWAL struct {
	store  *syncedLogStore
	sync   *leaderSync
	gate   *syncGate
	leader atomic.Bool
}

func openSyncedWAL(t *testing.T) *syncedWAL {
	t.Helper()
	dir := t.TempDir()
	w := &syncedWAL{sync: newLeaderSync(), gate: newSyncGate()}
	bolt := &metadb.BoltMetaDB{}
	fs := syncFS{VFS: gateFS(walfs.New(), w.gate), sync: w.sync}
	inner, err := wal.Open(dir, wal.WithMetaStore(syncMeta{MetaStore: bolt, sync: w.sync}),
		wal.WithSegmentFiler(segment.NewFiler(dir, fs)))
	if err != nil {
		t.Fatal(err)
	}
	w.store = &syncedLogStore{LogStore: inner, sync: w.sync, leading: w.leader.Load}
	t.Cleanup(func() {
		w.gate.release()
		w.sync.close()
		inner.Close()
		bolt.Close()
	})
	return w
}

func logsFrom(first, count uint64) []*raft.Log {
	logs := make([]*raft.Log, count)
	for i := range logs {
		logs[i] = &raft.Log{Index: first + uint64(i), Term: 1, Type: raft.LogCommand, Data: []byte("entry")}
	}
	return logs
}

// returnsWithin runs f and reports whether it returned within d.
func returnsWithin(d time.Duration, f func()) (<-chan struct{}, bool) {
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	select {
	case <-done:
		return done, true
	case <-time.After(d):
		return done, false
	}
}

// TestLeaderAppendReturnsBeforeItsFsync: a leader's append returns while
// its fsync cannot run; the entries count as synced only after it ran.
func TestLeaderAppendReturnsBeforeItsFsync(t *testing.T) {
	w := openSyncedWAL(t)
	w.leader.Store(true)
	w.gate.close()
	if _, ok := returnsWithin(2*time.Second, func() {
		if err := w.store.StoreLogs(logsFrom(1, 3)); err != nil {
			t.Error(err)
		}
	}); !ok {
		t.Fatal("leader append waited for its fsync")
	}
	var l raft.Log
	if err := w.store.GetLog(3, &l); err != nil || string(l.Data) != "entry" {
		t.Fatalf("entry 3 not readable before its fsync: %v", err)
	}
	if got := w.sync.syncedIndex(); got != 0 {
		t.Fatalf("synced %d before the fsync ran", got)
	}
	waited, ok := returnsWithin(100*time.Millisecond, func() { w.sync.waitSynced(3) })
	if ok {
		t.Fatal("waitSynced(3) returned before the fsync ran")
	}
	w.gate.release()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("waitSynced(3) still waiting after the fsync")
	}
	if got := w.sync.syncedIndex(); got != 3 {
		t.Fatalf("synced %d, want 3", got)
	}
}

// TestFollowerAppendIsSynchronous: a follower's append returns only after
// its fsync, and after any fsync a leader's append left pending.
func TestFollowerAppendIsSynchronous(t *testing.T) {
	tests := []struct {
		name          string
		leaderAppends bool // a pending leader append comes first
	}{
		{"alone", false},
		{"after a pending leader append", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := openSyncedWAL(t)
			next := uint64(1)
			if tc.leaderAppends {
				w.leader.Store(true)
				w.gate.close()
				if err := w.store.StoreLogs(logsFrom(1, 2)); err != nil {
					t.Fatal(err)
				}
				next = 3
				w.leader.Store(false)
			}
			w.gate.close()
			done, ok := returnsWithin(100*time.Millisecond, func() {
				if err := w.store.StoreLogs(logsFrom(next, 2)); err != nil {
					t.Error(err)
				}
			})
			if ok {
				t.Fatal("follower append returned before its fsync")
			}
			w.gate.release()
			<-done
			if got, want := w.sync.syncedIndex(), next+1; got != want {
				t.Fatalf("synced %d, want %d", got, want)
			}
		})
	}
}

// TestDeferredFsyncFailureIsSticky: a failed deferred fsync fails the
// waiters and every later append.
func TestDeferredFsyncFailureIsSticky(t *testing.T) {
	w := openSyncedWAL(t)
	w.leader.Store(true)
	w.gate.fail.Store(true)
	if err := w.store.StoreLogs(logsFrom(1, 1)); err != nil {
		t.Fatalf("the append itself failed: %v", err)
	}
	if err := w.sync.waitSynced(1); err == nil {
		t.Fatal("waitSynced succeeded after a failed fsync")
	}
	w.gate.fail.Store(false)
	for _, leader := range []bool{true, false} {
		w.leader.Store(leader)
		if err := w.store.StoreLogs(logsFrom(2, 1)); err == nil {
			t.Fatalf("append (leader %v) succeeded after a failed fsync", leader)
		}
	}
}

// TestTruncatedSuffixIsNotSynced: entries rewritten after a follower drops
// a suffix are not covered by the sync of the entries they replace.
func TestTruncatedSuffixIsNotSynced(t *testing.T) {
	w := openSyncedWAL(t)
	if err := w.store.StoreLogs(logsFrom(1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := w.store.DeleteRange(4, 5); err != nil {
		t.Fatal(err)
	}
	if got := w.sync.syncedIndex(); got != 3 {
		t.Fatalf("synced %d after dropping 4-5, want 3", got)
	}
	if err := w.store.DeleteRange(1, 2); err != nil { // compaction: a prefix
		t.Fatal(err)
	}
	if got := w.sync.syncedIndex(); got != 3 {
		t.Fatalf("synced %d after compacting 1-2, want 3", got)
	}
}

// TestMetadataCommitWaitsForDeferredFsyncs: the WAL's metadata (which
// records sealed segments) is not committed before the log data it
// describes is on disk.
func TestMetadataCommitWaitsForDeferredFsyncs(t *testing.T) {
	w := openSyncedWAL(t)
	w.leader.Store(true)
	w.gate.close()
	if err := w.store.StoreLogs(logsFrom(1, 2)); err != nil {
		t.Fatal(err)
	}
	done, ok := returnsWithin(100*time.Millisecond, func() {
		if err := w.store.DeleteRange(1, 1); err != nil { // commits metadata
			t.Error(err)
		}
	})
	if ok {
		t.Fatal("metadata committed while an fsync was pending")
	}
	w.gate.release()
	<-done
	if w.sync.syncedIndex() != 2 {
		t.Fatalf("synced %d, want 2", w.sync.syncedIndex())
	}
}

// TestLeaderAppliesOnlySyncedWrites: on a standalone member, a write is not
// applied (nor answered) while its fsync cannot run, and is once it ran.
func TestLeaderAppliesOnlySyncedWrites(t *testing.T) {
	gate := newSyncGate()
	n := openNodeWith(t, Config{DataDir: t.TempDir(), vfs: gateFS(walfs.New(), gate)})
	defer n.Close()
	defer gate.release()
	if o := await(t, n.Submit(createTxn("/before"))); o.Err != nil {
		t.Fatal(o.Err)
	}
	gate.close()
	ch := n.Submit(createTxn("/held"))
	select {
	case o := <-ch:
		t.Fatalf("write answered while its fsync could not run: %+v", o)
	case <-time.After(200 * time.Millisecond):
	}
	if _, _, code := n.Tree().GetData("/held", nil, nil); code != jute.NoNode {
		t.Fatal("write visible while its fsync could not run")
	}
	if gate.waited.Load() == 0 {
		t.Fatal("the write's fsync never started")
	}
	gate.release()
	if o := await(t, ch); o.Err != nil || o.Result.Err != 0 {
		t.Fatalf("write after its fsync: %+v", o)
	}
}

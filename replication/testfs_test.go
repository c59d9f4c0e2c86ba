package replication

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	walfs "github.com/hashicorp/raft-wal/fs"
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

// TestLeaderAppliesOnlySyncedWrites: on a standalone member, a write is not
// applied (nor answered) while its fsync cannot run, and is once it ran.
func TestLeaderAppliesOnlySyncedWrites(t *testing.T) {
	gate := newSyncGate()
	n := openNodeSeams(t, Config{DataDir: t.TempDir()}, seams{walFS: gateFS(walfs.New(), gate)})
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

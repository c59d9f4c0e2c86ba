package replication

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"

	"github.com/zkserverd/zkserverd/jute"
)

// faultSwitch makes the operation op ("write" or "fsync") of the files
// behind it fail with err while armed.
type faultSwitch struct {
	op    string
	err   error
	armed atomic.Bool
}

func (s *faultSwitch) check(op string) error {
	if s.armed.Load() && s.op == op {
		return s.err
	}
	return nil
}

// faultFS is vfs with the faults of sw injected into its writable files.
func faultFS(vfs types.VFS, sw *faultSwitch) types.VFS {
	return wrapFS{vfs, func(w types.WritableFile) types.WritableFile { return faultFile{w, sw} }}
}

type faultFile struct {
	types.WritableFile
	sw *faultSwitch
}

func (f faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.sw.check("write"); err != nil {
		return 0, err
	}
	return f.WritableFile.WriteAt(p, off)
}

func (f faultFile) Sync() error {
	if err := f.sw.check("fsync"); err != nil {
		return err
	}
	return f.WritableFile.Sync()
}

// Stat lets zeroFS learn a reopened file's size, as it does from raft-wal's.
func (f faultFile) Stat() (os.FileInfo, error) {
	return f.WritableFile.(interface{ Stat() (os.FileInfo, error) }).Stat()
}

// faultLogs is a raft log store whose appends fail while sw is armed (for
// raft-boltdb, which has no file system layer to inject into).
type faultLogs struct {
	raft.LogStore
	sw *faultSwitch
}

func (l faultLogs) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

func (l faultLogs) StoreLogs(logs []*raft.Log) error {
	if err := l.sw.check("write"); err != nil {
		return err
	}
	return l.LogStore.StoreLogs(logs)
}

// fatalRecorder is a Config.Fatal that records its calls.
type fatalRecorder struct {
	mu    sync.Mutex
	errs  []error
	first chan error // receives the first call's error
}

func newFatalRecorder() *fatalRecorder { return &fatalRecorder{first: make(chan error, 1)} }

func (r *fatalRecorder) fatal(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
	if len(r.errs) == 1 {
		r.first <- err
	}
}

func (r *fatalRecorder) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

// notAcknowledged checks that the write whose outcome arrives on ch is not
// reported successful within d.
func notAcknowledged(t *testing.T, ch <-chan Outcome, d time.Duration, what string) {
	t.Helper()
	select {
	case o := <-ch:
		if o.Err == nil && o.Result != nil && o.Result.Err == jute.OK {
			t.Fatalf("%s was acknowledged: %+v", what, o)
		}
	case <-time.After(d):
	}
}

// hasNode reports whether n's tree holds path.
func hasNode(n *Node, path string) bool {
	_, _, code := n.Tree().GetData(path, nil, nil)
	return code == jute.OK
}

// TestLogFaultStopsMember: a failed write or fsync of the log, or a full
// disk, stops the member through Config.Fatal with an error naming the
// file and the fault; the write is not acknowledged, and nothing is
// written after the fault even once the disk works again. A restart on a
// healthy disk recovers every acknowledged write and takes new ones.
func TestLogFaultStopsMember(t *testing.T) {
	cases := []struct {
		name      string
		store     string
		forceSync bool
		op        string
		err       error
		wantFile  string // suffix of the file named
	}{
		{"wal fsync fails", "wal", true, "fsync", syscall.EIO, ".wal"},
		{"wal write fails", "wal", true, "write", syscall.EIO, ".wal"},
		{"wal disk full", "wal", true, "write", syscall.ENOSPC, ".wal"},
		{"wal forceSync=no disk full", "wal", false, "write", syscall.ENOSPC, ".wal"},
		{"boltdb commit fails", "boltdb", true, "write", syscall.EIO, "raft.db"},
		{"boltdb disk full", "boltdb", true, "write", syscall.ENOSPC, "raft.db"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sw := &faultSwitch{op: tc.op, err: tc.err}
			rec := newFatalRecorder()
			cfg := Config{DataDir: dir, LogStore: tc.store, ForceSync: tc.forceSync, Fatal: rec.fatal}
			var s seams
			if tc.store == "wal" {
				s.walFS = faultFS(walfs.New(), sw)
			} else {
				s.wrapLogStore = func(l raft.LogStore) raft.LogStore { return faultLogs{l, sw} }
			}
			n := openReady(t, cfg, s)
			closed := false
			defer func() {
				if !closed {
					n.Close()
				}
			}()
			for i := range 5 {
				if o := await(t, n.Submit(createTxn(fmt.Sprintf("/ok%d", i)))); o.Err != nil || o.Result.Err != jute.OK {
					t.Fatalf("write %d before the fault: %+v", i, o)
				}
			}
			sw.armed.Store(true)
			lost := n.Submit(createTxn("/lost"))
			var ferr error
			select {
			case ferr = <-rec.first:
			case <-time.After(5 * time.Second):
				t.Fatal("the fault did not stop the member within 5s")
			}
			var de *DiskFaultError
			if !errors.As(ferr, &de) || de.Op != tc.op || !errors.Is(ferr, tc.err) ||
				!strings.HasPrefix(de.File, dir) || !strings.HasSuffix(de.File, tc.wantFile) {
				t.Fatalf("fatal error %v, want a %s fault of a %s file under %s", ferr, tc.op, tc.wantFile, dir)
			}
			notAcknowledged(t, lost, 300*time.Millisecond, "the write that hit the fault")
			sw.armed.Store(false)
			// A client retries; raft may elect this member again meanwhile.
			for end := time.Now().Add(time.Second); time.Now().Before(end); {
				notAcknowledged(t, n.Submit(createTxn("/after")), 100*time.Millisecond, "a write after the fault")
				time.Sleep(20 * time.Millisecond)
			}
			if hasNode(n, "/after") {
				t.Fatal("a write after the fault was applied")
			}
			if c := rec.calls(); c != 1 {
				t.Fatalf("Fatal called %d times, want 1", c)
			}
			if _, ok := returnsWithin(10*time.Second, func() { n.Close() }); !ok {
				t.Fatal("Close hung after the fault")
			}
			closed = true

			cfg.Fatal = func(err error) { t.Errorf("fault after the restart: %v", err) }
			n2 := openReady(t, cfg, s)
			defer n2.Close()
			for i := range 5 {
				if !hasNode(n2, fmt.Sprintf("/ok%d", i)) {
					t.Fatalf("acknowledged write /ok%d lost", i)
				}
			}
			if hasNode(n2, "/after") {
				t.Fatal("a write refused after the fault is in the log")
			}
			if o := await(t, n2.Submit(createTxn("/next"))); o.Err != nil || o.Result.Err != jute.OK {
				t.Fatalf("write after the restart: %+v", o)
			}
		})
	}
}

// TestLogFaultOnFollowerStopsOnlyIt: a follower whose log fsync fails
// stops; the two others go on acknowledging writes.
func TestLogFaultOnFollowerStopsOnlyIt(t *testing.T) {
	sws := map[int64]*faultSwitch{}
	recs := map[int64]*fatalRecorder{}
	c := &testCluster{t: t, cfgHook: func(cfg *Config, s *seams) {
		id := cfg.ServerID
		sws[id], recs[id] = &faultSwitch{op: "fsync", err: syscall.EIO}, newFatalRecorder()
		cfg.Fatal, s.walFS = recs[id].fatal, faultFS(walfs.New(), sws[id])
	}}
	c.startMembers(3, true)
	lead := c.leader()
	follower := (lead + 1) % 3
	if o := submitRetrying(t, c.nodes[lead], createTxn("/before")); o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("write before the fault: %+v", o)
	}
	sws[int64(follower+1)].armed.Store(true)
	if o := submitRetrying(t, c.nodes[lead], createTxn("/during")); o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("write with one follower's disk failing: %+v", o)
	}
	var ferr error
	select {
	case ferr = <-recs[int64(follower+1)].first:
	case <-time.After(5 * time.Second):
		t.Fatal("the follower's fsync failure did not stop it within 5s")
	}
	var de *DiskFaultError
	if !errors.As(ferr, &de) || de.Op != "fsync" || !errors.Is(ferr, syscall.EIO) ||
		!strings.HasPrefix(de.File, filepath.Join(c.dirs[follower], "raft", "wal")) {
		t.Fatalf("fatal error %v does not name the follower's segment", ferr)
	}
	if hasNode(c.nodes[follower], "/during") {
		t.Fatal("the failed follower applied a write it could not sync")
	}
	for id, r := range recs {
		if id != int64(follower+1) && r.calls() != 0 {
			t.Fatalf("member %d stopped too", id)
		}
	}
}

package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"

	"github.com/zkserverd/zkserverd/jute"
)

// errPowerLost is what a lossy disk answers after its power loss.
var errPowerLost = errors.New("injected power loss")

// lossyDisk models the WAL's disk with a volatile write cache: a write
// stays in memory (pending, by path, in write order) until its file is
// synced, when it reaches the real file. powerLoss drops every pending
// write, of every file and member using the disk, at one instant; every
// write, sync or creation after it fails. Reads see pending writes. The
// files' creation and deletion are durable at once. Its fields are guarded
// by mu.
type lossyDisk struct {
	mu      sync.Mutex
	pending map[string][]pendingWrite
	dead    bool
}

type pendingWrite struct {
	off  int64
	data []byte
}

func newLossyDisk() *lossyDisk { return &lossyDisk{pending: map[string][]pendingWrite{}} }

// fs returns the disk as a WAL file system.
func (d *lossyDisk) fs() types.VFS { return lossyFS{VFS: walfs.New(), disk: d} }

// powerLoss drops the pending writes and returns how many of their bytes
// were not zero (log data, not zeroFS's zeroing ahead).
func (d *lossyDisk) powerLoss() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cutLocked()
}

// cutLocked drops the pending writes and kills the disk; d.mu is held.
func (d *lossyDisk) cutLocked() int {
	d.dead = true
	lost := d.pendingLocked()
	d.pending = nil
	return lost
}

// pendingLocked counts the non-zero bytes not yet synced; d.mu is held.
func (d *lossyDisk) pendingLocked() int {
	n := 0
	for _, ws := range d.pending {
		for _, w := range ws {
			n += len(w.data) - bytes.Count(w.data, []byte{0})
		}
	}
	return n
}

// powerLossIfPending cuts the power only while log data is pending, and
// returns how much was lost (0: none pending, the disk still runs). Checking
// and cutting under one lock matters: a sync between a separate check and
// the cut would leave a dead disk that lost nothing.
func (d *lossyDisk) powerLossIfPending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pendingLocked() == 0 {
		return 0
	}
	return d.cutLocked()
}

// overlay copies the pending writes of path over p, read at off, and
// returns how many bytes of p are then valid, given n read from the file.
func (d *lossyDisk) overlay(path string, p []byte, off int64, n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.pending[path] {
		lo, hi := max(off, w.off), min(off+int64(len(p)), w.off+int64(len(w.data)))
		if lo < hi {
			copy(p[lo-off:hi-off], w.data[lo-w.off:hi-w.off])
			n = max(n, int(hi-off))
		}
	}
	return n
}

type lossyFS struct {
	types.VFS
	disk *lossyDisk
}

func (f lossyFS) alive() error {
	f.disk.mu.Lock()
	defer f.disk.mu.Unlock()
	if f.disk.dead {
		return errPowerLost
	}
	return nil
}

func (f lossyFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return &lossyFile{WritableFile: w, path: filepath.Join(dir, name), disk: f.disk}, nil
}

func (f lossyFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return &lossyFile{WritableFile: w, path: filepath.Join(dir, name), disk: f.disk}, nil
}

func (f lossyFS) OpenReader(dir, name string) (types.ReadableFile, error) {
	r, err := f.VFS.OpenReader(dir, name)
	if err != nil {
		return nil, err
	}
	return lossyReader{ReadableFile: r, path: filepath.Join(dir, name), disk: f.disk}, nil
}

// lossyReader reads a file with its pending writes.
type lossyReader struct {
	types.ReadableFile
	path string
	disk *lossyDisk
}

func (r lossyReader) ReadAt(p []byte, off int64) (int, error) {
	return readOverlaid(r.ReadableFile, r.disk, r.path, p, off)
}

func readOverlaid(f types.ReadableFile, d *lossyDisk, path string, p []byte, off int64) (int, error) {
	n, err := f.ReadAt(p, off)
	if n = d.overlay(path, p, off, n); n == len(p) {
		err = nil
	}
	return n, err
}

// lossyFile is a writable file of a lossy disk.
type lossyFile struct {
	types.WritableFile
	path string
	disk *lossyDisk
}

func (f *lossyFile) WriteAt(p []byte, off int64) (int, error) {
	f.disk.mu.Lock()
	defer f.disk.mu.Unlock()
	if f.disk.dead {
		return 0, errPowerLost
	}
	f.disk.pending[f.path] = append(f.disk.pending[f.path], pendingWrite{off, bytes.Clone(p)})
	return len(p), nil
}

func (f *lossyFile) ReadAt(p []byte, off int64) (int, error) {
	return readOverlaid(f.WritableFile, f.disk, f.path, p, off)
}

// Sync moves the file's pending writes to the real file. The real file is
// not fsynced: the test process survives the simulated power loss, so
// what it wrote stays readable.
func (f *lossyFile) Sync() error {
	f.disk.mu.Lock()
	defer f.disk.mu.Unlock()
	if f.disk.dead {
		return errPowerLost
	}
	for _, w := range f.disk.pending[f.path] {
		if _, err := f.WritableFile.WriteAt(w.data, w.off); err != nil {
			return err
		}
	}
	delete(f.disk.pending, f.path)
	return nil
}

// Stat lets zeroFS learn a reopened file's size, as it does from raft-wal's.
func (f *lossyFile) Stat() (os.FileInfo, error) {
	return f.WritableFile.(interface{ Stat() (os.FileInfo, error) }).Stat()
}

// TestLossyDisk: only synced writes survive a power loss; reads see
// pending writes until then; nothing is written after it.
func TestLossyDisk(t *testing.T) {
	dir := t.TempDir()
	d := newLossyDisk()
	w, err := d.fs().Create(dir, "seg", 64)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteAt([]byte("synced"), 0)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	w.WriteAt([]byte("cached"), 6)
	got := make([]byte, 12)
	if _, err := w.ReadAt(got, 0); err != nil || string(got) != "syncedcached" {
		t.Fatalf("read before the power loss: %q, %v", got, err)
	}
	if lost := d.powerLoss(); lost != 6 {
		t.Fatalf("power loss dropped %d bytes, want 6", lost)
	}
	if _, err := w.WriteAt([]byte("x"), 0); !errors.Is(err, errPowerLost) {
		t.Fatalf("write after the power loss: %v", err)
	}
	if err := w.Sync(); !errors.Is(err, errPowerLost) {
		t.Fatalf("sync after the power loss: %v", err)
	}
	w.Close()
	b, err := os.ReadFile(filepath.Join(dir, "seg"))
	if err != nil || string(b[:12]) != "synced\x00\x00\x00\x00\x00\x00" {
		t.Fatalf("file after the power loss: %q, %v", b[:12], err)
	}
}

// TestPowerLossStandalone: after a power loss that drops every unsynced
// write, a standalone member has every write it acknowledged; with
// forceSync=no it loses those after its last snapshot (which shows that
// the test notices lost data).
func TestPowerLossStandalone(t *testing.T) {
	for _, forceSync := range []bool{true, false} {
		t.Run(fmt.Sprintf("forceSync=%v", forceSync), func(t *testing.T) {
			dir := t.TempDir()
			disk := newLossyDisk()
			rec := newFatalRecorder()
			cfg := Config{DataDir: dir, ForceSync: forceSync, Fatal: rec.fatal}
			n := openReady(t, cfg, seams{walFS: disk.fs()})
			var acked []string
			for i := range 30 {
				if i == 10 {
					if err := n.Snapshot(); err != nil {
						t.Fatal(err)
					}
				}
				p := fmt.Sprintf("/p%d", i)
				if o := await(t, n.Submit(createTxn(p))); o.Err == nil && o.Result.Err == jute.OK {
					acked = append(acked, p)
				}
			}
			disk.powerLoss()
			n.Close()

			cfg.Fatal = func(err error) { t.Errorf("fault after the restart: %v", err) }
			n = openReady(t, cfg, seams{walFS: newLossyDisk().fs()})
			defer n.Close()
			missing := 0
			for _, p := range acked {
				if !hasNode(n, p) {
					missing++
				}
			}
			want := 0
			if !forceSync {
				want = 20 // the writes after the snapshot
			}
			if len(acked) != 30 || missing != want {
				t.Fatalf("%d writes acknowledged, %d of them lost; want 30 and %d", len(acked), missing, want)
			}
		})
	}
}

// TestPowerLossEnsemble: three members write; a power loss hits all three
// at once while writes are in flight and unsynced data is pending; after
// all three restart on the same directories, every acknowledged write is
// on every member.
func TestPowerLossEnsemble(t *testing.T) {
	disk := newLossyDisk()
	recs := map[int64]*fatalRecorder{}
	c := &testCluster{t: t, cfgHook: func(cfg *Config, s *seams) {
		recs[cfg.ServerID] = newFatalRecorder()
		s.walFS, cfg.Fatal = disk.fs(), recs[cfg.ServerID].fatal
	}}
	c.startMembers(3, true)

	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range c.nodes {
		wg.Add(1)
		go func(n *Node) {
			defer wg.Done()
			for i := 0; ; i++ {
				p := fmt.Sprintf("/m%d-%d", w, i)
				select {
				case o := <-n.Submit(createTxn(p)):
					if o.Err == nil && o.Result.Err == jute.OK {
						mu.Lock()
						acked = append(acked, p)
						mu.Unlock()
					}
				case <-stop:
					return
				case <-time.After(5 * time.Second):
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}(c.nodes[w])
	}
	// Cut the power once writes were acknowledged and log data is
	// pending, as it is while the leader's fsync runs.
	deadline := time.Now().Add(10 * time.Second)
	lost := 0
	for time.Now().Before(deadline) {
		mu.Lock()
		enough := len(acked) >= 60
		mu.Unlock()
		if enough {
			if lost = disk.powerLossIfPending(); lost > 0 {
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	if lost == 0 {
		close(stop)
		wg.Wait()
		t.Fatal("no power loss with unsynced log data within 10s")
	}
	close(stop)
	closeAll(t, c.nodes)
	wg.Wait()
	want := acked // whenever acknowledged: only synced entries can be
	t.Logf("%d writes acknowledged, %d bytes of log data dropped", len(want), lost)

	// Every acknowledged write must be on the disks of a quorum: any two
	// members, started alone on copies of their directories, have it.
	for _, pair := range [][2]int{{0, 1}, {0, 2}, {1, 2}} {
		checkPairAfterPowerLoss(t, c, pair, want)
	}

	after := newLossyDisk()
	c.peers = freshForwardAddrs(t, c.peers)
	c.cfgHook = func(cfg *Config, s *seams) {
		s.walFS, cfg.Fatal = after.fs(), faultAfterRestart(t, cfg.ServerID)
	}
	for i := range c.nodes {
		c.start(i)
	}
	for i, n := range c.nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := n.WaitReady(ctx)
		cancel()
		if err != nil {
			t.Fatalf("member %d not ready after the restart: %v", i+1, err)
		}
	}
	c.converged()
	for i, n := range c.nodes {
		for _, p := range want {
			if !hasNode(n, p) {
				t.Fatalf("member %d lost the acknowledged write %s", i+1, p)
			}
		}
	}
}

// faultAfterRestart is a Config.Fatal that fails the test.
func faultAfterRestart(t *testing.T, id int64) func(error) {
	return func(err error) { t.Errorf("member %d: fault after the restart: %v", id, err) }
}

// checkPairAfterPowerLoss starts the two members of pair alone, on copies
// of their directories, and checks that both have every write in want.
func checkPairAfterPowerLoss(t *testing.T, c *testCluster, pair [2]int, want []string) {
	t.Helper()
	disk := newLossyDisk()
	p := &testCluster{t: t, peers: freshForwardAddrs(t, c.peers), dirs: make([]string, len(c.dirs)), nodes: make([]*Node, len(c.nodes)),
		trans: make([]*raft.InmemTransport, len(c.nodes)), cfgHook: func(cfg *Config, s *seams) {
			s.walFS, cfg.Fatal = disk.fs(), faultAfterRestart(t, cfg.ServerID)
		}}
	defer closeAll(t, p.nodes)
	for _, i := range pair {
		p.dirs[i] = t.TempDir()
		copyDir(t, c.dirs[i], p.dirs[i])
		p.start(i)
	}
	for _, i := range pair {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := p.nodes[i].WaitReady(ctx)
		cancel()
		if err != nil {
			t.Fatalf("members %d and %d: %d not ready: %v (%s; %s)", pair[0]+1, pair[1]+1, i+1, err,
				raftState(p.nodes[pair[0]]), raftState(p.nodes[pair[1]]))
		}
	}
	for _, i := range pair {
		for _, path := range want {
			if !hasNode(p.nodes[i], path) {
				t.Fatalf("members %d and %d alone: %d lacks the acknowledged write %s", pair[0]+1, pair[1]+1, i+1, path)
			}
		}
	}
}

// copyDir copies the files under src to dst, leaving blocks of zeros
// unwritten (the WAL preallocates 64 MiB segments).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o750)
		}
		return copySparse(path, to)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copySparse(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	defer out.Close()
	buf := make([]byte, 1<<20)
	var size int64
	for {
		n, err := in.Read(buf)
		if n > 0 && bytes.ContainsFunc(buf[:n], func(r rune) bool { return r != 0 }) {
			if _, err := out.WriteAt(buf[:n], size); err != nil {
				return err
			}
		}
		size += int64(n)
		if err == io.EOF {
			return out.Truncate(size)
		}
		if err != nil {
			return err
		}
	}
}

// closeAll closes the nodes at once, as a power loss stops every member
// at once: a leader whose followers still answer keeps waiting for its
// uncommitted entries until they stop.
func closeAll(t *testing.T, nodes []*Node) {
	t.Helper()
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.Close()
			}()
		}
	}
	if _, ok := returnsWithin(30*time.Second, wg.Wait); !ok {
		t.Fatal("members did not close within 30s")
	}
}

// raftState summarizes a member's raft state for a failure message.
func raftState(n *Node) string {
	st := n.Stats()
	return fmt.Sprintf("member %d %s term %s last %s commit %s applied %s fsm applied %d", n.cfg.ServerID, n.Role(),
		st["term"], st["last_log_index"], st["commit_index"], st["applied_index"], n.fsm.last)
}

// freshForwardAddrs returns peers with new forwarding ports (raft runs
// over in-memory transports here). A restart then binds no port that was
// free only a moment ago, which a test process running alongside, with the
// same band of ports, may have picked meanwhile.
func freshForwardAddrs(t *testing.T, peers []Peer) []Peer {
	out := slices.Clone(peers)
	for i := range out {
		out[i].ForwardAddr = freeAddr(t)
	}
	return out
}

package replication

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/internal/testutil"
)

// heldSnapshots is a snapshot store that, once armed, holds the next
// snapshot created at its Close until released: a snapshot raft is still
// writing. mu guards the fields below it.
type heldSnapshots struct {
	raft.SnapshotStore
	mu      sync.Mutex
	armed   bool
	creates int
	held    chan struct{} // closed when the held snapshot reaches Close
	release chan struct{}
}

func (h *heldSnapshots) wrap(s raft.SnapshotStore) raft.SnapshotStore {
	h.SnapshotStore = s
	return h
}

// hold arms the store and returns the function that releases the held
// snapshot (the test's cleanup releases it too).
func (h *heldSnapshots) hold(t *testing.T) (release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed, h.creates = true, 0
	h.held, h.release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	ch := h.release
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return release
}

// waitHeld waits until a snapshot is held.
func (h *heldSnapshots) waitHeld(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	held := h.held
	h.mu.Unlock()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot reached the store within 10s")
	}
}

// created counts the snapshots created since hold.
func (h *heldSnapshots) created() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.creates
}

func (h *heldSnapshots) Create(version raft.SnapshotVersion, index, term uint64, cfg raft.Configuration,
	cfgIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := h.SnapshotStore.Create(version, index, term, cfg, cfgIndex, trans)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.creates++
	if err != nil || !h.armed {
		return sink, err
	}
	h.armed = false
	return &heldSink{SnapshotSink: sink, held: h.held, release: h.release}, nil
}

// heldSink is the held snapshot's sink; it holds its first Close (the
// FSM's Persist closes the sink, and raft closes it again).
type heldSink struct {
	raft.SnapshotSink
	held, release chan struct{}
	once          sync.Once
}

func (s *heldSink) Close() error {
	s.once.Do(func() {
		close(s.held)
		<-s.release
	})
	return s.SnapshotSink.Close()
}

// heldCluster starts a 3-member cluster whose snapshot stores can hold a
// snapshot, and writes a few znodes.
func heldCluster(t *testing.T) (*testCluster, []*heldSnapshots) {
	stores := make([]*heldSnapshots, 3)
	for i := range stores {
		stores[i] = &heldSnapshots{}
	}
	c := &testCluster{t: t, cfgHook: func(cfg *Config, s *seams) {
		s.wrapSnapshotStore = stores[cfg.ServerID-1].wrap
	}}
	c.startMembers(3, false)
	return c, stores
}

// snapshotRecord returns raft's record of member n's last snapshot and the
// index of the newest snapshot its store holds.
func snapshotRecord(t *testing.T, n *Node) (recorded, stored uint64) {
	t.Helper()
	recorded, err := strconv.ParseUint(n.Stats()["last_snapshot_index"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	list, err := n.snaps.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("list snapshots: %v (%d)", err, len(list))
	}
	return recorded, list[0].Index
}

// writeSome writes count znodes named prefix0, prefix1, ... through n.
func writeSome(t *testing.T, n *Node, prefix string, count int) {
	t.Helper()
	for i := range count {
		if o := submitRetrying(t, n, createTxn(fmt.Sprintf("/%s%d", prefix, i))); o.Err != nil {
			t.Fatalf("write: %+v", o)
		}
	}
}

// TestRestoreWaitsForASnapshotBeingWritten: a restore that arrives while
// raft writes a snapshot of its own waits for it (raft would record the
// older snapshot's index over the restored one's, and the followers would
// be sent the restored snapshot forever), then restores, and every member
// holds the backup.
func TestRestoreWaitsForASnapshotBeingWritten(t *testing.T) {
	c, stores := heldCluster(t)
	lead := c.leader()
	writeSome(t, c.nodes[lead], "a", 5)
	_, st := backupOf(t, c.nodes[lead])
	want := nodesOf(t, st.Tree)
	writeSome(t, c.nodes[lead], "b", 5)

	release := stores[lead].hold(t)
	go c.nodes[lead].raft.Snapshot().Error() // as raft's own threshold starts one
	stores[lead].waitHeld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.nodes[lead].Restore(ctx, st)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the restore ended while a snapshot was being written: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if n := stores[lead].created(); n != 1 {
		t.Fatalf("%d snapshots created while one was being written, want only it (the restore must wait)", n)
	}
	release()
	if err := <-done; err != nil {
		if !errors.Is(err, raft.ErrLeadershipLost) && !errors.Is(err, ErrNotLeader) {
			t.Fatal(err)
		}
		// A loaded machine cost the leader its lease: restore again on
		// the new one, as an operator would.
		t.Logf("restore: %v; trying again on the leader", err)
		lead = c.leader()
		_, st = backupOf(t, c.nodes[lead])
		if _, err := c.nodes[lead].Restore(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 15*time.Second, "every member holds the backup", func() bool {
		for _, n := range c.nodes {
			if nodesOf(t, n.Tree()) != want {
				return false
			}
		}
		return true
	})
	if recorded, stored := snapshotRecord(t, c.nodes[lead]); recorded < stored {
		t.Errorf("leader's last snapshot recorded at %d, the newest stored is at %d", recorded, stored)
	}
	writeSome(t, c.nodes[lead], "c", 3)
	c.converged()
}

// TestSnapshotRecordMendedAfterARacingInstall: a follower that installs
// the leader's snapshot while it writes one of its own ends with raft's
// record of its last snapshot behind the installed one
// (hashicorp/raft#248); the member notices and takes a snapshot, which
// sets the record right.
func TestSnapshotRecordMendedAfterARacingInstall(t *testing.T) {
	c, stores := heldCluster(t)
	lead := c.leader()
	f := (lead + 1) % 3
	writeSome(t, c.nodes[lead], "a", 5)
	_, st := backupOf(t, c.nodes[lead])
	want := nodesOf(t, st.Tree)
	writeSome(t, c.nodes[lead], "b", 5)
	c.converged()

	release := stores[f].hold(t)
	snapped := make(chan error, 1)
	go func() { snapped <- c.nodes[f].raft.Snapshot().Error() }()
	stores[f].waitHeld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.nodes[lead].Restore(ctx, st)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	testutil.Eventually(t, 15*time.Second, "the follower installed the restored snapshot", func() bool {
		return nodesOf(t, c.nodes[f].Tree()) == want
	})
	release()
	if err := <-snapped; err != nil {
		t.Fatalf("the follower's own snapshot: %v", err)
	}
	if recorded, stored := snapshotRecord(t, c.nodes[f]); recorded >= stored {
		t.Fatalf("the follower's record (%d) did not go back below the installed snapshot (%d): the race was not reproduced", recorded, stored)
	}
	testutil.Eventually(t, 15*time.Second, "the follower's snapshot record reaches the installed snapshot", func() bool {
		recorded, stored := snapshotRecord(t, c.nodes[f])
		return recorded >= stored && recorded >= res.Index-1
	})
}

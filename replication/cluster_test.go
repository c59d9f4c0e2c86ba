package replication

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/test/ports"
	"github.com/zkserverd/zkserverd/txnlog"
)

// freeAddr returns a loopback address that is free now, from this
// package's band (package ports): a cluster picks all its addresses before
// binding any.
func freeAddr(t *testing.T) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(portPicker.Free(t)))
}

var portPicker = ports.ForReplication()

type testCluster struct {
	t     *testing.T
	peers []Peer
	dirs  []string
	nodes []*Node
	// trans holds the members' in-memory raft transports (nil: TCP).
	trans []*raft.InmemTransport
	// logStore is every member's Config.LogStore.
	logStore string
	// cfgHook, if set, adjusts every member's configuration and seams.
	cfgHook func(*Config, *seams)
}

// newTestCluster starts members whose raft runs over TCP on loopback;
// observers lists ids that join as non-voting observers.
func newTestCluster(t *testing.T, size int, observers ...int64) *testCluster {
	return startTestCluster(t, size, false, "", observers...)
}

// newInmemCluster starts members whose raft runs over raft's in-memory
// transport (forwarding still uses loopback TCP): fast, and partitions are
// one call.
func newInmemCluster(t *testing.T, size int) *testCluster {
	return startTestCluster(t, size, true, "")
}

// newTestClusterWith starts members whose configuration hook adjusts.
func newTestClusterWith(t *testing.T, size int, hook func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, cfgHook: func(cfg *Config, _ *seams) { hook(cfg) }}
	c.startMembers(size, false)
	return c
}

func startTestCluster(t *testing.T, size int, inmem bool, logStore string, observers ...int64) *testCluster {
	t.Helper()
	c := &testCluster{t: t, logStore: logStore}
	c.startMembers(size, inmem, observers...)
	return c
}

// startMembers starts size members and waits until each is ready.
func (c *testCluster) startMembers(size int, inmem bool, observers ...int64) {
	t := c.t
	t.Helper()
	for i := 1; i <= size; i++ {
		p := Peer{ID: int64(i), RaftAddr: freeAddr(t), ForwardAddr: freeAddr(t)}
		if inmem {
			p.RaftAddr = fmt.Sprintf("member-%d", i)
		}
		for _, o := range observers {
			p.Observer = p.Observer || o == p.ID
		}
		c.peers = append(c.peers, p)
		c.dirs = append(c.dirs, t.TempDir())
	}
	c.nodes = make([]*Node, size)
	if inmem {
		c.trans = make([]*raft.InmemTransport, size)
	}
	for i := range c.nodes {
		c.start(i)
	}
	t.Cleanup(c.closeAll)
	c.waitReady()
}

// closeAll closes every running member.
func (c *testCluster) closeAll() {
	for _, n := range c.nodes {
		if n != nil {
			n.Close()
		}
	}
}

// waitReady waits until every member is ready and knows the ensemble's
// identity.
func (c *testCluster) waitReady() {
	t := c.t
	t.Helper()
	for i := range c.nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if err := c.nodes[i].WaitReady(ctx); err != nil {
			cancel()
			t.Fatalf("member %d not ready: %v", i+1, err)
		}
		cancel()
	}
	testutil.Eventually(t, 15*time.Second, "every member knows the ensemble's identity", func() bool {
		for _, n := range c.nodes {
			if n.Ensemble().IsZero() || n.Ensemble() != c.nodes[0].Ensemble() {
				return false
			}
		}
		return true
	})
}

func (c *testCluster) start(i int) {
	cfg := Config{ServerID: int64(i + 1), DataDir: c.dirs[i], ForceSync: true, Peers: c.peers, LogStore: c.logStore,
		TickTime: 300 * time.Millisecond, ForwardTimeout: 2 * time.Second, SnapshotThreshold: 32, TrailingLogs: 8,
		DigestInterval: time.Hour} // no checkpoints; the digest tests set their own
	var s seams
	if c.trans != nil {
		s.raftTransport = noPipeline{c.connectInmem(i)}
	}
	if c.cfgHook != nil {
		c.cfgHook(&cfg, &s)
	}
	n, err := open(cfg, s)
	if err != nil {
		c.t.Fatalf("open member %d: %v", i+1, err)
	}
	c.nodes[i] = n
}

// connectInmem gives member i a fresh in-memory transport wired to every
// other member's, both ways.
func (c *testCluster) connectInmem(i int) *raft.InmemTransport {
	_, tr := raft.NewInmemTransport(raft.ServerAddress(c.peers[i].RaftAddr))
	for j, other := range c.trans {
		if j != i && other != nil {
			tr.Connect(raft.ServerAddress(c.peers[j].RaftAddr), other)
			other.Connect(raft.ServerAddress(c.peers[i].RaftAddr), tr)
		}
	}
	c.trans[i] = tr
	return tr
}

// isolate cuts member i's in-memory raft links (both directions).
func (c *testCluster) isolate(i int) {
	c.trans[i].DisconnectAll()
	for j, other := range c.trans {
		if j != i {
			other.Disconnect(raft.ServerAddress(c.peers[i].RaftAddr))
		}
	}
}

func (c *testCluster) leader() int {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range c.nodes {
			if n != nil && n.IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no leader within 10s")
	return -1
}

// converged waits until every live member holds the same tree.
func (c *testCluster) converged() {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var first []byte
		same := true
		for _, n := range c.nodes {
			if n == nil {
				continue
			}
			var b bytes.Buffer
			n.Tree().WriteSnapshot(&b)
			if first == nil {
				first = b.Bytes()
			} else if !bytes.Equal(first, b.Bytes()) {
				same = false
			}
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal("members did not converge within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// submitRetrying retries a write whose fate is unknown because leadership
// changed under load, as a client would after ConnectionLoss.
func submitRetrying(t *testing.T, n *Node, txn *txnlog.Txn) Outcome {
	t.Helper()
	var o Outcome
	for i := 0; i < 10; i++ {
		o = await(t, n.Submit(txn))
		if o.Err == nil {
			return o
		}
		time.Sleep(100 * time.Millisecond)
	}
	return o
}

func TestClusterReplicatesForwardedWrites(t *testing.T) {
	c := newTestCluster(t, 3)
	lead := c.leader()
	follower := (lead + 1) % 3
	var zxids []int64
	for i := 0; i < 20; i++ {
		o := submitRetrying(t, c.nodes[follower], createTxn(fmt.Sprintf("/f%d", i)))
		if o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("forwarded write %d: %+v", i, o)
		}
		zxids = append(zxids, o.Zxid)
	}
	for i := 1; i < len(zxids); i++ {
		if zxids[i] != zxids[i-1]+1 {
			t.Fatalf("zxids not consecutive: %v", zxids)
		}
	}
	if zxids[0]>>32 == 0 {
		t.Fatalf("ensemble zxid %#x has epoch 0", zxids[0])
	}
	// The proposer has applied its own write when its outcome arrives.
	if _, _, code := c.nodes[follower].Tree().GetData("/f19", nil, nil); code != jute.OK {
		t.Fatalf("follower cannot read its own write: %v", code)
	}
	c.converged()
}

// TestClusterFollowerRestartsAfterSnapshots restarts a follower whose
// clients wrote through it while it took snapshots (threshold 32):
// replaying its snapshot and log must not apply anything twice.
func TestClusterFollowerRestartsAfterSnapshots(t *testing.T) {
	c := newTestCluster(t, 3)
	follower := (c.leader() + 1) % 3
	for i := 0; i < 120; i++ {
		if o := submitRetrying(t, c.nodes[follower], createTxn(fmt.Sprintf("/r%d", i))); o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("forwarded write %d: %+v", i, o)
		}
	}
	if err := c.nodes[follower].Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.nodes[follower].Close()
	c.start(follower)
	for i := 0; i < 20; i++ {
		if o := submitRetrying(t, c.nodes[follower], createTxn(fmt.Sprintf("/after%d", i))); o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("write %d after the restart: %+v", i, o)
		}
	}
	c.converged()
}

func TestClusterSyncIsABarrier(t *testing.T) {
	c := newTestCluster(t, 3)
	lead := c.leader()
	follower := (lead + 1) % 3
	await(t, c.nodes[lead].Submit(createTxn("/synced")))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.nodes[follower].Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, code := c.nodes[follower].Tree().GetData("/synced", nil, nil); code != jute.OK {
		t.Fatalf("read after sync on a follower: %v", code)
	}
}

func TestClusterLeaderFailover(t *testing.T) {
	c := newTestCluster(t, 3)
	lead := c.leader()
	await(t, c.nodes[lead].Submit(createTxn("/before")))
	c.nodes[lead].Close()
	c.nodes[lead] = nil
	start := time.Now()
	newLead := c.leader()
	t.Logf("new leader after %v", time.Since(start))
	if newLead == lead {
		t.Fatal("closed member still leads")
	}
	other := 3 - lead - newLead
	// The remaining follower learns the new leader from its first append,
	// which may come a moment after the election: until then its writes
	// fail with ErrNoLeader, and a client retries.
	o := submitRetrying(t, c.nodes[other], createTxn("/after"))
	if o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("write after failover: %+v", o)
	}
	c.converged()
	// The old leader comes back, catches up (by log or snapshot) and agrees.
	c.start(lead)
	for i := 0; i < 50; i++ {
		await(t, c.nodes[newLead].Submit(createTxn(fmt.Sprintf("/more%d", i))))
	}
	c.converged()
}

func TestClusterMinorityStopsWriting(t *testing.T) {
	c := newTestCluster(t, 3)
	lead := c.leader()
	for i := range c.nodes {
		if i != lead {
			c.nodes[i].Close()
			c.nodes[i] = nil
		}
	}
	sid := int64(0x0100000000000009)
	ch := c.nodes[lead].Submit(&txnlog.Txn{Timeout: 4000, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: sid}})
	select {
	case o := <-ch:
		if o.Err == nil {
			t.Fatalf("a leader without quorum committed a write: %+v", o)
		}
	case <-time.After(3 * time.Second):
		// Still pending: not committed, which is what matters.
	}
}

func TestClusterObserverServesReads(t *testing.T) {
	c := newTestCluster(t, 4, 4)
	obs := c.nodes[3]
	if obs.Role() != "observer" {
		t.Fatalf("member 4 role %q, want observer", obs.Role())
	}
	o := await(t, obs.Submit(createTxn("/from-observer")))
	if o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("write through an observer: %+v", o)
	}
	if _, _, code := obs.Tree().GetData("/from-observer", nil, nil); code != jute.OK {
		t.Fatalf("observer read: %v", code)
	}
	c.converged()
}

// TestClusterLaggingMemberInstallsSnapshot uses raft-boltdb, which drops
// compacted entries one by one; raft-wal drops whole 64 MiB segments, so
// with it a lagging member of a small test catches up from the log.
func TestClusterLaggingMemberInstallsSnapshot(t *testing.T) {
	c := startTestCluster(t, 3, false, "boltdb")
	lead := c.leader()
	lagging := (lead + 1) % 3
	c.nodes[lagging].Close()
	c.nodes[lagging] = nil
	for i := 0; i < 200; i++ { // far past TrailingLogs (8) and the snapshot threshold (32)
		lead = c.leader()
		if o := submitRetrying(t, c.nodes[lead], createTxn(fmt.Sprintf("/s%d", i))); o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	if err := c.nodes[lead].Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.start(lagging)
	c.converged()
	if idx := c.nodes[lagging].Stats()["last_snapshot_index"]; idx == "0" || idx == "" {
		t.Fatalf("the lagging member caught up without a snapshot (last_snapshot_index %q)", idx)
	}
}

func TestInmemClusterReplicatesAndFailsOver(t *testing.T) {
	c := newInmemCluster(t, 3)
	lead := c.leader()
	follower := (lead + 1) % 3
	for i := 0; i < 20; i++ {
		if o := submitRetrying(t, c.nodes[follower], createTxn(fmt.Sprintf("/m%d", i))); o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("forwarded write %d: %+v", i, o)
		}
	}
	c.converged()
	// Partition the leader away: the majority elects another and keeps
	// writing; the isolated member commits nothing.
	c.isolate(lead)
	var newLead int
	deadline := time.Now().Add(10 * time.Second)
	for {
		newLead = -1
		for i, n := range c.nodes {
			if i != lead && n.IsLeader() {
				newLead = i
			}
		}
		if newLead >= 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if newLead < 0 {
		t.Fatal("no new leader in the majority")
	}
	if o := submitRetrying(t, c.nodes[newLead], createTxn("/majority")); o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("write in the majority: %+v", o)
	}
	select {
	case o := <-c.nodes[lead].Submit(createTxn("/minority")):
		if o.Err == nil && o.Result.Err == jute.OK {
			t.Fatal("the isolated member committed a write")
		}
	case <-time.After(2 * time.Second):
	}
	if _, _, code := c.nodes[lead].Tree().GetData("/minority", nil, nil); code == jute.OK {
		t.Fatal("the isolated member applied a write of its own")
	}
}

// TestClusterQuorumHealth: every member of a healthy ensemble is in a
// working quorum; when the leader's process ends, a follower with a
// forwarding connection to it learns at once (LeaderLinkLost), before
// raft's heartbeat timeout, and is in a quorum again once it syncs with the
// new leader; a leader left alone steps down and is not.
func TestClusterQuorumHealth(t *testing.T) {
	c := newTestCluster(t, 3)
	const silence = 1500 * time.Millisecond
	for i, n := range c.nodes {
		if err := n.QuorumHealth(silence); err != nil {
			t.Fatalf("member %d of a healthy ensemble: %v", i+1, err)
		}
	}
	lead := c.leader()
	f := (lead + 1) % 3
	if err := syncWithin(c.nodes[f], 10*time.Second); err != nil { // opens the forwarding connection
		t.Fatal(err)
	}
	select {
	case <-c.nodes[f].LeaderLinkLost():
		t.Fatal("leader link reported lost while the leader runs")
	default:
	}
	start := time.Now()
	c.nodes[lead].Close()
	c.nodes[lead] = nil
	select {
	case <-c.nodes[f].LeaderLinkLost():
	case <-time.After(5 * time.Second):
		t.Fatal("the follower did not notice its leader's process end")
	}
	if err := c.nodes[f].QuorumHealth(silence); err == nil {
		t.Fatal("follower of a dead leader reports a working quorum")
	}
	t.Logf("follower noticed the leader's end after %v", time.Since(start))
	newLead := c.leader()
	testutil.Eventually(t, 10*time.Second, "the follower back in a quorum", func() bool {
		return syncWithin(c.nodes[f], 2*time.Second) == nil && c.nodes[f].QuorumHealth(silence) == nil
	})
	c.nodes[3-lead-newLead].Close()
	c.nodes[3-lead-newLead] = nil
	testutil.Eventually(t, 10*time.Second, "the lone leader out of quorum", func() bool {
		return c.nodes[newLead].QuorumHealth(silence) != nil
	})
}

// TestReadyAfterRestartFromSnapshotsHoldingTheLog: every member takes a
// snapshot after the last write (its log still holds that write, below
// the trailing-logs count) and the ensemble restarts with no client
// writing: each member is ready at once. The snapshot's entries are not
// applied again, so a member that counted only applied entries waited for
// them until a new write came.
func TestReadyAfterRestartFromSnapshotsHoldingTheLog(t *testing.T) {
	c := newTestCluster(t, 3)
	lead := c.leader()
	writeSome(t, c.nodes[lead], "s", 3)
	c.converged()
	for i, n := range c.nodes {
		if err := n.Snapshot(); err != nil {
			t.Fatalf("snapshot of member %d: %v", i+1, err)
		}
	}
	for i := range c.nodes {
		c.nodes[i].Close()
	}
	for i := range c.nodes {
		c.start(i)
	}
	c.waitReady()
}

// syncWithin syncs n with its leader, giving up after d.
func syncWithin(n *Node, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return n.Sync(ctx)
}

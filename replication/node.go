package replication

// The Node: its lifecycle (Open, Close), the goroutines Open starts, and
// what a member reports about itself.

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/session"
)

// Errors returned by a Node.
var (
	// ErrClosed is returned for proposals made after or during Close.
	ErrClosed = errors.New("replication: node closed")
	// ErrNotReplicated is returned when a proposal's entry could not be
	// committed; the transaction may or may not have been applied.
	ErrNotReplicated = errors.New("replication: entry not replicated")
)

// Node is one replica: the raft instance, its stores and the FSM.
type Node struct {
	cfg      Config
	log      *slog.Logger
	raft     *raft.Raft
	logs     raft.LogStore      // read by WaitApplied
	snaps    raft.SnapshotStore // read by Backup (restore.go)
	fsm      *fsm
	waiters  *waiters
	applied  *appliedIndex
	closers  []func() error
	faults   *diskFaults // stops the member at a failed log write
	syncs    *logSyncs   // times the WAL's fsyncs
	peers    *peerSet
	peerLog  *peerLog // raft's complaints per member (peerlog.go)
	fwd      *forwarder
	health   peerHealth
	link     *leaderLink  // a follower's forwarding connection to the leader (health.go)
	forecast *forecaster  // the leader's failed-write forecasts (forecast.go)
	nudge    *commitNudge // an idle leader's barrier for its followers (nudge.go)
	// hintTrans and hints hand a follower's raft the commits its
	// forwarding responses report (commithint.go); nil for a standalone
	// server and a replaced transport.
	hintTrans *hintTransport
	hints     *commitHints
	// push receives the leader's commits on a follower (commitpush.go);
	// nil for a standalone member.
	push *pushReceiver
	// pushers are the members a leader pushes commits to (commitpush.go).
	pushers pushers
	digests digestLog   // recent digest records and the fence (digest.go)
	ident   identity    // this member's ensemble id (identity.go)
	foreign foreignLog  // rate limit of the refused-peer ERROR (identity.go)
	handoff handoffGate // holds new entries back during a hand-off (transfer.go)
	gate    voterGate   // whether the voters covered the listed participants (votergate.go)
	// snapGuard serializes snapshots with a restore (snapguard.go).
	snapGuard snapshotGuard

	// fwdMu guards the forwarding listener and the member connections it
	// accepted, closed together by Close.
	fwdMu    sync.Mutex
	fwdLn    net.Listener
	fwdConns map[net.Conn]struct{}

	nextID     atomic.Uint64
	entrySizes proposalSizes
	queue      proposalQueue // batcher.go
	inflight   chan inflightEntry
	stop       chan struct{}
	wg         sync.WaitGroup
	closeOnce  sync.Once

	// bootstrapped is set when Open found no raft state and created it;
	// startedEmpty when an ensemble member found none and looks for its
	// ensemble (discovery.go). Neither changes after Open.
	bootstrapped bool
	startedEmpty bool
	// checkpoints carries recorded checkpoints to the steward (steward.go).
	checkpoints chan DigestRecord
}

// Open starts a node, bootstrapping a fresh data directory on first use: a
// standalone server as a single voter, an ensemble member with the
// membership of its configuration (every member bootstraps the same
// membership, which raft allows). Call WaitReady before serving clients.
func Open(cfg Config) (*Node, error) { return open(cfg, seams{}) }

// open is Open with parts of the member's stack replaced (node_seams.go).
func open(cfg Config, s seams) (*Node, error) {
	if cfg.LogDir == "" {
		cfg.LogDir = cfg.DataDir
	}
	if cfg.ServerID <= 0 {
		cfg.ServerID = 1
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &Node{
		cfg:      cfg,
		log:      logger,
		waiters:  newWaiters(),
		applied:  newAppliedIndex(),
		inflight: make(chan inflightEntry, maxUnappliedEntries),
		stop:     make(chan struct{}),
		link:     newLeaderLink(),
		forecast: newForecaster(),
		nudge:    newCommitNudge(),

		checkpoints: make(chan DigestRecord, 16),
	}
	if cfg.ForwardTimeout <= 0 {
		n.cfg.ForwardTimeout = 10 * time.Second
	}
	threshold := cfg.FsyncWarningThreshold
	if threshold <= 0 {
		threshold = defaultFsyncWarningThreshold
	}
	n.syncs = &logSyncs{threshold: threshold, observe: cfg.OnLogSync, log: logger}
	n.faults = newDiskFaults(logger, cfg.Fatal)
	n.nextID.Store(uint64(cfg.ServerID)<<56 | uint64(time.Now().UnixNano())&(1<<48-1)<<8)
	n.peers = newPeerSet(cfg.Peers)
	n.fwd = newForwarder(n)
	n.fsm = newFSM(cfg.Tree, n.clustered(), cfg.Observer, n.waiters, n.applied)
	n.fsm.log, n.fsm.digests, n.fsm.ident, n.fsm.onCheckpoint = logger, &n.digests, &n.ident, n.noteCheckpoint
	if err := n.startRaft(s); err != nil {
		n.closeStores()
		return nil, err
	}
	n.queue.space = sync.NewCond(&n.queue.mu)
	n.queue.flush = n.flush
	n.wg.Add(1)
	go n.collectLoop()
	if !cfg.seeding {
		n.wg.Add(1)
		go n.steward()
	}
	if n.startedEmpty {
		n.wg.Add(1)
		go n.discover()
	}
	if n.clustered() {
		if !s.noCommitPush {
			n.push = &pushReceiver{n: n}
		}
		n.watchHealth()
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.nudge.run(n.raft, n.cfg.ForwardTimeout, n.stop) }()
		if n.push != nil {
			n.wg.Add(1)
			go n.receiveCommitPushes(n.push)
		}
	}
	snapAfter := int64(0) // none: raft's own count of entries alone
	if cfg.SnapshotThreshold > 0 {
		snapAfter = int64(cfg.SnapshotThreshold/2 + rand.Uint64N(cfg.SnapshotThreshold/2+1))
	}
	n.wg.Add(1)
	go n.snapshotLoop(snapAfter)
	return n, nil
}

// snapshotLoop takes a snapshot once threshold transactions were applied
// since the last one (never when it is 0); raft then compacts the log
// behind it. It also watches raft's record of its last snapshot
// (snapguard.go).
func (n *Node) snapshotLoop(threshold int64) {
	defer n.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		n.watchSnapshotRecord()
		if threshold == 0 || n.fsm.sinceSnapshot.Load() < threshold {
			continue
		}
		if err := n.snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			n.log.Warn("snapshot failed", "err", err)
		}
	}
}

// clustered reports whether this node is an ensemble member.
func (n *Node) clustered() bool { return len(n.cfg.Peers) > 0 }

// self returns this member's entry in the configuration.
func (n *Node) self() (Peer, bool) {
	for _, p := range n.cfg.Peers {
		if p.ID == n.cfg.ServerID {
			return p, true
		}
	}
	return Peer{}, false
}

func (n *Node) startRaft(s seams) error {
	rc := raftConfig(n.cfg, n.log)
	// One line per member going down and coming back, not one per retry;
	// a standalone server's self-election is no warning.
	n.peerLog = newPeerLog(raftSlog(n.log), time.Now, n.peers.idOf)
	rc.Logger = newPeerHCLogger(n.log, n.peerLog, !n.clustered())
	logs, stable, snaps, err := n.openStores(s)
	if err != nil {
		return err
	}
	if !s.memStores {
		logs = newRecentLogs(logs)
	}
	trans, boot, err := n.transport(rc, s.raftTransport)
	if err != nil {
		return err
	}
	if err := n.ident.load(stable); err != nil {
		return err
	}
	if err := checkMember(stable, n.cfg.ServerID); err != nil {
		return err
	}
	if !s.memStores {
		n.digests.loadFence(n.log, n.cfg.DataDir)
	}
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("replication: inspect state: %w", err)
	}
	switch {
	case has:
		n.log.Info("opening existing state", "ensemble", n.ident.get().String())
	case n.clustered() && !n.cfg.Join:
		// An empty member looks for its ensemble before it founds one.
		n.startedEmpty = true
	case !n.clustered():
		if err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, boot); err != nil {
			return fmt.Errorf("replication: bootstrap: %w", err)
		}
		n.bootstrapped = true
		n.log.Info("bootstrapped a new data directory", "dir", n.cfg.DataDir)
	}
	n.startHints(logs)
	r, err := raft.NewRaft(rc, n.fsm, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("replication: start raft: %w", err)
	}
	n.raft = r
	if n.hints != nil {
		n.hints.raft.Store(r)
	}
	n.logs = logs
	n.snaps = snaps
	if has {
		n.checkMembership()
	}
	n.serveForwardingNow()
	return nil
}

// Touch reports that sessions are alive: to the local OnTouch on the leader
// (or a standalone server), else to the leader over the forwarding port.
// Reports to an unreachable leader are dropped; the next batch repeats them.
func (n *Node) Touch(ids []int64) {
	if len(ids) == 0 {
		return
	}
	if !n.clustered() || n.IsLeader() {
		if n.cfg.OnTouch != nil {
			n.cfg.OnTouch(ids)
		}
		return
	}
	n.fwd.call(fwdTouch, encodeIDs(ids))
}

// LeaderCh delivers true when this member becomes leader and false when it
// stops leading (the latest value is kept if nobody is reading).
func (n *Node) LeaderCh() <-chan bool { return n.raft.LeaderCh() }

// Role is this member's role as ZooKeeper's Mode line names it.
func (n *Node) Role() string {
	if !n.clustered() {
		return "standalone"
	}
	switch n.raft.State() {
	case raft.Leader:
		return "leader"
	case raft.Follower:
		if n.isNonvoter() {
			return "observer"
		}
		return "follower"
	}
	return "looking"
}

// isNonvoter reports whether raft's current membership lists this member
// as a non-voter (an observer).
func (n *Node) isNonvoter() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == serverID(n.cfg.ServerID) {
			return s.Suffrage == raft.Nonvoter
		}
	}
	self, _ := n.self()
	return self.Observer
}

// Leader returns the current leader's server id, or 0 when none is known.
func (n *Node) Leader() int64 {
	_, id := n.raft.LeaderWithID()
	v, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// ProposalSizes returns the last, smallest and largest log entry this
// member proposed as leader, in bytes (-1 before any).
func (n *Node) ProposalSizes() (last, min, max int64) { return n.entrySizes.get() }

// Clustered reports whether this node is an ensemble member.
func (n *Node) Clustered() bool { return n.clustered() }

// Tree returns the current znode tree. The pointer changes when a snapshot
// is restored; do not keep it across requests.
func (n *Node) Tree() *datatree.Tree { return n.fsm.tree.Load() }

// Sessions returns the current replicated session table.
func (n *Node) Sessions() *session.Table { return n.fsm.sessions.Load() }

// LastZxid returns the zxid of the last applied transaction.
func (n *Node) LastZxid() int64 { return n.fsm.lastZxid.Load() }

// IsLeader reports whether this member currently leads.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Snapshot forces a snapshot now (used by tests and operators).
func (n *Node) Snapshot() error { return n.snapshot().Error() }

// Stats returns raft's statistics map (for diagnostics).
func (n *Node) Stats() map[string]string { return n.raft.Stats() }

// Close stops the batcher, shuts raft down and closes the stores. In-flight
// proposals fail with ErrClosed or ErrNotReplicated.
func (n *Node) Close() error {
	var err error
	n.closeOnce.Do(func() {
		close(n.stop)
		n.fwd.close()
		n.closeListeners()
		n.closeQueue()
		n.wg.Wait()
		if n.raft != nil {
			err = n.raft.Shutdown().Error()
		}
		n.closeStores()
	})
	return err
}

package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"go.etcd.io/bbolt"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Errors returned by a Node.
var (
	// ErrClosed is returned for proposals made after or during Close.
	ErrClosed = errors.New("replication: node closed")
	// ErrNotReplicated is returned when a proposal's entry could not be
	// committed; the transaction may or may not have been applied.
	ErrNotReplicated = errors.New("replication: entry not replicated")
)

// Config configures a Node.
type Config struct {
	// ServerID is this member's id (1 for a standalone server).
	ServerID int64
	// DataDir holds raft snapshots; LogDir holds the raft log (raft.db).
	// LogDir defaults to DataDir.
	DataDir, LogDir string
	// InMemory keeps log, stable store and snapshots in memory: nothing
	// survives Close. For a throwaway member embedded in another program
	// (tests, the benchmark's in-process server). Seed refuses it.
	InMemory bool
	// ForceSync fsyncs the log before an entry counts as written. Turning it
	// off loses the durability guarantee; it exists for benchmarks.
	ForceSync bool
	// SnapshotThreshold is zoo.cfg snapCount: a snapshot is taken after a
	// random number of transactions between half of it and all of it (so
	// members do not all snapshot at once); TrailingLogs log entries stay
	// after it.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// Tree configures the znode tree.
	Tree datatree.Config
	// Observer is told about every applied transaction (may be nil).
	Observer Observer
	// Peers lists every member of an ensemble, this one included; empty
	// means a standalone (single-voter) server.
	Peers []Peer
	// ListenAll binds the peer ports on all interfaces
	// (quorumListenOnAllIPs) instead of the configured host.
	ListenAll bool
	// TickTime is the base time unit; raft's election and heartbeat
	// timeouts derive from it in an ensemble (see raftConfig).
	TickTime time.Duration
	// ForwardTimeout bounds one write to or dial of the leader's forwarding
	// port (initLimit x tickTime in an ensemble).
	ForwardTimeout time.Duration
	// OnTouch receives session liveness reports (on the leader), from this
	// member and from the others.
	OnTouch func(ids []int64)
	// LogStore selects the raft log and stable store: "wal"
	// (hashicorp/raft-wal: append-only segment files) or "boltdb"
	// (raft-boltdb on bbolt). Empty means the store already in the data
	// directory, and wal for a new one (see chooseLogStore).
	LogStore string
	// RaftTransport, when set, carries raft traffic instead of TCP on the
	// quorum port (tests use raft's in-memory transport; Peer.RaftAddr must
	// then be the transport's address). Forwarding still uses TCP.
	RaftTransport raft.Transport
	// Network carries member connections (nil: plain TCP); peernet's
	// secures them with TLS and SASL.
	Network Network
	// Join starts a member that is not in the ensemble yet: it does not
	// bootstrap and waits for the leader to add it (reconfig).
	Join bool
	// ForceNewEnsemble lets an ensemble member that starts empty bootstrap
	// a new ensemble although some listed members did not answer
	// (discovery.go); members that answered must all be empty still.
	ForceNewEnsemble bool
	// DigestInterval is how often the leader appends a digest checkpoint
	// while the tree changes (digest.go); 0 means 2 s.
	DigestInterval time.Duration

	// seeding is set by Seed: no steward runs, so nothing is applied
	// while Seed installs its state.
	seeding bool
	// FsyncWarningThreshold is zoo.cfg fsync.warningthresholdms: a log
	// fsync that takes longer is counted (SlowLogSyncs) and logged.
	// 0 means ZooKeeper's default, 1 s.
	FsyncWarningThreshold time.Duration
	// OnLogSync, when set, receives the duration of every log fsync.
	OnLogSync func(time.Duration)
	// Logger receives structured logs (nil: discarded).
	Logger *slog.Logger
	// Fatal stops the member after a fault it must not survive: a failed
	// write or fsync of its log (diskfault.go). The fault is logged before.
	// Nil means exit the process with status 1.
	Fatal func(error)
	// WrapLogStore, when set, wraps the raft log store as opened, inside
	// the member's own layers (disk-fault handling, the recent-entries
	// cache): an embedding program can observe or fail the log's calls
	// (the disk-fault tests fail raft-boltdb's appends with it). The
	// wrapper must keep raft's LogStore contract. Nil: no wrapper.
	WrapLogStore func(raft.LogStore) raft.LogStore
	// WALFileSystem is the file system raft-wal's segments go through
	// (nil: the operating system's). An embedding program can observe or
	// fail the log's file calls with it (the disk-fault and power-loss
	// tests do); the member's fsync and fault handling wraps it.
	WALFileSystem types.VFS
}

// maxBatchTxns and maxBatchBytes bound one log entry built by the batcher.
// A single transaction larger than maxBatchBytes still gets an entry alone.
// maxAppendEntries bounds the entries raft writes in one StoreLogs call:
// raft-wal encodes such a call into one buffer that it keeps until its
// segment is full, so their product bounds the memory the log writer
// holds after a flood of large writes (with 256 × 4 MiB, 240 MB stayed
// in use after 150 MB of 512 KiB setData requests).
const (
	maxBatchTxns     = 1024
	maxBatchBytes    = 1 << 20
	maxAppendEntries = 32
)

// proposal is a transaction waiting for the batcher. A transaction
// forwarded by another member arrives encoded; a local one is encoded by
// commitBatch straight into the log entry, which spares a copy of its data.
// id names the local waiter (0: none, for forwarded transactions); done, if
// set, learns whether the entry holding it was committed.
type proposal struct {
	encoded []byte      // the encoding of a forwarded transaction, else nil
	txn     *txnlog.Txn // the local transaction; nil when forwarded
	size    int         // len(encoded), or txn's estimated encoded size
	id      uint64
	done    func(err error, index uint64) // index: the entry's, when committed
}

// appendTo appends the transaction's encoding to dst.
func (p *proposal) appendTo(dst []byte) []byte {
	if p.encoded != nil {
		return append(dst, p.encoded...)
	}
	return txnlog.EncodeTxn(dst, p.txn)
}

// Node is one replica: the raft instance, its stores and the FSM.
type Node struct {
	cfg      Config
	log      *slog.Logger
	raft     *raft.Raft
	logs     raft.LogStore // read by WaitApplied
	fsm      *fsm
	waiters  *waiters
	applied  *appliedIndex
	closers  []func() error
	faults   *diskFaults // stops the member at a failed log write
	syncs    *logSyncs   // times the WAL's fsyncs
	peers    *peerSet
	fwd      *forwarder
	health   peerHealth
	link     *leaderLink  // a follower's forwarding connection to the leader (health.go)
	forecast *forecaster  // the leader's failed-write forecasts (forecast.go)
	nudge    *commitNudge // an idle leader's barrier for its followers (nudge.go)
	digests  digestLog    // recent digest records and the fence (digest.go)
	ident    identity     // this member's ensemble id (identity.go)
	foreign  foreignLog   // rate limit of the refused-peer ERROR (identity.go)

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

// future is what the collector waits on: a raft apply or a forwarded batch.
type future interface{ Error() error }

type inflightEntry struct {
	future future
	props  []proposal
	// forwarded: the entry, built on this leader, carries writes forwarded
	// by another member, whose clients wait for the commit (nudge.go).
	forwarded bool
	// term and marks: what the entry, built on this leader in term, marked
	// for the forecaster (forecast.go).
	term  uint64
	marks forecastMarks
}

// Open starts a node, bootstrapping a fresh data directory on first use: a
// standalone server as a single voter, an ensemble member with the
// membership of its configuration (every member bootstraps the same
// membership, which raft allows). Call WaitReady before serving clients.
func Open(cfg Config) (*Node, error) {
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
	if err := n.startRaft(); err != nil {
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
		n.watchHealth()
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.nudge.run(n.raft, n.cfg.ForwardTimeout, n.stop) }()
	}
	if cfg.SnapshotThreshold > 0 {
		n.wg.Add(1)
		go n.snapshotLoop(int64(cfg.SnapshotThreshold/2 + rand.Uint64N(cfg.SnapshotThreshold/2+1)))
	}
	return n, nil
}

// snapshotLoop takes a snapshot once threshold transactions were applied
// since the last one; raft then compacts the log behind it.
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
		if n.fsm.sinceSnapshot.Load() < threshold {
			continue
		}
		if err := n.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
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

func (n *Node) startRaft() error {
	rc := raftConfig(n.cfg, n.log)
	logs, stable, snaps, err := n.openStores()
	if err != nil {
		return err
	}
	if !n.cfg.InMemory {
		logs = newRecentLogs(logs)
	}
	trans, boot, err := n.transport(rc)
	if err != nil {
		return err
	}
	if err := n.ident.load(stable); err != nil {
		return err
	}
	if err := checkMember(stable, n.cfg.ServerID); err != nil {
		return err
	}
	if !n.cfg.InMemory {
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
	r, err := raft.NewRaft(rc, n.fsm, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("replication: start raft: %w", err)
	}
	n.raft = r
	n.logs = logs
	if has {
		n.checkMembership()
	}
	n.serveForwardingNow()
	return nil
}

// transport returns the raft transport and the membership to bootstrap: an
// in-memory transport for a standalone server (it has no peers), TCP on the
// quorum port for an ensemble member, with peer addresses resolved from this
// member's own configuration. It also starts the forwarding listener.
func (n *Node) transport(rc *raft.Config) (raft.Transport, raft.Configuration, error) {
	if !n.clustered() {
		addr, trans := raft.NewInmemTransport(raft.ServerAddress(rc.LocalID))
		n.closers = append(n.closers, trans.Close)
		return trans, raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: addr}}}, nil
	}
	self, ok := n.self()
	if !ok {
		return nil, raft.Configuration{}, fmt.Errorf("replication: server id %d is not in the ensemble configuration", n.cfg.ServerID)
	}
	trans, err := n.raftTransport(rc, self)
	if err != nil {
		return nil, raft.Configuration{}, err
	}
	trans = refusePipeline(trans) // transport.go
	if err := n.listenForwarding(self); err != nil {
		return nil, raft.Configuration{}, err
	}
	return trans, n.peers.configuration(n.cfg.Peers), nil
}

// raftTransport returns the configured transport, or TCP on the quorum port.
func (n *Node) raftTransport(rc *raft.Config, self Peer) (raft.Transport, error) {
	if n.cfg.RaftTransport != nil {
		return n.cfg.RaftTransport, nil
	}
	raftBind, err := bindAddr(self.RaftAddr, n.cfg.ListenAll)
	if err != nil {
		return nil, err
	}
	advertise, err := net.ResolveTCPAddr("tcp", self.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("replication: resolve %s: %w", self.RaftAddr, err)
	}
	ln, err := n.network().Listen(raftBind)
	if err != nil {
		return nil, fmt.Errorf("replication: listen on quorum port %s: %w", raftBind, err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:                &streamLayer{Listener: ln, network: n.network(), advertise: advertise},
		ServerAddressProvider: n.peers,
		Logger:                rc.Logger,
		MaxPool:               3,
		Timeout:               n.cfg.ForwardTimeout,
	})
	n.closers = append(n.closers, trans.Close)
	return trans, nil
}

// listenForwarding opens the election port for forwarding from members.
func (n *Node) listenForwarding(self Peer) error {
	fwdBind, err := bindAddr(self.ForwardAddr, n.cfg.ListenAll)
	if err != nil {
		return err
	}
	ln, err := n.network().Listen(fwdBind)
	if err != nil {
		return fmt.Errorf("replication: listen on election port %s: %w", fwdBind, err)
	}
	n.fwdMu.Lock()
	n.fwdLn, n.fwdConns = ln, make(map[net.Conn]struct{})
	n.fwdMu.Unlock()
	return nil
}

// serveForwardingNow starts accepting on the election port, once raft
// runs: a member's forwarded request asks raft at once. (Until then
// members wait in the listener's backlog.)
func (n *Node) serveForwardingNow() {
	n.fwdMu.Lock()
	ln := n.fwdLn
	n.fwdMu.Unlock()
	if ln != nil {
		n.wg.Add(1)
		go n.serveForwarding(ln)
	}
}

// raftConfig maps our settings to hashicorp/raft's. A standalone member has
// no peers to wait for, so its timeouts are short: it elects itself quickly
// after a restart. An ensemble member uses a quarter of tickTime (at least
// 250 ms) as its heartbeat and election timeout (raft randomizes each
// between 1x and 2x): members that start together elect a leader within
// about a second, and a dead leader is replaced about as fast. (One whole
// tick made a 3-member restart wait 2-4 s for its election.) The leader's
// lease, after which a leader that has heard from no quorum steps down, is
// as long as the followers' heartbeat timeout, the most raft allows: at
// half of it (raft's ratio), a leader whose process was starved of CPU for
// 350 ms on a loaded machine stepped down while its followers still
// followed it, and the ensemble had no leader until the next election.
func raftConfig(cfg Config, logger *slog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.ServerID)
	rc.HeartbeatTimeout = 20 * time.Millisecond
	rc.ElectionTimeout = 20 * time.Millisecond
	rc.LeaderLeaseTimeout = 10 * time.Millisecond
	if len(cfg.Peers) > 0 {
		timeout := max(cfg.TickTime/4, 250*time.Millisecond)
		rc.HeartbeatTimeout = timeout
		rc.ElectionTimeout = timeout
		rc.LeaderLeaseTimeout = timeout
	}
	// Followers learn the commit index from raft's appends: with the next
	// entries, or, when none follow, from the append an idle leader sends
	// each follower every CommitTimeout (randomized up to twice that). The
	// leader's nudge (nudge.go) tells them at once after the last write of
	// a burst, so CommitTimeout is only the fallback: raft's default.
	rc.CommitTimeout = raftCommitTimeout
	rc.MaxAppendEntries = maxAppendEntries
	rc.BatchApplyCh = true
	if cfg.SnapshotThreshold > 0 {
		// A backstop: log entries hold batches, so this count of entries
		// is never reached before snapshotLoop's count of transactions.
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	rc.TrailingLogs = cfg.TrailingLogs
	if rc.TrailingLogs == 0 {
		rc.TrailingLogs = 1024
	}
	rc.SnapshotInterval = 10 * time.Second
	rc.Logger = newHCLogger(logger)
	return rc
}

// raftCommitTimeout is raft's CommitTimeout for every member, raft's
// default. At 5 ms an idle ensemble's appends were most of its CPU.
const raftCommitTimeout = 50 * time.Millisecond

func (n *Node) openStores() (raft.LogStore, raft.StableStore, raft.SnapshotStore, error) {
	if n.cfg.InMemory {
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
	logs, stable, path, err := n.openLogStore(kind, logDir)
	if err != nil {
		return nil, nil, nil, err
	}
	if n.cfg.WrapLogStore != nil {
		logs = n.cfg.WrapLogStore(logs)
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
	if err := verifyLog(logs, path); err != nil {
		return nil, nil, nil, err
	}
	if err := snaps.checkAtOpen(logs); err != nil {
		return nil, nil, nil, err
	}
	return logs, stable, snaps, nil
}

// openLogStore opens the log and stable store of the kind chooseLogStore
// chose in logDir, and returns the path of the files they live in.
func (n *Node) openLogStore(kind, logDir string) (raft.LogStore, raft.StableStore, string, error) {
	if kind == "wal" {
		walDir := filepath.Join(logDir, "wal")
		if err := os.MkdirAll(walDir, 0o750); err != nil {
			return nil, nil, "", fmt.Errorf("replication: create %s: %w", walDir, err)
		}
		logs, stable, err := n.openWAL(walDir)
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
// commit stops the member (crashStopFS, crashStopMeta).
func (n *Node) openWAL(walDir string) (raft.LogStore, raft.StableStore, error) {
	// The WAL does not close its metadata database itself; it is ours
	// to close after the WAL (closers run in reverse order).
	bolt := &metadb.BoltMetaDB{}
	n.closers = append(n.closers, bolt.Close)
	var meta types.MetaStore = crashStopMeta{MetaStore: bolt, path: filepath.Join(walDir, metadb.FileName), faults: n.faults}
	vfs := n.cfg.WALFileSystem
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
	store, err := wal.Open(walDir, wal.WithMetaStore(meta), wal.WithSegmentFiler(segment.NewFiler(walDir, vfs)))
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

// WaitReady waits until this member can serve: a standalone server until it
// leads and has applied its whole log; an ensemble member until a leader is
// known and it has applied everything the leader had, so reads see all
// acknowledged writes (and, when it started empty, it knows its ensemble).
func (n *Node) WaitReady(ctx context.Context) error {
	if n.clustered() {
		for {
			// A member that started empty serves only once it has the
			// ensemble's state, which names the ensemble.
			joined := !n.startedEmpty || !n.ident.get().IsZero()
			if _, id := n.raft.LeaderWithID(); id != "" && joined {
				if err := n.Sync(ctx); err == nil {
					return nil
				} else if ctx.Err() != nil {
					return err
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("replication: no leader: %w", ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	for n.raft.State() != raft.Leader {
		select {
		case <-ctx.Done():
			return fmt.Errorf("replication: no leader: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := n.raft.Barrier(0).Error(); err != nil {
		return fmt.Errorf("replication: barrier: %w", err)
	}
	return nil
}

// Submit hands a transaction to the batcher (batcher.go) and returns the
// channel its Outcome arrives on. Transactions submitted by one goroutine
// are applied in submission order. Submit may itself append the waiting
// transactions to the log, and blocks while the batcher's queue is full.
func (n *Node) Submit(t *txnlog.Txn) <-chan Outcome {
	if t.RequestID == 0 {
		t.RequestID = n.nextID.Add(1)
	}
	if t.Owner == 0 {
		t.Owner = n.cfg.ServerID
	}
	ch := n.waiters.register(t.RequestID)
	local := *t // the caller keeps t; the batcher encodes this copy
	n.enqueue(proposal{txn: &local, size: txnlog.SizeHint(&local), id: t.RequestID})
	return ch
}

// NewRequestID returns a fresh request id for a transaction the caller
// wants to know the id of before Submit (Submit assigns one otherwise).
func (n *Node) NewRequestID() uint64 { return n.nextID.Add(1) }

// commitBatch appends a batch to the log (leader) or forwards it
// (follower), and returns what the collector needs to see it through.
func (n *Node) commitBatch(batch []proposal) inflightEntry {
	if !n.clustered() || n.IsLeader() {
		term := n.raft.CurrentTerm()
		marks := n.forecast.screen(batch, n.fsm.tree.Load(), term, n.raft.LastIndex(), n.forecastBarrier)
		size := 0
		for _, p := range batch {
			size += p.size
		}
		now := time.Now().UnixMilli()
		flags := byte(0)
		if !n.clustered() {
			flags = txnlog.FlagStandalone
		}
		entry := txnlog.EntryHeader(make([]byte, 0, size+20), flags, now, len(batch))
		for i := range batch {
			entry = batch[i].appendTo(entry)
		}
		entry = txnlog.Seal(entry)
		n.entrySizes.record(len(entry))
		return inflightEntry{future: n.raft.Apply(entry, 0), props: batch, term: term, marks: marks,
			forwarded: carriesForwarded(batch)}
	}
	return inflightEntry{future: &fwdFuture{ch: n.fwd.call(fwdPropose, encodeBatch(batch))}, props: batch}
}

// carriesForwarded reports whether batch holds a transaction forwarded by
// another member.
func carriesForwarded(batch []proposal) bool {
	for _, p := range batch {
		if p.encoded != nil {
			return true
		}
	}
	return false
}

// enqueueForwarded puts transactions forwarded by another member into this
// leader's batcher. It returns a channel that reports whether all of them
// were committed and, for the reply once they were, a function giving the
// index of the entry that holds the last of them (8 bytes). The forwarding
// follower does not act on it: its proposers' waiters fire when its own
// FSM applies the entry, once raft has told it of the commit.
func (n *Node) enqueueForwarded(txns [][]byte) (<-chan error, func() []byte) {
	ch := make(chan error, 1)
	if len(txns) == 0 {
		ch <- nil
		return ch, nil
	}
	var mu sync.Mutex
	remaining, first, last := len(txns), error(nil), uint64(0)
	done := func(err error, index uint64) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && first == nil {
			first = err
		}
		last = max(last, index)
		if remaining--; remaining == 0 {
			ch <- first
		}
	}
	props := make([]proposal, len(txns))
	for i, t := range txns {
		props[i] = proposal{encoded: t, size: len(t), done: done}
	}
	n.enqueue(props...)
	position := func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return binary.BigEndian.AppendUint64(nil, last)
	}
	return ch, position
}

// collectLoop waits for each entry's future in order and fails the
// proposals of entries that were not committed. The proposals of committed
// entries hear from the FSM, which triggers their waiters as it applies.
// When this leader has committed entries and nothing else is queued, it
// asks for a nudge (nudge.go), so that the followers learn the commit
// without waiting for raft's CommitTimeout: an urgent one when a
// follower's forwarded writes are among them.
func (n *Node) collectLoop() {
	defer n.wg.Done()
	// committed: this leader committed entries since the last nudge;
	// forwarded: some of them carried a follower's writes.
	committed, forwarded := false, false
	for e := range n.inflight {
		var index uint64 // the entry's, when this leader committed it
		err := e.future.Error()
		n.forecast.unmark(e.term, e.marks)
		if err != nil {
			n.log.Warn("writes not committed", "err", err, "txns", len(e.props))
		} else if f, ok := e.future.(raft.IndexFuture); ok {
			index = f.Index()
			committed, forwarded = true, forwarded || e.forwarded
		}
		if idle := n.queue.done(); idle && committed && n.clustered() {
			n.nudge.want(n.raft.LastIndex(), forwarded)
			committed, forwarded = false, false
		}
		for _, p := range e.props {
			if p.done != nil {
				p.done(err, index)
			}
			if err != nil {
				n.waiters.trigger(p.id, Outcome{Err: fmt.Errorf("%w: %v", ErrNotReplicated, err)})
			}
		}
	}
}

// Sync waits until this member has applied every entry the leader had in
// its log when Sync was called: a read after Sync sees every write committed
// before it.
func (n *Node) Sync(ctx context.Context) error {
	if !n.clustered() || n.IsLeader() {
		return n.WaitApplied(ctx, n.raft.LastIndex())
	}
	var res fwdResult
	select {
	case res = <-n.fwd.call(fwdSync, nil):
	case <-ctx.Done():
		return ctx.Err()
	}
	if res.err != nil {
		return fmt.Errorf("replication: sync with leader: %w", res.err)
	}
	if len(res.body) != 8 {
		return errors.New("replication: malformed sync response")
	}
	return n.WaitApplied(ctx, binary.BigEndian.Uint64(res.body))
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

// WaitApplied waits until the FSM has applied every entry up to index.
// Raft reports an entry applied once it has handed it to the FSM, not when
// the FSM is done with it, and barrier and configuration entries never
// reach the FSM. So it waits for raft to pass index, then for the FSM to
// apply the last command entry at or before index.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	for dispatched := false; ; {
		cur, wake := n.applied.get()
		if cur >= index {
			return nil
		}
		if !dispatched && n.raft.AppliedIndex() >= index {
			dispatched = true
			index = n.lastCommandUpTo(index, cur)
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.stop:
			return ErrClosed
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lastCommandUpTo returns the index of the last command entry at or before
// index and after applied, or applied when there is none (or the entries
// were compacted into a snapshot, which the FSM already holds).
func (n *Node) lastCommandUpTo(index, applied uint64) uint64 {
	if n.logs == nil {
		return index
	}
	for i := index; i > applied; i-- {
		var l raft.Log
		if err := n.logs.GetLog(i, &l); err != nil {
			return applied
		}
		if l.Type == raft.LogCommand {
			return i
		}
	}
	return applied
}

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
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

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

// closeListeners stops the forwarding listener and its connections.
func (n *Node) closeListeners() {
	n.fwdMu.Lock()
	defer n.fwdMu.Unlock()
	if n.fwdLn != nil {
		n.fwdLn.Close()
	}
	for c := range n.fwdConns {
		c.Close()
	}
	n.fwdConns = nil
}

// trackForwardConn registers an accepted member connection; false when the
// node is closing.
func (n *Node) trackForwardConn(c net.Conn, add bool) bool {
	n.fwdMu.Lock()
	defer n.fwdMu.Unlock()
	if n.fwdConns == nil {
		return false
	}
	if add {
		n.fwdConns[c] = struct{}{}
	} else {
		delete(n.fwdConns, c)
	}
	return true
}

func (n *Node) closeStores() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		if err := n.closers[i](); err != nil {
			n.log.Warn("close store", "err", err)
		}
	}
	n.closers = nil
}

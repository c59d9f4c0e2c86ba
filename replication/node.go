package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

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
	// InMemory keeps log, stable store and snapshots in memory (tests).
	InMemory bool
	// ForceSync fsyncs the log before an entry counts as written. Turning it
	// off loses the durability guarantee; it exists for benchmarks.
	ForceSync bool
	// SnapshotThreshold is the number of log entries after which a snapshot
	// is taken (zoo.cfg snapCount); TrailingLogs entries stay after it.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// Tree configures the znode tree.
	Tree datatree.Config
	// Observer is told about every applied transaction (may be nil).
	Observer Observer
	// Logger receives structured logs (nil: discarded).
	Logger *slog.Logger
}

// maxBatchTxns and maxBatchBytes bound one log entry built by the batcher.
// A single transaction larger than maxBatchBytes still gets an entry alone.
const (
	maxBatchTxns  = 1024
	maxBatchBytes = 4 << 20
)

// proposal is a transaction waiting for the batcher.
type proposal struct {
	encoded []byte
	id      uint64
}

// Node is one replica: the raft instance, its stores and the FSM.
type Node struct {
	cfg     Config
	log     *slog.Logger
	raft    *raft.Raft
	fsm     *fsm
	waiters *waiters
	applied *appliedIndex
	closers []func() error

	nextID    atomic.Uint64
	proposals chan proposal
	inflight  chan inflightEntry
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

type inflightEntry struct {
	future raft.ApplyFuture
	ids    []uint64
}

// Open starts a standalone (single-voter) node, bootstrapping a fresh data
// directory on first use. Call WaitReady before serving clients.
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
		cfg:       cfg,
		log:       logger,
		waiters:   newWaiters(),
		applied:   newAppliedIndex(),
		proposals: make(chan proposal, 4096),
		inflight:  make(chan inflightEntry, 256),
		stop:      make(chan struct{}),
	}
	n.nextID.Store(uint64(cfg.ServerID)<<56 | uint64(time.Now().UnixNano())&(1<<48-1)<<8)
	n.fsm = newFSM(cfg.Tree, false, cfg.Observer, n.waiters, n.applied)
	if err := n.startRaft(); err != nil {
		n.closeStores()
		return nil, err
	}
	n.wg.Add(2)
	go n.batchLoop()
	go n.collectLoop()
	return n, nil
}

func (n *Node) startRaft() error {
	rc := raftConfig(n.cfg, n.log)
	logs, stable, snaps, err := n.openStores(rc)
	if err != nil {
		return err
	}
	addr, trans := raft.NewInmemTransport(raft.ServerAddress(rc.LocalID))
	n.closers = append(n.closers, trans.Close)
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("replication: inspect state: %w", err)
	}
	if !has {
		boot := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: addr}}}
		if err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, boot); err != nil {
			return fmt.Errorf("replication: bootstrap: %w", err)
		}
		n.log.Info("bootstrapped a new data directory", "dir", n.cfg.DataDir)
	}
	r, err := raft.NewRaft(rc, n.fsm, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("replication: start raft: %w", err)
	}
	n.raft = r
	return nil
}

// raftConfig maps our settings to hashicorp/raft's. A standalone member has
// no peers to wait for, so its timeouts are short: it elects itself quickly
// after a restart.
func raftConfig(cfg Config, logger *slog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(strconv.FormatInt(cfg.ServerID, 10))
	rc.HeartbeatTimeout = 100 * time.Millisecond
	rc.ElectionTimeout = 100 * time.Millisecond
	rc.LeaderLeaseTimeout = 50 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
	rc.MaxAppendEntries = 256
	rc.BatchApplyCh = true
	if cfg.SnapshotThreshold > 0 {
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

func (n *Node) openStores(rc *raft.Config) (raft.LogStore, raft.StableStore, raft.SnapshotStore, error) {
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
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(logDir, "raft.db"), NoSync: !n.cfg.ForceSync})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("replication: open log store: %w", err)
	}
	n.closers = append(n.closers, store.Close)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(snapDir, 2, rc.Logger)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("replication: open snapshot store: %w", err)
	}
	return store, store, snaps, nil
}

// WaitReady waits until this member leads and has applied every entry of its
// log, so reads see all acknowledged writes.
func (n *Node) WaitReady(ctx context.Context) error {
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

// Submit hands a transaction to the batcher and returns the channel its
// Outcome arrives on. Transactions submitted by one goroutine are applied in
// submission order. Submit blocks only while the batcher's queue is full.
func (n *Node) Submit(t *txnlog.Txn) <-chan Outcome {
	t.RequestID = n.nextID.Add(1)
	ch := n.waiters.register(t.RequestID)
	p := proposal{encoded: txnlog.EncodeTxn(nil, t), id: t.RequestID}
	select {
	case <-n.stop:
		n.waiters.trigger(p.id, Outcome{Err: ErrClosed})
		return ch
	default:
	}
	select {
	case n.proposals <- p:
		// Close may have drained the queue just before this send; whatever
		// is left after the batcher stopped fails here.
		select {
		case <-n.stop:
			n.wg.Wait()
			n.failQueued()
		default:
		}
	case <-n.stop:
		n.waiters.trigger(p.id, Outcome{Err: ErrClosed})
	}
	return ch
}

// batchLoop packs queued proposals into log entries: whatever is waiting when
// an entry is started goes into it (group commit), and raft batches the
// entries it receives into one disk write.
func (n *Node) batchLoop() {
	defer n.wg.Done()
	defer close(n.inflight)
	var buf [][]byte
	for {
		var first proposal
		select {
		case first = <-n.proposals:
		case <-n.stop:
			n.failQueued()
			return
		}
		batch := []proposal{first}
		size := len(first.encoded)
	drain:
		for len(batch) < maxBatchTxns && size < maxBatchBytes {
			select {
			case p := <-n.proposals:
				batch = append(batch, p)
				size += len(p.encoded)
			default:
				break drain
			}
		}
		buf = buf[:0]
		ids := make([]uint64, len(batch))
		for i, p := range batch {
			buf = append(buf, p.encoded)
			ids[i] = p.id
		}
		entry := txnlog.AssembleEntry(make([]byte, 0, size+16), time.Now().UnixMilli(), buf)
		n.inflight <- inflightEntry{future: n.raft.Apply(entry, 0), ids: ids}
	}
}

// collectLoop waits for each entry's future in order and fails the
// proposals of entries that were not committed.
func (n *Node) collectLoop() {
	defer n.wg.Done()
	for e := range n.inflight {
		if err := e.future.Error(); err != nil {
			n.log.Warn("log entry not committed", "err", err, "txns", len(e.ids))
			for _, id := range e.ids {
				n.waiters.trigger(id, Outcome{Err: fmt.Errorf("%w: %v", ErrNotReplicated, err)})
			}
		}
	}
}

func (n *Node) failQueued() {
	for {
		select {
		case p := <-n.proposals:
			n.waiters.trigger(p.id, Outcome{Err: ErrClosed})
		default:
			return
		}
	}
}

// Sync waits until this member has applied every entry the leader had in
// its log when Sync was called: a read after Sync sees every write committed
// before it.
func (n *Node) Sync(ctx context.Context) error {
	return n.WaitApplied(ctx, n.raft.LastIndex())
}

// WaitApplied waits until the applied index reaches index.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	for {
		cur, wake := n.applied.get()
		if cur >= index || n.raft.AppliedIndex() >= index {
			return nil
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
		n.wg.Wait()
		n.failQueued()
		if n.raft != nil {
			err = n.raft.Shutdown().Error()
		}
		n.closeStores()
	})
	return err
}

func (n *Node) closeStores() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		if err := n.closers[i](); err != nil {
			n.log.Warn("close store", "err", err)
		}
	}
	n.closers = nil
}

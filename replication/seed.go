package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// seedTimeout bounds Seed's wait for its standalone node to lead.
const seedTimeout = time.Minute

// ErrNotFresh is returned by Seed for directories that hold raft state.
var ErrNotFresh = errors.New("replication: the data directory already holds raft state")

// Seed creates the data directories of cfg (a standalone server's, holding
// no raft state) with tree as their state, lastZxid as the last zxid and no
// sessions: it opens a node on them, which bootstraps them as a new server
// does, makes tree its FSM state and has raft take a snapshot, written by
// the FSM and the snapshot store as every snapshot is; the snapshot is then
// read back. The directories open afterwards as any server's. Seed returns
// the snapshot's size in bytes; the tree is the node's from the call on.
func Seed(cfg Config, tree *datatree.Tree, lastZxid int64) (int64, error) {
	if len(cfg.Peers) > 0 || cfg.Join {
		return 0, errors.New("replication: seed needs a standalone server's data directories")
	}
	cfg.SnapshotThreshold = 0
	cfg.seeding = true
	faults := make(chan error, 1)
	cfg.Fatal = func(err error) {
		select {
		case faults <- err:
		default:
		}
	}
	n, err := Open(cfg)
	if err != nil {
		return 0, err
	}
	size, err := n.seed(tree, lastZxid)
	if cerr := n.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("replication: seed: close: %w", cerr)
	}
	select {
	case fault := <-faults:
		return 0, fmt.Errorf("replication: seed: %w", fault)
	default:
	}
	return size, err
}

// seed installs the state and snapshots it.
func (n *Node) seed(tree *datatree.Tree, lastZxid int64) (int64, error) {
	if !n.bootstrapped {
		return 0, ErrNotFresh
	}
	ctx, cancel := context.WithTimeout(context.Background(), seedTimeout)
	defer cancel()
	if err := n.WaitReady(ctx); err != nil {
		return 0, err
	}
	nodes := tree.NodeCount()
	// Nothing is applied in a fresh directory with no clients (and no
	// steward while seeding): the FSM goroutine is idle, and raft's
	// Snapshot below reaches it through raft's channels, after the
	// install. The state is a new ensemble's: it gets its identity here.
	id := txnlog.NewEnsembleID()
	n.fsm.install(&txnlog.SnapshotState{
		SnapshotHeader: txnlog.SnapshotHeader{LastZxid: lastZxid, AppliedIndex: n.fsm.last, Ensemble: id},
		Sessions:       session.NewTable(),
		Tree:           tree,
	})
	// The log's entries (the bootstrap's configuration, a no-op) do not
	// rebuild the installed state: compact all of them into the snapshot,
	// so that a member joining this data directory's ensemble later is
	// sent the snapshot, never a replay of the log from its start.
	reload := n.raft.ReloadableConfig()
	reload.TrailingLogs = 0
	if err := n.raft.ReloadConfig(reload); err != nil {
		return 0, fmt.Errorf("replication: seed: %w", err)
	}
	snap := n.raft.Snapshot()
	if err := snap.Error(); err != nil {
		return 0, fmt.Errorf("replication: seed: snapshot: %w", err)
	}
	meta, rc, err := snap.Open()
	if err != nil {
		return 0, fmt.Errorf("replication: seed: open the snapshot: %w", err)
	}
	defer rc.Close()
	st, err := txnlog.ReadSnapshot(rc, n.cfg.Tree)
	if err != nil {
		return 0, fmt.Errorf("replication: seed: read the snapshot back: %w", err)
	}
	if st.LastZxid != lastZxid || st.Tree.NodeCount() != nodes || st.Ensemble != id || n.ident.get() != id {
		return 0, fmt.Errorf("replication: seed: the snapshot holds %d nodes at zxid %#x, want %d at %#x",
			st.Tree.NodeCount(), st.LastZxid, nodes, lastZxid)
	}
	return meta.Size, nil
}

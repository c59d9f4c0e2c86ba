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

// SeedInput is the state SeedState writes: a tree, its session table and
// the last zxid.
type SeedInput struct {
	Tree *datatree.Tree
	// Sessions is the session table (nil: none). The ephemeral znodes of
	// its sessions are in Tree; a session whose owner is not recorded
	// (0) is owned by whichever member its client uses first.
	Sessions *session.Table
	// LastZxid is the zxid of the last transaction Tree holds; new writes
	// continue after it.
	LastZxid int64
}

// Seed is SeedState with no sessions, the state of an import: a tree and
// its last zxid.
func Seed(cfg Config, tree *datatree.Tree, lastZxid int64) (int64, error) {
	return SeedState(cfg, SeedInput{Tree: tree, LastZxid: lastZxid})
}

// SeedState creates the data directories of cfg (a standalone server's,
// holding no raft state; cfg.ServerID is the member that will own them)
// with in as their state: it opens a node on them, which bootstraps them
// as a new server does, makes the tree and the session table its FSM
// state and has raft take a snapshot, written by the FSM and the snapshot
// store as every snapshot is; the snapshot is then read back. The
// directories open afterwards as any server's, standalone or as the
// member that an ensemble's empty members join. SeedState returns the
// snapshot's size in bytes; the tree and the table are the node's from
// the call on.
//
// Sessions get no clock here: the server that opens the directories gives
// every session of the table a full timeout when it starts and whenever
// it becomes leader, and expires those whose clients do not come back.
func SeedState(cfg Config, in SeedInput) (int64, error) {
	if len(cfg.Peers) > 0 || cfg.Join {
		return 0, errors.New("replication: seed needs a standalone server's data directories")
	}
	if in.Tree == nil {
		return 0, errors.New("replication: seed needs a tree")
	}
	if in.Sessions == nil {
		in.Sessions = session.NewTable()
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
	size, err := n.seed(in)
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
func (n *Node) seed(in SeedInput) (int64, error) {
	if !n.bootstrapped {
		return 0, ErrNotFresh
	}
	ctx, cancel := context.WithTimeout(context.Background(), seedTimeout)
	defer cancel()
	if err := n.WaitReady(ctx); err != nil {
		return 0, err
	}
	tree, lastZxid := in.Tree, in.LastZxid
	nodes, sessions := tree.NodeCount(), in.Sessions.Len()
	// Nothing is applied in a fresh directory with no clients (and no
	// steward while seeding): the FSM goroutine is idle, and raft's
	// Snapshot below reaches it through raft's channels, after the
	// install. The state is a new ensemble's: it gets its identity here.
	id := txnlog.NewEnsembleID()
	n.fsm.install(&txnlog.SnapshotState{
		SnapshotHeader: txnlog.SnapshotHeader{LastZxid: lastZxid, AppliedIndex: n.fsm.last, Ensemble: id},
		Sessions:       in.Sessions,
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
	if st.LastZxid != lastZxid || st.Tree.NodeCount() != nodes || st.Sessions.Len() != sessions ||
		st.Ensemble != id || n.ident.get() != id {
		return 0, fmt.Errorf("replication: seed: the snapshot holds %d nodes and %d sessions at zxid %#x, want %d and %d at %#x",
			st.Tree.NodeCount(), st.Sessions.Len(), st.LastZxid, nodes, sessions, lastZxid)
	}
	return meta.Size, nil
}

package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/txnlog"
)

// Online backup and restore (docs/operations.md, "Backup and restore").
//
// Backup hands out a raft snapshot of the member: it has raft take one
// (ZooKeeper's snapshot command also writes a snapshot file and streams
// it) and opens it, or opens the newest one when nothing was applied
// since. The stream is the FSM's own (txnlog/snapshot.go), checked
// against its checksum by the snapshot store before it is handed out.
//
// Restore installs a state through the log, never by one member writing
// its tree: the leader gives it to raft's Restore, which writes it to the
// leader's snapshot store, has the leader's FSM restore it, and leaves a
// hole in the log so that every follower is sent the snapshot and
// restores the same bytes. The state is adopted under this ensemble's id:
// the snapshot raft stores is re-encoded with the current ensemble id, so
// the FSM's check that refuses another ensemble's snapshot (snapshot.go)
// holds on every member, and the digest recorded with it is the restored
// tree's own, which every member checks when it loads the snapshot.

// restoreTimeout bounds raft's acceptance of a restore when the context
// has no deadline.
const restoreTimeout = 5 * time.Minute

// BackupInfo describes the snapshot a Backup hands out.
type BackupInfo struct {
	// LastZxid is the zxid of the last transaction the snapshot holds.
	LastZxid int64
	// Index is the raft log index the snapshot was taken at.
	Index uint64
	// Size is the length of the stream in bytes.
	Size int64
}

// Backup takes a snapshot of the member's state and returns it as a
// stream in zkserverd's snapshot format (txnlog.ReadSnapshot reads it),
// which the caller must close. Any member can take one; it holds
// everything the member had applied when the call began.
func (n *Node) Backup() (BackupInfo, io.ReadCloser, error) {
	meta, rc, err := n.takeSnapshot()
	if err != nil {
		return BackupInfo{}, nil, err
	}
	var head bytes.Buffer
	h, _, err := txnlog.ReadSnapshotHeader(io.TeeReader(rc, &head))
	if err != nil {
		rc.Close()
		return BackupInfo{}, nil, fmt.Errorf("replication: backup: snapshot %s: %w", meta.ID, err)
	}
	stream := struct {
		io.Reader
		io.Closer
	}{io.MultiReader(&head, rc), rc}
	return BackupInfo{LastZxid: h.LastZxid, Index: meta.Index, Size: meta.Size}, stream, nil
}

// takeSnapshot has raft take a snapshot and opens it; when nothing was
// applied since the last one, it opens that one.
func (n *Node) takeSnapshot() (*raft.SnapshotMeta, io.ReadCloser, error) {
	fut := n.snapshot()
	err := fut.Error()
	if err == nil {
		meta, rc, err := fut.Open()
		if err != nil {
			return nil, nil, fmt.Errorf("replication: backup: open the snapshot: %w", err)
		}
		return meta, rc, nil
	}
	if !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return nil, nil, fmt.Errorf("replication: backup: take a snapshot: %w", err)
	}
	if n.snaps == nil {
		return nil, nil, errors.New("replication: backup: no snapshot store")
	}
	list, err := n.snaps.List()
	if err != nil {
		return nil, nil, fmt.Errorf("replication: backup: list snapshots: %w", err)
	}
	if len(list) == 0 {
		return nil, nil, errors.New("replication: backup: raft has nothing new to snapshot and holds no snapshot")
	}
	meta, rc, err := n.snaps.Open(list[0].ID)
	if err != nil {
		return nil, nil, fmt.Errorf("replication: backup: open snapshot %s: %w", list[0].ID, err)
	}
	return meta, rc, nil
}

// RestoreResult describes a finished restore.
type RestoreResult struct {
	// LastZxid is the zxid the ensemble continues from: the backup's, or
	// the ensemble's own if that was higher (zxids never go back, so
	// that clients that saw the higher one are not refused).
	LastZxid int64
	// Index is the raft log index of the installed snapshot.
	Index uint64
	// Nodes and Sessions count what was restored.
	Nodes, Sessions int
}

// Restore replaces the ensemble's state with st through the replicated
// log; it runs on the leader only (elsewhere its error wraps
// ErrNotLeader and names the leader). st is the caller's decoded backup,
// in either format; its tree and session table are the ensemble's from
// the call on, and must not be used by the caller afterwards.
//
// What is restored, as ZooKeeper 3.9's restore command does: every znode
// with its stat, and the session table (sessions the backup does not
// hold are gone, and their clients' connections are closed; sessions it
// holds live on and expire as usual unless their clients reconnect).
// What is kept: the ensemble's identity and membership, its
// /zookeeper/config node, which describes the running ensemble rather
// than the one the backup was taken of, and which member owns each
// session's connection now.
//
// The state is encoded, read back and checked as every member will check
// it before raft is given it, so a state raft would fail to install (which
// stops the member) is refused here, with nothing changed.
func (n *Node) Restore(ctx context.Context, st *txnlog.SnapshotState) (RestoreResult, error) {
	if !n.IsLeader() {
		if id := n.Leader(); id != 0 {
			return RestoreResult{}, fmt.Errorf("%w: restore on the leader, server %d", ErrNotLeader, id)
		}
		return RestoreResult{}, fmt.Errorf("%w, and no leader is known", ErrNotLeader)
	}
	if err := n.Fenced(); err != nil {
		return RestoreResult{}, fmt.Errorf("replication: restore: %w", err)
	}
	if st.HasDigest {
		if got := st.Tree.Digest(); got != st.Digest {
			return RestoreResult{}, fmt.Errorf("replication: restore: %w: loaded %016x, recorded %016x", errDigestMismatch, got, st.Digest)
		}
	}
	cfgData, cfgStat, _ := n.Tree().GetData(configPath, nil, nil)
	st.Tree.SetConfigNode(cfgData, cfgStat.Mzxid, cfgStat.Mtime)
	// A session's owner is the member its client is connected to now
	// (none for a session the ensemble does not hold): an owner recorded
	// by the backup's ensemble would fail the client's writes with
	// SessionMoved.
	cur := n.Sessions()
	for _, info := range st.Sessions.All() {
		st.Sessions.SetOwner(info.ID, cur.Owner(info.ID))
	}
	h := txnlog.SnapshotHeader{
		LastZxid: max(st.LastZxid, n.LastZxid()),
		Ensemble: n.ident.get(),
		Digest:   st.Tree.Digest(), HasDigest: true,
		// AppliedIndex 0: the state holds nothing beyond the index raft
		// gives the snapshot (the backup's own index belongs to another
		// log).
	}
	head, err := txnlog.SnapshotHead(h, st.Sessions)
	if err != nil {
		return RestoreResult{}, fmt.Errorf("replication: restore: %w", err)
	}
	buf := bytes.NewBuffer(head)
	if err := st.Tree.WriteSnapshot(buf); err != nil {
		return RestoreResult{}, fmt.Errorf("replication: restore: encode the tree: %w", err)
	}
	data := buf.Bytes()
	check, err := txnlog.ReadSnapshot(bytes.NewReader(data), n.cfg.Tree)
	if err != nil {
		return RestoreResult{}, fmt.Errorf("replication: restore: the state does not load with this member's configuration: %w", err)
	}
	if err := n.fsm.checkRestored(check); err != nil {
		return RestoreResult{}, fmt.Errorf("replication: restore: %w", err)
	}
	res := RestoreResult{LastZxid: h.LastZxid, Nodes: check.Tree.NodeCount(), Sessions: check.Sessions.Len()}
	n.log.Warn("restoring a backup through the log: the ensemble's state is replaced",
		"zxid", fmt.Sprintf("%#x", h.LastZxid), "nodes", res.Nodes, "sessions", res.Sessions,
		"bytes", len(data), "ensemble", h.Ensemble.String())
	resume, err := n.quietSnapshots()
	if err != nil {
		return RestoreResult{}, fmt.Errorf("replication: restore: %w", err)
	}
	defer resume()
	timeout := restoreTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if err := ctx.Err(); err != nil {
		return RestoreResult{}, fmt.Errorf("replication: restore: %w", err)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Size: int64(len(data))}
	if err := n.raft.Restore(meta, bytes.NewReader(data), timeout); err != nil {
		return RestoreResult{}, fmt.Errorf("replication: restore: %w", err)
	}
	res.Index = n.raft.LastIndex()
	n.log.Info("backup restored", "index", res.Index, "zxid", fmt.Sprintf("%#x", res.LastZxid))
	return res, nil
}

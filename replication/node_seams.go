package replication

// What the package's tests replace in a member's stack.

import (
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/types"
)

// seams replace parts of a Node's stack for the package's tests, which
// pass them to open: raft over in-memory transports a test can partition,
// stores in memory, a log whose calls or files fail on demand. Open
// passes none. No operator or embedding program sets any of them, so
// Config does not carry them (hashicorp/raft takes its transport and
// stores the same way, as arguments of NewRaft).
type seams struct {
	// memStores keeps the log, stable store and snapshots in memory:
	// nothing survives Close, no recent-entries cache sits in front of the
	// log and no fence is read from DataDir.
	memStores bool
	// raftTransport, when set, carries an ensemble member's raft traffic
	// instead of TCP on the quorum port; Peer.RaftAddr must then be its
	// address. Forwarding still uses TCP.
	raftTransport raft.Transport
	// wrapLogStore, when set, wraps the log store as opened, inside the
	// member's own layers (disk-fault handling, the recent-entries cache);
	// the wrapper must keep raft's LogStore contract.
	wrapLogStore func(raft.LogStore) raft.LogStore
	// wrapSnapshotStore, when set, wraps the snapshot store as opened;
	// the wrapper must keep raft's SnapshotStore contract.
	wrapSnapshotStore func(raft.SnapshotStore) raft.SnapshotStore
	// walFS is the file system raft-wal's segments go through (nil: the
	// operating system's); the member's fsync and fault handling wraps it.
	walFS types.VFS
	// noCommitPush keeps a follower from asking its leader for commit
	// pushes, as a member of an older build does (commitpush.go).
	noCommitPush bool
}

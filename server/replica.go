package server

import (
	"context"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Replica is what the server needs from the replicated state: the local
// copy to read, the write path, and the ensemble's leadership and
// membership. *replication.Node implements it; the server holds no other
// handle on replication.
type Replica interface {
	// Tree and Sessions return the current local state; the pointers
	// change when a snapshot is restored, so callers do not keep them.
	Tree() *datatree.Tree
	Sessions() *session.Table
	// LastZxid is the zxid of the last applied transaction.
	LastZxid() int64
	// Submit proposes a transaction and returns the channel its outcome
	// arrives on; NewRequestID reserves a request id before Submit.
	Submit(t *txnlog.Txn) <-chan replication.Outcome
	NewRequestID() uint64
	// Sync waits until everything the leader had committed is applied
	// locally; WaitReady until the state is current after a start.
	Sync(ctx context.Context) error
	WaitReady(ctx context.Context) error
	// Touch reports live sessions to the leader.
	Touch(ids []int64)
	// Close shuts the replicated state down.
	Close() error

	ensembleView
	figures
	integrity
}

// ensembleView is the leadership and membership side of a Replica.
type ensembleView interface {
	// Clustered is false for a standalone server.
	Clustered() bool
	IsLeader() bool
	// Role is the member's role as srvr's Mode line names it.
	Role() string
	// Leader is the leader's server id (0: none known).
	Leader() int64
	LeaderCh() <-chan bool
	LeaderLinkLost() <-chan struct{}
	QuorumHealth(maxSilence time.Duration) error
	Membership() replication.Membership
	ChangeMembership(ctx context.Context, ch replication.MembershipChange) error
	LearnPeers(peers []replication.Peer)
	// TransferLeadership hands this leader's leadership to another voting
	// member (target, or any up-to-date one when 0) and returns the new
	// leader's id (replication/transfer.go).
	TransferLeadership(ctx context.Context, target int64) (int64, error)
}

// figures are the replication statistics mntr and the AdminServer show.
type figures interface {
	ProposalSizes() (last, min, max int64)
	SlowLogSyncs() int64
}

// integrity is whether this member's state agrees with the ensemble's:
// the digest records it keeps, as ZooKeeper's digest log (hash, mntr's
// zk_digest_mismatches_count), and the fence that stops it serving when
// it does not agree (replication/digest.go).
type integrity interface {
	// Digests are the recent digest records, oldest first.
	Digests() []replication.DigestRecord
	// DigestMismatches counts the checkpoints at which this member's
	// digest differed from the leader's.
	DigestMismatches() int64
	// Fenced says why this member must serve no client, nil while it may.
	Fenced() error
}

var _ Replica = (*replication.Node)(nil)

package replication

// What configures a Node, and how it maps to hashicorp/raft's Config.

import (
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
)

// Config configures a Node: what an operator (zoo.cfg) or a program
// embedding a member sets. What the package's tests replace in a member's
// stack is not here but in seams (node_seams.go).
type Config struct {
	// ServerID is this member's id (1 for a standalone server).
	ServerID int64
	// DataDir holds raft snapshots; LogDir holds the raft log (raft.db).
	// LogDir defaults to DataDir.
	DataDir, LogDir string
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
	// WALSegmentSize is the size in bytes of each wal segment file,
	// reserved when the segment is created (0: raft-wal's 64 MiB). It
	// takes effect for new segments; a data directory keeps the ones it
	// has until they are full.
	WALSegmentSize int
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

// raftConfig maps our settings to hashicorp/raft's. A standalone member has
// no peers to wait for, so its timeouts are short: it elects itself quickly
// after a restart. An ensemble member uses a quarter of tickTime (at least
// 250 ms) as its heartbeat and election timeout (raft randomizes each
// between 1x and 2x): members that start together elect a leader within
// about a second, and a dead leader is replaced about as fast (a whole
// tick makes a restart wait seconds for its election). The leader's lease,
// after which a leader that has heard from no quorum steps down, is as
// long as the followers' heartbeat timeout, the most raft allows: at half
// of it (raft's ratio), a leader whose process is starved of CPU for a
// moment steps down while its followers still follow it, and the ensemble
// has no leader until the next election. (Figures: docs/dev/perf-journal.md,
// "Replication constants".)
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
// default: much shorter, and an idle ensemble's appends become most of its
// CPU.
const raftCommitTimeout = 50 * time.Millisecond

package replication

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/hashicorp/raft"
)

// Guarding raft's record of its last snapshot.
//
// hashicorp/raft takes snapshots on a goroutine of its own and, when one
// is persisted, records its index as the last snapshot's without looking
// at what happened meanwhile (hashicorp/raft#248, still so in v1.7). When
// a restore (Restore) or a snapshot sent by the leader (InstallSnapshot)
// lands while such a snapshot is being written, the record goes back to
// the older index. The log has a hole above it (a restore leaves one, an
// install empties the log), so a leader with that record cannot find the
// entry before a follower's next one: it sends the follower the snapshot,
// the follower installs it, and asks for the same entry again, forever,
// with no write committed.
//
// Two measures keep the record right:
//   - a restore runs with raft's own snapshots held off and none of the
//     member's own in flight (quietSnapshots);
//   - every member compares the record with its newest stored snapshot
//     each second, and when the record stayed behind two looks in a row
//     it has raft take a snapshot, which records the right index again
//     (watchSnapshotRecord); this mends a follower whose install raced,
//     before it ever leads.

// snapshotGuard serializes the snapshots the member asks raft for with a
// restore; mu is held across each request and across a whole restore.
type snapshotGuard struct {
	mu sync.Mutex
	// behind counts the looks in a row at which raft's record was older
	// than the newest stored snapshot, and mended is the stored index a
	// snapshot was last taken for (tried once each); both are owned by
	// the snapshot loop.
	behind int
	mended uint64
}

// snapshot has raft take a snapshot now and returns its future, resolved.
func (n *Node) snapshot() raft.SnapshotFuture {
	n.snapGuard.mu.Lock()
	defer n.snapGuard.mu.Unlock()
	f := n.raft.Snapshot()
	f.Error()
	return f
}

// quietSnapshots holds every snapshot back until the returned resume is
// called: the member's own (the guard's lock), and raft's (its threshold
// raised out of reach); a snapshot raft had started is waited for, by
// asking for one more (raft takes them one at a time).
func (n *Node) quietSnapshots() (resume func(), err error) {
	n.snapGuard.mu.Lock()
	saved := n.raft.ReloadableConfig()
	quiet := saved
	quiet.SnapshotThreshold = math.MaxUint64
	if err := n.raft.ReloadConfig(quiet); err != nil {
		n.snapGuard.mu.Unlock()
		return nil, fmt.Errorf("hold raft's snapshots back: %w", err)
	}
	resume = func() {
		if err := n.raft.ReloadConfig(saved); err != nil {
			n.log.Error("raft's snapshot threshold could not be set back after a restore", "err", err)
		}
		n.snapGuard.mu.Unlock()
	}
	if err := n.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		// A snapshot refused (a membership change not applied yet) still
		// waited for the one before it.
		n.log.Debug("restore: the snapshot that waits out raft's own failed", "err", err)
	}
	return resume, nil
}

// watchSnapshotRecord is one look of the snapshot loop at raft's record
// of its last snapshot; it has raft take a snapshot when the record was
// behind the newest stored snapshot at this look and the one before.
func (n *Node) watchSnapshotRecord() {
	if n.snaps == nil {
		return
	}
	recorded, err := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64)
	if err != nil {
		return
	}
	list, err := n.snaps.List()
	if err != nil || len(list) == 0 || list[0].Index <= recorded || list[0].Index == n.snapGuard.mended {
		n.snapGuard.behind = 0
		return
	}
	if n.snapGuard.behind++; n.snapGuard.behind < 2 {
		return
	}
	n.snapGuard.behind, n.snapGuard.mended = 0, list[0].Index
	n.log.Warn("raft's record of its last snapshot went back below the newest one stored (hashicorp/raft#248): taking a snapshot to set it right",
		"recorded", recorded, "stored", list[0].Index)
	if err := n.snapshot().Error(); err != nil {
		n.log.Warn("snapshot to set raft's record right failed", "err", err)
	}
}

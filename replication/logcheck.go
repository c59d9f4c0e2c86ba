package replication

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/txnlog"
)

// verifyLog checks every command entry the log holds against its checksum
// before raft starts (snapshots are checked by checkAtOpen): a member
// whose log was damaged on disk refuses to start rather than apply, serve
// or replicate what it cannot trust. Entries of builds before checksums
// pass when they decode. A member refused here is recovered by wiping its
// data directory: it rejoins and takes the leader's snapshot
// (docs/operations.md).
//
// Entries at or below covered, the index of the newest snapshot, may be
// missing: raft never reads them again, and a log store that keeps holes
// (raft-boltdb) has one below the snapshot after a follower installed a
// snapshot beyond its log, or after a restore (restore.go).
func verifyLog(logs raft.LogStore, where string, covered uint64) error {
	first, err := logs.FirstIndex()
	if err != nil {
		return fmt.Errorf("replication: read the log's first index: %w", err)
	}
	last, err := logs.LastIndex()
	if err != nil {
		return fmt.Errorf("replication: read the log's last index: %w", err)
	}
	if first == 0 {
		return nil
	}
	var l raft.Log
	for i := first; i <= last; i++ {
		if err := logs.GetLog(i, &l); err != nil {
			if i <= covered && errors.Is(err, raft.ErrLogNotFound) {
				continue
			}
			return fmt.Errorf("replication: log entry %d in %s cannot be read: %w; this member's log is damaged, see docs/operations.md (\"A damaged member\")", i, where, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if err := txnlog.Verify(l.Data); err != nil {
			return fmt.Errorf("replication: log entry %d in %s is damaged: %w; this member refuses to start, see docs/operations.md (\"A damaged member\")", i, where, err)
		}
	}
	return nil
}

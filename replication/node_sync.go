package replication

// Waiting for the replicated state: until a member can serve (WaitReady),
// until it has what the leader had (Sync), until an index is applied
// (WaitApplied).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// WaitReady waits until this member can serve: a standalone server until it
// leads and has applied its whole log; an ensemble member until a leader is
// known and it has applied everything the leader had, so reads see all
// acknowledged writes (and, when it started empty, it knows its ensemble),
// and raft's voters cover a majority of the listed participants
// (votergate.go).
func (n *Node) WaitReady(ctx context.Context) error {
	if n.clustered() {
		return n.waitReadyMember(ctx)
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

// errNoLeaderYet is what WaitReady names when it gives up before a leader
// is known.
var errNoLeaderYet = errors.New("replication: no leader")

// waitReadyMember is WaitReady for an ensemble member.
func (n *Node) waitReadyMember(ctx context.Context) error {
	for {
		// A member that started empty serves only once it has the
		// ensemble's state, which names the ensemble. The voter gate is
		// looked at first: once open it stays open, and the sync then
		// covers whatever committed while it was closed.
		why := errNoLeaderYet
		joined := !n.startedEmpty || !n.ident.get().IsZero()
		if _, id := n.raft.LeaderWithID(); id != "" && joined {
			if why = n.awaitingVoters(); why == nil {
				err := n.Sync(ctx)
				if err == nil || ctx.Err() != nil {
					return err
				}
				why = err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", why, ctx.Err())
		case <-time.After(20 * time.Millisecond):
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
	// The leader answers once it has applied the target: it is committed,
	// and its commit reaches this member with the leader's next commit
	// push (commitpush.go).
	target := binary.BigEndian.Uint64(res.body)
	return n.WaitApplied(ctx, target)
}

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

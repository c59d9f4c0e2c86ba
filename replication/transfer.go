package replication

// Leadership hand-off: a leader that is about to stop (a rolling restart)
// or is asked to by an operator gives its leadership to a follower that
// has its whole log, so that the ensemble does not wait out an election
// timeout. hashicorp/raft does the work (Raft.LeadershipTransfer: the
// leader brings the target up to date, then tells it to start an election
// at once, with TimeoutNow); this file picks the target, bounds the wait
// and reports who leads afterwards.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Errors of TransferLeadership and Restore.
var (
	// ErrNotLeader is returned when this member does not lead, so it has
	// no leadership to hand over, and wrapped by Restore's error on a
	// member that is not the leader (naming the leader when one is known).
	ErrNotLeader = errors.New("replication: this member is not the leader")
	// ErrNoTransferTarget is returned when no other voting member could
	// take over: a standalone server, a one-voter ensemble, or a target
	// that is not a voting member.
	ErrNoTransferTarget = errors.New("replication: no voting member to hand leadership to")
)

// TransferLeadership hands this leader's leadership to another voting
// member: to target when it is not 0, else to the follower raft finds
// most up to date. It returns the id of the member that leads afterwards,
// once this member has seen it lead. The wait ends with ctx; raft itself
// gives the transfer up after one election timeout, and this member then
// stays leader. Writes submitted meanwhile wait for the hand-off's end
// (handoffGate), then go to the new leader; one already in raft's hands
// when it starts may fail with ErrNotReplicated if its entry was not
// committed before this member stepped down.
func (n *Node) TransferLeadership(ctx context.Context, target int64) (int64, error) {
	if !n.clustered() {
		return 0, fmt.Errorf("transfer leadership: %w (standalone server)", ErrNoTransferTarget)
	}
	if n.raft.State() != raft.Leader {
		return 0, fmt.Errorf("transfer leadership: %w (leader: %d)", ErrNotLeader, n.Leader())
	}
	start := time.Now()
	defer n.handoff.hold()()
	n.drainEntries(ctx)
	err := n.transferOnce(ctx, target)
	// raft gives an attempt up after one election timeout, which a busy
	// machine can outlast; the caller's ctx bounds the whole hand-off.
	for round := 1; err != nil && round < transferRounds && !errors.Is(err, ErrNoTransferTarget) &&
		ctx.Err() == nil && n.raft.State() == raft.Leader; round++ {
		n.log.Info("handing leadership over: trying again", "round", round+1, "after", err)
		err = n.transferOnce(ctx, target)
	}
	if err != nil && n.raft.State() == raft.Leader {
		return 0, fmt.Errorf("transfer leadership: %w", err)
	} // else another member leads, whatever the last attempt's future said
	leader, err := n.awaitOtherLeader(ctx)
	if err != nil {
		return 0, fmt.Errorf("transfer leadership: raft finished the transfer, but %w", err)
	}
	n.log.Info("handed leadership over", "to", leader, "took", time.Since(start).Round(time.Millisecond))
	return leader, nil
}

// drainEntries waits until the entries raft was handed before the hold
// are applied (a barrier): raft refuses an entry it takes from its queue
// while a transfer is in progress, and its queue holds entries handed
// over but not taken yet (BatchApplyCh). A barrier that fails leaves the
// transfer to go on; its attempts report what is wrong.
func (n *Node) drainEntries(ctx context.Context) {
	timeout := n.cfg.ForwardTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if err := n.raft.Barrier(timeout).Error(); err != nil {
		n.log.Debug("handing leadership over: barrier before the transfer failed", "err", err)
	}
}

// transferRounds bounds the attempts of one hand-off.
const transferRounds = 3

// transferOnce makes one attempt: to target, or, when it is 0, to the
// follower raft picks and then to each other voter.
func (n *Node) transferOnce(ctx context.Context, target int64) error {
	if target != 0 {
		addr, err := n.voterAddress(target)
		if err != nil {
			return fmt.Errorf("to %d: %w", target, err)
		}
		return n.transferTo(ctx, raft.Server{ID: serverID(target), Address: addr})
	}
	if err := n.hasOtherVoter(); err != nil {
		return err
	}
	err := waitFuture(ctx, n.raft.LeadershipTransfer())
	if err != nil {
		err = n.transferToAnyVoter(ctx, err)
	}
	return err
}

// transferToAnyVoter tries the other voters one by one after raft's own
// pick failed with first: raft picks the follower with the most of the
// log, which may be one that just went down (its last heartbeat has not
// failed yet), and a member that went down answers at once. Voters this
// member has heard from come first. It returns nil once one took over,
// else the last error.
func (n *Node) transferToAnyVoter(ctx context.Context, first error) error {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return first
	}
	var healthy, failed []raft.Server
	n.health.mu.Lock()
	for _, s := range f.Configuration().Servers {
		switch {
		case s.Suffrage != raft.Voter || s.ID == serverID(n.cfg.ServerID):
		case n.health.failed[s.ID]:
			failed = append(failed, s)
		default:
			healthy = append(healthy, s)
		}
	}
	n.health.mu.Unlock()
	err := first
	for _, s := range append(healthy, failed...) {
		if ctx.Err() != nil || n.raft.State() != raft.Leader {
			break
		}
		n.log.Info("handing leadership over: trying another member", "to", s.ID, "after", err)
		if err = n.transferTo(ctx, s); err == nil {
			return nil
		}
	}
	return err
}

// transferTo hands leadership to s, waiting while raft still winds down
// the previous attempt (it answers ErrLeadershipTransferInProgress for a
// moment after that attempt's future has failed).
func (n *Node) transferTo(ctx context.Context, s raft.Server) error {
	for {
		err := waitFuture(ctx, n.raft.LeadershipTransferToServer(s.ID, s.Address))
		if !errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", err, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// voterAddress returns the raft address of the voting member id, other
// than this one, from raft's current membership.
func (n *Node) voterAddress(id int64) (raft.ServerAddress, error) {
	if id == n.cfg.ServerID {
		return "", fmt.Errorf("%w: %d is this member", ErrNoTransferTarget, id)
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return "", fmt.Errorf("read membership: %w", err)
	}
	for _, s := range f.Configuration().Servers {
		if s.ID != serverID(id) {
			continue
		}
		if s.Suffrage != raft.Voter {
			return "", fmt.Errorf("%w: %d is an observer", ErrNoTransferTarget, id)
		}
		return s.Address, nil
	}
	return "", fmt.Errorf("%w: %d is not a member", ErrNoTransferTarget, id)
}

// hasOtherVoter fails with ErrNoTransferTarget when this member is the
// only voter (raft would fail the transfer itself, less clearly).
func (n *Node) hasOtherVoter() error {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("read membership: %w", err)
	}
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter && s.ID != serverID(n.cfg.ServerID) {
			return nil
		}
	}
	return ErrNoTransferTarget
}

// waitFuture waits for a raft future or ctx, whichever ends first. When
// ctx ends first the future is left to raft, which resolves it within an
// election timeout.
func waitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("gave up waiting: %w", ctx.Err())
	}
}

// awaitOtherLeader waits until this member knows of a leader other than
// itself and returns its id.
func (n *Node) awaitOtherLeader(ctx context.Context) (int64, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if id := n.Leader(); id != 0 && id != n.cfg.ServerID && n.raft.State() != raft.Leader {
			return id, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no other leader seen: %w", ctx.Err())
		case <-n.stop:
			return 0, ErrClosed
		case <-tick.C:
		}
	}
}

// maxHold bounds how long a hand-off holds new log entries back; raft's
// own transfer ends within an election timeout.
const maxHold = 2 * time.Second

// handoffGate holds a leader's new log entries back while it hands its
// leadership over: raft refuses them meanwhile
// (ErrLeadershipTransferInProgress), which would fail every write that
// arrives in those milliseconds and drop its client. Held, they are
// appended or forwarded, as the member's role then says, once the hand-off
// has ended. The zero value holds nothing.
//
// entering is held by a flush from its wait until raft has its entry
// (Apply returned), and by hold while it starts a hand-off: every entry
// is then either handed to raft before the hold, and applied before the
// transfer starts (drainEntries), or held until the hand-off ends.
type handoffGate struct {
	entering sync.Mutex
	mu       sync.Mutex
	done     chan struct{} // closed when the hand-off ends; nil: none
}

// hold starts holding entries back and returns the function that ends
// it; a hand-off that starts while another runs holds nothing of its own.
func (g *handoffGate) hold() (release func()) {
	g.entering.Lock()
	defer g.entering.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done != nil {
		return func() {}
	}
	done := make(chan struct{})
	g.done = done
	return func() {
		g.mu.Lock()
		g.done = nil
		g.mu.Unlock()
		close(done)
	}
}

// enter waits for a hand-off to end (wait), then runs submit, with no
// hand-off starting in between.
func (g *handoffGate) enter(stop <-chan struct{}, submit func()) {
	g.entering.Lock()
	defer g.entering.Unlock()
	g.wait(stop)
	submit()
}

// wait returns when no hand-off runs, when stop closes, or after maxHold.
func (g *handoffGate) wait(stop <-chan struct{}) {
	g.mu.Lock()
	done := g.done
	g.mu.Unlock()
	if done == nil {
		return
	}
	t := time.NewTimer(maxHold)
	defer t.Stop()
	select {
	case <-done:
	case <-stop:
	case <-t.C:
	}
}

package replication

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/jute"
)

// MembershipChange is the effect of a reconfig on raft's membership:
// members to add (voters, or non-voters for observers) and ids to remove.
type MembershipChange struct {
	Add    []Peer
	Remove []int64
}

// ErrMembership reports a membership change raft refused or could not
// commit.
var ErrMembership = errors.New("replication: membership change failed")

// fwdReconfig is the forwarding request that runs a membership change on
// the leader (body: the encoded MembershipChange).
const fwdReconfig byte = 4

// ChangeMembership applies a membership change through raft on the leader
// (a follower forwards it there). Each change is its own raft configuration
// entry; it returns once they are committed.
func (n *Node) ChangeMembership(ctx context.Context, ch MembershipChange) error {
	if !n.clustered() {
		return fmt.Errorf("%w: not an ensemble", ErrMembership)
	}
	if !n.IsLeader() {
		var res fwdResult
		select {
		case res = <-n.fwd.call(fwdReconfig, encodeChange(ch)):
		case <-ctx.Done():
			return ctx.Err()
		}
		if res.err != nil {
			return fmt.Errorf("%w: %v", ErrMembership, res.err)
		}
		return nil
	}
	return n.applyMembership(ch)
}

// applyMembership runs on the leader.
func (n *Node) applyMembership(ch MembershipChange) error {
	n.peers.learn(ch.Add)
	timeout := n.cfg.ForwardTimeout
	for _, p := range ch.Add {
		var f raft.IndexFuture
		if p.Observer {
			f = n.raft.AddNonvoter(serverID(p.ID), raft.ServerAddress(p.RaftAddr), 0, timeout)
		} else {
			f = n.raft.AddVoter(serverID(p.ID), raft.ServerAddress(p.RaftAddr), 0, timeout)
		}
		if err := f.Error(); err != nil {
			return fmt.Errorf("%w: add server %d: %v", ErrMembership, p.ID, err)
		}
	}
	for _, id := range ch.Remove {
		if err := n.raft.RemoveServer(serverID(id), 0, timeout).Error(); err != nil {
			return fmt.Errorf("%w: remove server %d: %v", ErrMembership, id, err)
		}
	}
	return nil
}

// LearnPeers records the addresses of members added by a reconfig (from the
// replicated configuration), for forwarding to them should they lead.
func (n *Node) LearnPeers(peers []Peer) { n.peers.learn(peers) }

// handleReconfig serves fwdReconfig on the leader; the reply waits for the
// change to commit.
func (n *Node) handleReconfig(body []byte) <-chan error {
	ch := make(chan error, 1)
	change, err := decodeChange(body)
	if err != nil {
		ch <- err
		return ch
	}
	go func() { ch <- n.applyMembership(change) }()
	return ch
}

func encodeChange(ch MembershipChange) []byte {
	e := jute.NewEncoder(nil)
	e.Int(int32(len(ch.Add)))
	for _, p := range ch.Add {
		e.Long(p.ID)
		e.String(p.RaftAddr)
		e.String(p.ForwardAddr)
		e.Bool(p.Observer)
	}
	e.Int(int32(len(ch.Remove)))
	for _, id := range ch.Remove {
		e.Long(id)
	}
	return e.Bytes()
}

func decodeChange(b []byte) (MembershipChange, error) {
	var ch MembershipChange
	d := jute.NewDecoder(b)
	n := int(d.Int())
	if n < 0 || n > d.Remaining()/17 {
		return ch, fmt.Errorf("bad add count %d", n)
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		ch.Add = append(ch.Add, Peer{ID: d.Long(), RaftAddr: d.String(), ForwardAddr: d.String(), Observer: d.Bool()})
	}
	m := int(d.Int())
	if m < 0 || m > d.Remaining()/8 {
		return ch, fmt.Errorf("bad remove count %d", m)
	}
	for i := 0; i < m; i++ {
		ch.Remove = append(ch.Remove, d.Long())
	}
	return ch, d.Finish(true)
}

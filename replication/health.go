package replication

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Membership summarizes the ensemble as the leader's mntr keys report it.
type Membership struct {
	Followers       int // voters other than this member
	Observers       int // non-voting members
	SyncedFollowers int // followers currently answering heartbeats
	SyncedObservers int // observers currently answering heartbeats
	QuorumSize      int // voters needed for a majority
	LeaderSince     time.Time
}

// peerHealth remembers which peers the leader has lost heartbeats with,
// and since when this member has known no leader, from raft's
// observations. mu guards the fields.
type peerHealth struct {
	mu          sync.Mutex
	failed      map[raft.ServerID]bool
	leaderSince time.Time
	// leaderlessSince is when the last known leader was lost (zero while
	// one is known, or before any was); hadLeader whether one ever was.
	leaderlessSince time.Time
	hadLeader       bool
}

// watchHealth registers a raft observer feeding n.health, and telling the
// forwarder of leader changes, until stop closes.
func (n *Node) watchHealth() {
	ch := make(chan raft.Observation, 64)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation, raft.LeaderObservation:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(obs)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.raft.DeregisterObserver(obs)
		for {
			select {
			case <-n.stop:
				return
			case o := <-ch:
				n.health.observe(o, n.raft.State() == raft.Leader)
				if _, ok := o.Data.(raft.LeaderObservation); ok {
					n.fwd.leaderChanged()
					n.push.kick()
				}
			}
		}
	}()
}

func (h *peerHealth) observe(o raft.Observation, leading bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed == nil {
		h.failed = make(map[raft.ServerID]bool)
	}
	switch d := o.Data.(type) {
	case raft.FailedHeartbeatObservation:
		h.failed[d.PeerID] = true
	case raft.ResumedHeartbeatObservation:
		delete(h.failed, d.PeerID)
	case raft.LeaderObservation:
		h.failed = make(map[raft.ServerID]bool)
		if leading {
			h.leaderSince = time.Now()
		}
		h.noteLeader(d.LeaderID != "", time.Now())
	}
}

// noteLeader records whether a leader is known at now.
func (h *peerHealth) noteLeader(known bool, now time.Time) {
	switch {
	case known:
		h.leaderlessSince, h.hadLeader = time.Time{}, true
	case h.leaderlessSince.IsZero():
		h.leaderlessSince = now
	}
}

// leaderlessFor returns how long this member has known no leader since it
// lost the last one, and false if none was ever known. Observations arrive
// late (raft hands them to a goroutine): when raft already has no leader
// but the loss is not observed yet, it has just happened (0, true).
func (h *peerHealth) leaderlessFor(now time.Time) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.leaderlessSince.IsZero() {
		return 0, h.hadLeader
	}
	return now.Sub(h.leaderlessSince), true
}

// Membership reports the current membership and, on the leader, which
// peers keep up.
func (n *Node) Membership() Membership {
	var m Membership
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return m
	}
	n.health.mu.Lock()
	defer n.health.mu.Unlock()
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
		if s.ID == serverID(n.cfg.ServerID) {
			continue
		}
		ok := !n.health.failed[s.ID]
		if s.Suffrage == raft.Voter {
			m.Followers++
			if ok {
				m.SyncedFollowers++
			}
		} else {
			m.Observers++
			if ok {
				m.SyncedObservers++
			}
		}
	}
	m.QuorumSize = voters/2 + 1
	m.LeaderSince = n.health.leaderSince
	return m
}

// proposalSizes tracks the sizes of proposed entries. mu guards the fields.
type proposalSizes struct {
	mu             sync.Mutex
	set            bool
	last, min, max int64
}

func (p *proposalSizes) record(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := int64(n)
	if !p.set || v < p.min {
		p.min = v
	}
	if !p.set || v > p.max {
		p.max = v
	}
	p.last, p.set = v, true
}

func (p *proposalSizes) get() (last, min, max int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.set {
		return -1, -1, -1
	}
	return p.last, p.min, p.max
}

// leaderLink records whether this follower's forwarding connection to its
// leader broke (read or write failed, or the dial was refused) since it
// last connected: a leader whose process died closes that connection at
// once, well before raft's heartbeat timeout notices. mu guards brokenFor.
type leaderLink struct {
	mu        sync.Mutex
	brokenFor raft.ServerID
	lost      chan struct{} // signalled (cap 1) on each break
}

func newLeaderLink() *leaderLink { return &leaderLink{lost: make(chan struct{}, 1)} }

// broke records that the connection to leader id failed.
func (l *leaderLink) broke(id raft.ServerID) {
	l.mu.Lock()
	l.brokenFor = id
	l.mu.Unlock()
	select {
	case l.lost <- struct{}{}:
	default:
	}
}

// connected records a working connection to a leader.
func (l *leaderLink) connected() {
	l.mu.Lock()
	l.brokenFor = ""
	l.mu.Unlock()
}

func (l *leaderLink) brokenTo(id raft.ServerID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return id != "" && l.brokenFor == id
}

// QuorumHealth reports why this member is not part of a working quorum,
// nil when it is: a standalone server always is. An ensemble member is not
// while raft's voters cover fewer than a majority of the participants its
// configuration lists (votergate.go: a member seeded with data leads alone
// until it promoted enough of them, and a commit is on one disk until
// then). Otherwise a leader is while raft keeps it leader (it steps down
// when no quorum answered within its lease, LeaderLeaseTimeout); any other
// member is while it knows a leader, has heard from it within maxSilence
// (raft's LastContact) and its forwarding connection to that leader has
// not broken since it last connected.
//
// An election is not a lost quorum until it has lasted maxSilence: a member
// whose leader stepped down (or that stepped down itself) less than
// maxSilence ago is still in one, as a ZooKeeper member notices nothing for
// syncLimit ticks. Under a burst on a starved machine raft's sub-second
// timeouts can cost a leader its lease for a moment; dropping every client
// connection then makes them all reconnect at once, which starves the
// members more and costs the next leader its lease too (a 15,000-session
// storm on three members, docs/dev/perf-journal.md, 2026-12-03). Writes
// meanwhile fail as they would anyway (no leader to take them); reads are
// served from this member's state, as a ZooKeeper follower serves them
// until it notices.
func (n *Node) QuorumHealth(maxSilence time.Duration) error {
	if !n.clustered() {
		return nil
	}
	if err := n.awaitingVoters(); err != nil {
		return err
	}
	if n.raft.State() == raft.Leader {
		return nil
	}
	_, id := n.raft.LeaderWithID()
	if id == "" {
		if lost, ok := n.health.leaderlessFor(time.Now()); ok && lost <= maxSilence {
			return nil
		}
		return ErrNoLeader
	}
	if silent := time.Since(n.raft.LastContact()); silent > maxSilence {
		return fmt.Errorf("replication: no contact with leader %s for %v", id, silent.Round(time.Millisecond))
	}
	if n.link.brokenTo(id) {
		return fmt.Errorf("replication: connection to leader %s broke", id)
	}
	return nil
}

// LeaderLinkLost is signalled when the forwarding connection to the leader
// breaks; QuorumHealth then reports it.
func (n *Node) LeaderLinkLost() <-chan struct{} { return n.link.lost }

package replication

import (
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/hashicorp/raft"
)

// Peer is one member of an ensemble as this member's configuration names it
// (zoo.cfg server.N). RaftAddr (the quorum port) carries raft traffic;
// ForwardAddr (the election port) carries write forwarding, sync barriers and
// session liveness reports to the leader.
type Peer struct {
	ID          int64
	RaftAddr    string
	ForwardAddr string
	Observer    bool
}

// peerSet resolves member ids to the addresses written in this member's own
// configuration, never to addresses replicated from elsewhere, so that any
// link can be routed through a proxy or a changed address.
// mu guards byID: reconfig changes it at runtime.
type peerSet struct {
	mu   sync.RWMutex
	byID map[raft.ServerID]Peer
}

var _ raft.ServerAddressProvider = (*peerSet)(nil)

func newPeerSet(peers []Peer) *peerSet {
	ps := &peerSet{byID: make(map[raft.ServerID]Peer, len(peers))}
	for _, p := range peers {
		ps.byID[serverID(p.ID)] = p
	}
	return ps
}

// ServerAddr implements raft.ServerAddressProvider.
func (ps *peerSet) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	p, ok := ps.byID[id]
	if !ok {
		return "", fmt.Errorf("replication: no address configured for server %s", id)
	}
	return raft.ServerAddress(p.RaftAddr), nil
}

// idOf returns the id of the member whose configured raft address is
// addr.
func (ps *peerSet) idOf(addr string) (string, bool) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for id, p := range ps.byID {
		if p.RaftAddr == addr {
			return string(id), true
		}
	}
	return "", false
}

// forwardAddr returns the forwarding address of member id.
func (ps *peerSet) forwardAddr(id raft.ServerID) (string, bool) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	p, ok := ps.byID[id]
	return p.ForwardAddr, ok
}

// learn adds or updates peers this member did not have in its own
// configuration (members added by reconfig). Members already configured
// keep their locally written addresses.
func (ps *peerSet) learn(peers []Peer) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range peers {
		if _, ok := ps.byID[serverID(p.ID)]; !ok {
			ps.byID[serverID(p.ID)] = p
		}
	}
}

// configuration is the raft membership a fresh ensemble bootstraps with:
// participants vote, observers do not.
func (ps *peerSet) configuration(peers []Peer) raft.Configuration {
	var c raft.Configuration
	for _, p := range peers {
		suffrage := raft.Voter
		if p.Observer {
			suffrage = raft.Nonvoter
		}
		c.Servers = append(c.Servers, raft.Server{Suffrage: suffrage, ID: serverID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
	}
	return c
}

func serverID(id int64) raft.ServerID { return raft.ServerID(strconv.FormatInt(id, 10)) }

// bindAddr turns a configured host:port into the address to listen on: the
// port on all interfaces when listenAll is set.
func bindAddr(addr string, listenAll bool) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("replication: bad address %q: %w", addr, err)
	}
	if listenAll {
		host = ""
	}
	return net.JoinHostPort(host, port), nil
}

// others returns the ids of the members known other than self.
func (ps *peerSet) others(self raft.ServerID) []raft.ServerID {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	ids := make([]raft.ServerID, 0, len(ps.byID))
	for id := range ps.byID {
		if id != self {
			ids = append(ids, id)
		}
	}
	return ids
}

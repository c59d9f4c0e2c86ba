package replication

// The member's links: raft's transport on the quorum port and the
// forwarding listener on the election port.

import (
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// transport returns the raft transport and the membership to bootstrap: an
// in-memory transport for a standalone server (it has no peers), TCP on the
// quorum port for an ensemble member, with peer addresses resolved from this
// member's own configuration (or seam, when set; see seams). It also
// starts the forwarding listener.
func (n *Node) transport(rc *raft.Config, seam raft.Transport) (raft.Transport, raft.Configuration, error) {
	if !n.clustered() {
		addr, trans := raft.NewInmemTransport(raft.ServerAddress(rc.LocalID))
		n.closers = append(n.closers, trans.Close)
		return trans, raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: addr}}}, nil
	}
	self, ok := n.self()
	if !ok {
		return nil, raft.Configuration{}, fmt.Errorf("replication: server id %d is not in the ensemble configuration", n.cfg.ServerID)
	}
	trans := seam
	if trans == nil {
		var err error
		if trans, err = n.raftTransport(rc, self); err != nil {
			return nil, raft.Configuration{}, err
		}
	}
	if err := n.listenForwarding(self); err != nil {
		return nil, raft.Configuration{}, err
	}
	return trans, n.peers.configuration(n.cfg.Peers), nil
}

// raftTransport returns raft's TCP transport on the quorum port, over the
// configured Network.
func (n *Node) raftTransport(rc *raft.Config, self Peer) (raft.Transport, error) {
	raftBind, err := bindAddr(self.RaftAddr, n.cfg.ListenAll)
	if err != nil {
		return nil, err
	}
	advertise, err := net.ResolveTCPAddr("tcp", self.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("replication: resolve %s: %w", self.RaftAddr, err)
	}
	ln, err := n.network().Listen(raftBind)
	if err != nil {
		return nil, fmt.Errorf("replication: listen on quorum port %s: %w", raftBind, err)
	}
	stream := &streamLayer{Listener: ln, network: n.network(), advertise: advertise, peers: n.peerLog}
	trans := newHintTransport(raft.NewNetworkTransportWithConfig(netTransportConfig(stream, n.peers, rc.Logger, n.cfg.ForwardTimeout)))
	n.hintTrans = trans
	n.closers = append(n.closers, trans.Close)
	return trans, nil
}

// netTransportConfig configures raft's TCP transport for a member. With
// MaxRPCsInFlight 1 raft's pipelined replication is off: the transport
// answers AppendEntriesPipeline with ErrPipelineReplicationNotSupported,
// and raft replicates with one AppendEntries at a time per follower.
//
// raft's pipelined replication can deadlock when a follower rejects an
// append while the pipeline is full (hashicorp/raft#612): pipelineDecode
// stops reading responses, the transport's decoder blocks handing it the
// next one, and the next send blocks on the full in-flight queue, so that
// follower never receives another entry while heartbeats keep it from
// calling an election, and the leader's Shutdown never returns. A long
// chaos run hit it after a member's links were frozen and thawed.
func netTransportConfig(stream raft.StreamLayer, peers raft.ServerAddressProvider, logger hclog.Logger,
	timeout time.Duration) *raft.NetworkTransportConfig {
	return &raft.NetworkTransportConfig{
		Stream:                stream,
		ServerAddressProvider: peers,
		Logger:                logger,
		MaxPool:               3,
		MaxRPCsInFlight:       1,
		Timeout:               timeout,
	}
}

// listenForwarding opens the election port for forwarding from members.
func (n *Node) listenForwarding(self Peer) error {
	fwdBind, err := bindAddr(self.ForwardAddr, n.cfg.ListenAll)
	if err != nil {
		return err
	}
	ln, err := n.network().Listen(fwdBind)
	if err != nil {
		return fmt.Errorf("replication: listen on election port %s: %w", fwdBind, err)
	}
	n.fwdMu.Lock()
	n.fwdLn, n.fwdConns = ln, make(map[net.Conn]struct{})
	n.fwdMu.Unlock()
	return nil
}

// serveForwardingNow starts accepting on the election port, once raft
// runs: a member's forwarded request asks raft at once. (Until then
// members wait in the listener's backlog.)
func (n *Node) serveForwardingNow() {
	n.fwdMu.Lock()
	ln := n.fwdLn
	n.fwdMu.Unlock()
	if ln != nil {
		n.wg.Add(1)
		go n.serveForwarding(ln)
	}
}

// closeListeners stops the forwarding listener and its connections.
func (n *Node) closeListeners() {
	n.fwdMu.Lock()
	defer n.fwdMu.Unlock()
	if n.fwdLn != nil {
		n.fwdLn.Close()
	}
	for c := range n.fwdConns {
		c.Close()
	}
	n.fwdConns = nil
}

// trackForwardConn registers an accepted member connection; false when the
// node is closing.
func (n *Node) trackForwardConn(c net.Conn, add bool) bool {
	n.fwdMu.Lock()
	defer n.fwdMu.Unlock()
	if n.fwdConns == nil {
		return false
	}
	if add {
		n.fwdConns[c] = struct{}{}
	} else {
		delete(n.fwdConns, c)
	}
	return true
}

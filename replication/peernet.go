package replication

import (
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// Network carries the connections between members: raft's on the quorum
// port and forwarding's on the election port. An implementation may
// secure them (package peernet: TLS, SASL); Listen's connections and
// Dial's are ready for the protocol's first byte. Nil in Config means
// plain TCP.
type Network interface {
	Listen(addr string) (net.Listener, error)
	Dial(addr string, timeout time.Duration) (net.Conn, error)
}

// tcpNetwork is plain TCP.
type tcpNetwork struct{}

func (tcpNetwork) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (tcpNetwork) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, timeout)
}

// network returns the configured Network (or plain TCP) behind the
// ensemble hello (identity.go).
func (n *Node) network() Network {
	var inner Network = tcpNetwork{}
	if n.cfg.Network != nil {
		inner = n.cfg.Network
	}
	return identityNetwork{inner: inner, n: n}
}

// streamLayer is raft's view of a Network listener: it dials through
// the network and advertises the configured quorum address.
type streamLayer struct {
	net.Listener
	network   Network
	advertise net.Addr
	// peers, when set, learns from each dialled connection when its
	// member answers (peerlog.go).
	peers *peerLog
}

var _ raft.StreamLayer = (*streamLayer)(nil)

// Dial implements raft.StreamLayer.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.network.Dial(string(address), timeout)
	if err != nil || s.peers == nil {
		return c, err
	}
	return &answerConn{Conn: c, addr: string(address), pl: s.peers}, nil
}

// Addr implements net.Listener: the advertised address, as raft's TCP
// transport reports it.
func (s *streamLayer) Addr() net.Addr { return s.advertise }

package replication

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/txnlog"
)

// Ensemble identity. A data directory belongs to the ensemble that wrote
// its log: the first leader of a history appends an EntryIdentity entry
// with a random id (steward.go), every member's FSM records the first one
// it applies, snapshots carry it, and each member keeps it in its stable
// store (ensembleKey) so that it knows it before raft replays anything.
//
// Every connection between members, on both ports, starts with a hello
// carrying the sender's server id and ensemble id (identityNetwork). A
// member refuses a peer whose id names another ensemble: raft never hears
// from it, so it can neither vote, nor replicate, nor truncate this
// member's log. An unset id (a new or wiped member, or a data directory
// of a build before identities) is accepted: the log or a snapshot it
// receives then tells it which ensemble it joined.

// ensembleKey is the stable-store key of the member's ensemble id, and
// memberKey that of the server id the data directory was written as.
var (
	ensembleKey = []byte("zkserverdEnsembleID")
	memberKey   = []byte("zkserverdServerID")
)

// ErrForeignEnsemble is wrapped by the errors for a peer, a snapshot or
// an entry of another ensemble.
var ErrForeignEnsemble = errors.New("replication: data of another ensemble")

// identity is what this member knows of its ensemble. mu guards id.
type identity struct {
	mu     sync.Mutex
	id     txnlog.EnsembleID
	stable raft.StableStore // nil in memory-only tests before open
}

func (i *identity) get() txnlog.EnsembleID {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.id
}

// load reads the id recorded in the stable store.
func (i *identity) load(stable raft.StableStore) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.stable = stable
	b, err := stable.Get(ensembleKey)
	if err != nil || len(b) == 0 {
		return nil // none recorded (raft-boltdb and raft-wal answer "not found")
	}
	if len(b) != len(i.id) {
		return fmt.Errorf("replication: stored ensemble id has %d bytes", len(b))
	}
	copy(i.id[:], b)
	return nil
}

// checkMember records the server id a data directory is written as, and
// refuses to open it as another member's: raft's vote and log would then
// speak for a member that never cast or wrote them.
func checkMember(stable raft.StableStore, id int64) error {
	recorded, err := stable.GetUint64(memberKey)
	if err != nil || recorded == 0 {
		if err := stable.SetUint64(memberKey, uint64(id)); err != nil {
			return fmt.Errorf("replication: record the server id: %w", err)
		}
		return nil
	}
	if recorded != uint64(id) {
		return fmt.Errorf("replication: this data directory belongs to server %d, but this member is server %d (myid): give each member its own data directory, or empty it to have the member join afresh", recorded, id)
	}
	return nil
}

// adopt records id as this member's ensemble, durably. It fails when
// another id is recorded already.
func (i *identity) adopt(id txnlog.EnsembleID) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	switch {
	case id.IsZero() || id == i.id:
		return nil
	case !i.id.IsZero():
		return fmt.Errorf("%w: this member belongs to ensemble %s, not %s", ErrForeignEnsemble, i.id, id)
	}
	if i.stable != nil {
		if err := i.stable.Set(ensembleKey, id[:]); err != nil {
			return fmt.Errorf("replication: record ensemble id: %w", err)
		}
	}
	i.id = id
	return nil
}

// The hello: helloMagic, helloVersion, the sender's server id (int64)
// and its ensemble id (16 bytes; zero when unset).
var helloMagic = [4]byte{'Z', 'K', 'E', 'I'}

const (
	helloVersion = 1
	helloSize    = 4 + 1 + 8 + 16
	// helloTimeout bounds the exchange of hellos on a new connection.
	helloTimeout = 10 * time.Second
)

// hello is what a member says about itself on a new connection.
type hello struct {
	serverID int64
	ensemble txnlog.EnsembleID
}

func (h hello) encode() []byte {
	b := append(helloMagic[:], helloVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(h.serverID))
	return append(b, h.ensemble[:]...)
}

func decodeHello(b []byte) (hello, error) {
	if !bytes.Equal(b[:4], helloMagic[:]) || b[4] != helloVersion {
		return hello{}, errors.New("no ensemble hello (a member of a build before ensemble identities, or not a zkserverd member)")
	}
	h := hello{serverID: int64(binary.BigEndian.Uint64(b[5:]))}
	copy(h.ensemble[:], b[13:])
	return h, nil
}

// exchangeHello sends this member's hello on c, reads the peer's and
// refuses a peer of another ensemble. Both sides write before they read.
func (n *Node) exchangeHello(c net.Conn) (hello, error) {
	c.SetDeadline(time.Now().Add(helloTimeout))
	defer c.SetDeadline(time.Time{})
	mine := hello{serverID: n.cfg.ServerID, ensemble: n.ident.get()}
	if _, err := c.Write(mine.encode()); err != nil {
		return hello{}, fmt.Errorf("send hello: %w", err)
	}
	var b [helloSize]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return hello{}, fmt.Errorf("read hello: %w", err)
	}
	peer, err := decodeHello(b[:])
	if err != nil {
		return hello{}, err
	}
	if !peer.ensemble.IsZero() && !mine.ensemble.IsZero() && peer.ensemble != mine.ensemble {
		n.foreign.report(n.log, peer, c.RemoteAddr(), mine.ensemble)
		return peer, fmt.Errorf("%w: member %d at %s belongs to ensemble %s, this member to %s",
			ErrForeignEnsemble, peer.serverID, c.RemoteAddr(), peer.ensemble, mine.ensemble)
	}
	return peer, nil
}

// foreignLog rate-limits the ERROR for refused peers: one line per peer
// and ensemble per foreignLogEvery. mu guards last.
type foreignLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

const foreignLogEvery = 30 * time.Second

func (f *foreignLog) report(log *slog.Logger, peer hello, addr net.Addr, mine txnlog.EnsembleID) {
	key := fmt.Sprintf("%d/%s", peer.serverID, peer.ensemble)
	f.mu.Lock()
	if f.last == nil {
		f.last = make(map[string]time.Time)
	}
	now := time.Now()
	due := now.Sub(f.last[key]) >= foreignLogEvery
	if due {
		f.last[key] = now
	}
	f.mu.Unlock()
	if due {
		log.Error("refusing a member of another ensemble: its data directory belongs to a different ensemble; no traffic is exchanged with it",
			"peer_id", peer.serverID, "peer_addr", addr.String(), "peer_ensemble", peer.ensemble.String(), "ensemble", mine.String())
	}
}

// identityNetwork puts the hello in front of every member connection of
// the wrapped network, on both ports: Dial exchanges it before it returns,
// an accepted connection on its first read or write (so one slow peer
// does not hold up raft's accept loop).
type identityNetwork struct {
	inner Network
	n     *Node
}

func (w identityNetwork) Listen(addr string) (net.Listener, error) {
	ln, err := w.inner.Listen(addr)
	if err != nil {
		return nil, err
	}
	return identityListener{Listener: ln, n: w.n}, nil
}

func (w identityNetwork) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := w.inner.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	if _, err := w.n.exchangeHello(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("replication: member at %s: %w", addr, err)
	}
	return c, nil
}

type identityListener struct {
	net.Listener
	n *Node
}

func (l identityListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &helloConn{Conn: c, n: l.n}, nil
}

// helloConn runs the accepting side's hello before its first read or
// write; a refused peer's connection fails every call.
type helloConn struct {
	net.Conn
	n    *Node
	once sync.Once
	err  error
}

func (c *helloConn) handshake() error {
	c.once.Do(func() {
		if _, err := c.n.exchangeHello(c.Conn); err != nil {
			c.err = err
			c.n.log.Debug("member connection refused", "remote", c.RemoteAddr().String(), "err", err)
			c.Conn.Close()
		}
	})
	return c.err
}

func (c *helloConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *helloConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

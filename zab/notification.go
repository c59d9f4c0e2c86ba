package zab

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ServerState is a member's state as FastLeaderElection sends it (the
// ordinal of QuorumPeer.ServerState).
type ServerState int32

// The states.
const (
	Looking   ServerState = 0
	Following ServerState = 1
	Leading   ServerState = 2
	Observing ServerState = 3
)

func (s ServerState) String() string {
	switch s {
	case Looking:
		return "LOOKING"
	case Following:
		return "FOLLOWING"
	case Leading:
		return "LEADING"
	case Observing:
		return "OBSERVING"
	}
	return "STATE(" + strconv.Itoa(int(s)) + ")"
}

// Notification is one FastLeaderElection message: a member's state and
// vote. Version 2 (3.5+) carries the sender's configuration text.
type Notification struct {
	State         ServerState
	Leader        int64 // the proposed or current leader's sid
	Zxid          int64 // the vote's zxid
	ElectionEpoch int64 // the sender's logical clock
	PeerEpoch     int64 // the epoch of the vote
	Version       int32 // 0 (no version field), 1, or 2 (with Config)
	Config        []byte
}

// Election wire constants (QuorumCnxManager, FastLeaderElection).
const (
	// ProtocolV1 opens an election connection in 3.5+ (3.5's only one; 3.6+
	// accept it and ProtocolV2, which lists several addresses).
	ProtocolV1 int64 = -65536
	// ProtocolV2 is the multi-address opening of 3.6+.
	ProtocolV2 int64 = -65535
	// maxElectionMessage is QuorumCnxManager.PACKETMAXSIZE.
	maxElectionMessage = 512 << 10
	// maxInitialAddr is InitialMessage's limit on the address bytes.
	maxInitialAddr = 2048
)

// ObserverVote is what a looking observer proposes: nobody
// (FastLeaderElection's getInitId and friends give Long.MIN_VALUE to a
// non-participant).
const ObserverVote = math.MinInt64

// Encode returns the message body (without the connection's 4-byte length
// prefix). Version 2 adds the config length and text; versions 0 and 1
// give the 40-byte form whose last int FastLeaderElection does not read.
func (n *Notification) Encode() []byte {
	size := 40
	if n.Version >= 2 {
		size = 44 + len(n.Config)
	}
	b := make([]byte, 0, size)
	b = binary.BigEndian.AppendUint32(b, uint32(n.State))
	b = binary.BigEndian.AppendUint64(b, uint64(n.Leader))
	b = binary.BigEndian.AppendUint64(b, uint64(n.Zxid))
	b = binary.BigEndian.AppendUint64(b, uint64(n.ElectionEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(n.PeerEpoch))
	if n.Version >= 2 {
		b = binary.BigEndian.AppendUint32(b, uint32(n.Version))
		b = binary.BigEndian.AppendUint32(b, uint32(len(n.Config)))
		return append(b, n.Config...)
	}
	return binary.BigEndian.AppendUint32(b, 1)
}

// ErrShortNotification is reported for a message FastLeaderElection would
// drop as too short or malformed.
var ErrShortNotification = errors.New("zab: short or malformed notification")

// DecodeNotification reads a message body as WorkerReceiver does: 28
// bytes (no peer epoch: it is the zxid's), 40 bytes (no version), or more
// (a version, and for version > 1 the config).
func DecodeNotification(b []byte) (*Notification, error) {
	if len(b) < 28 {
		return nil, fmt.Errorf("%w: %d bytes", ErrShortNotification, len(b))
	}
	be := binary.BigEndian
	n := &Notification{
		State:         ServerState(be.Uint32(b)),
		Leader:        int64(be.Uint64(b[4:])),
		Zxid:          int64(be.Uint64(b[12:])),
		ElectionEpoch: int64(be.Uint64(b[20:])),
	}
	if len(b) < 36 {
		n.PeerEpoch = Epoch(n.Zxid)
		return n, nil
	}
	n.PeerEpoch = int64(be.Uint64(b[28:]))
	if len(b) == 40 || len(b) < 40 {
		return n, nil
	}
	n.Version = int32(be.Uint32(b[36:]))
	if n.Version <= 1 {
		return n, nil
	}
	if len(b) < 44 {
		return nil, fmt.Errorf("%w: version %d without a config length", ErrShortNotification, n.Version)
	}
	cl := int32(be.Uint32(b[40:]))
	if cl < 0 || int(cl) > len(b)-44 {
		return nil, fmt.Errorf("%w: config length %d with %d bytes left", ErrShortNotification, cl, len(b)-44)
	}
	n.Config = append([]byte(nil), b[44:44+cl]...)
	return n, nil
}

// InitialMessage opens an election connection: protocol version, sid, and
// the sender's election address ("host:port"; several joined by "|" in
// ProtocolV2). An old (3.4) peer sends its sid alone; then Addr is "".
type InitialMessage struct {
	Protocol int64
	SID      int64
	Addr     string
}

// Encode returns the opening bytes.
func (m *InitialMessage) Encode() []byte {
	b := make([]byte, 0, 20+len(m.Addr))
	b = binary.BigEndian.AppendUint64(b, uint64(m.Protocol))
	b = binary.BigEndian.AppendUint64(b, uint64(m.SID))
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.Addr)))
	return append(b, m.Addr...)
}

// ReadInitialMessage reads an opening as QuorumCnxManager.handleConnection
// does: a non-negative first long is an old peer's sid; otherwise it must
// be ProtocolV1 or ProtocolV2, followed by the sid and 1 to 2048 bytes of
// address.
func ReadInitialMessage(r io.Reader) (*InitialMessage, error) {
	var b [12]byte
	if _, err := io.ReadFull(r, b[:8]); err != nil {
		return nil, fmt.Errorf("zab: election opening: %w", err)
	}
	m := &InitialMessage{Protocol: int64(binary.BigEndian.Uint64(b[:8]))}
	if m.Protocol >= 0 {
		m.SID = m.Protocol
		return m, nil
	}
	if m.Protocol != ProtocolV1 && m.Protocol != ProtocolV2 {
		return nil, fmt.Errorf("zab: election opening: unrecognized protocol version %d", m.Protocol)
	}
	if _, err := io.ReadFull(r, b[:12]); err != nil {
		return nil, fmt.Errorf("zab: election opening: %w", noEOF(err))
	}
	m.SID = int64(binary.BigEndian.Uint64(b[:8]))
	n := int32(binary.BigEndian.Uint32(b[8:]))
	if n <= 0 || n > maxInitialAddr {
		return nil, fmt.Errorf("zab: election opening: unreasonable address length %d", n)
	}
	addr := make([]byte, n)
	if _, err := io.ReadFull(r, addr); err != nil {
		return nil, fmt.Errorf("zab: election opening: %w", noEOF(err))
	}
	m.Addr = string(addr)
	return m, nil
}

// readElectionMessage reads one length-prefixed election message body (1
// to 512 KiB, as RecvWorker accepts).
func readElectionMessage(r *bufio.Reader) ([]byte, error) {
	n, err := readInt(r)
	if err != nil {
		return nil, err
	}
	if n <= 0 || n > maxElectionMessage {
		return nil, fmt.Errorf("zab: election message length %d out of range", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, noEOF(err)
	}
	return b, nil
}

// electionFrame prefixes body with its length, as SendWorker sends it.
func electionFrame(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	return append(b, body...)
}

// Server is one member of the ensemble as a server.N line names it.
type Server struct {
	ID           int64
	Addr         string // quorum (learner) address, host:port
	ElectionAddr string // election address, host:port
	Observer     bool
}

// ParseServerLine parses the value of a server.N line,
// host:quorumPort:electionPort[:participant|observer][;clientAddr]. With
// several addresses ("|", 3.6+) the first is taken.
func ParseServerLine(id int64, v string) (Server, error) {
	s := Server{ID: id}
	v, _, _ = strings.Cut(strings.TrimSpace(v), ";")
	v, _, _ = strings.Cut(v, "|")
	host := ""
	rest := v
	if strings.HasPrefix(v, "[") {
		end := strings.Index(v, "]")
		if end < 0 {
			return s, fmt.Errorf("zab: server.%d=%q: unclosed [", id, v)
		}
		host, rest = v[:end+1], strings.TrimPrefix(v[end+1:], ":")
	} else {
		host, rest, _ = strings.Cut(v, ":")
	}
	parts := strings.Split(rest, ":")
	if host == "" || len(parts) < 2 || len(parts) > 3 {
		return s, fmt.Errorf("zab: server.%d=%q: want host:port:port[:role]", id, v)
	}
	for _, p := range parts[:2] {
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return s, fmt.Errorf("zab: server.%d=%q: bad port %q", id, v, p)
		}
	}
	s.Addr = host + ":" + parts[0]
	s.ElectionAddr = host + ":" + parts[1]
	if len(parts) == 3 {
		switch strings.ToLower(parts[2]) {
		case "observer":
			s.Observer = true
		case "participant":
		default:
			return s, fmt.Errorf("zab: server.%d=%q: unknown role %q", id, v, parts[2])
		}
	}
	return s, nil
}

// View is a configuration: the members and the version ZooKeeper gives
// it (the zxid of the reconfig that made it; 0 for a static one).
type View struct {
	Version int64
	Servers []Server
}

// Voters returns the participants.
func (v View) Voters() []Server {
	var out []Server
	for _, s := range v.Servers {
		if !s.Observer {
			out = append(out, s)
		}
	}
	return out
}

// Server returns the member with sid id.
func (v View) Server(id int64) (Server, bool) {
	for _, s := range v.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return Server{}, false
}

// ParseView parses a dynamic configuration as ZooKeeper writes it
// (QuorumVerifier.toString: server.N lines and a hexadecimal version
// line); other keys are ignored.
func ParseView(text string) (View, error) {
	var v View
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		key, val, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		key = strings.TrimSpace(key)
		switch {
		case key == "version":
			n, err := strconv.ParseInt(strings.TrimSpace(val), 16, 64)
			if err != nil {
				return View{}, fmt.Errorf("zab: config version %q: %w", val, err)
			}
			v.Version = n
		case strings.HasPrefix(key, "server."):
			id, err := strconv.ParseInt(strings.TrimPrefix(key, "server."), 10, 64)
			if err != nil {
				return View{}, fmt.Errorf("zab: config %q: %w", key, err)
			}
			s, err := ParseServerLine(id, val)
			if err != nil {
				return View{}, err
			}
			v.Servers = append(v.Servers, s)
		}
	}
	if len(v.Servers) == 0 {
		return View{}, errors.New("zab: config names no server")
	}
	return v, nil
}

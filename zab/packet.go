package zab

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/zkserverd/zkserverd/jute"
)

// PacketType is a QuorumPacket's type, as the constants of ZooKeeper's
// Leader class number them.
type PacketType int32

// Every packet type of ZooKeeper 3.5 to 3.9.
const (
	Request           PacketType = 1  // learner → leader: a client request to order
	Proposal          PacketType = 2  // leader → follower: a transaction to log (also in a DIFF)
	Ack               PacketType = 3  // learner → leader: proposal logged, NEWLEADER or UPTODATE taken
	Commit            PacketType = 4  // leader → follower: commit the proposal with this zxid
	Ping              PacketType = 5  // both ways: liveness, and the learner's session touches
	Revalidate        PacketType = 6  // both ways: is this session still alive (reconnecting client)
	Sync              PacketType = 7  // leader → learner: a learner's sync request is done
	Inform            PacketType = 8  // leader → observer: a committed transaction
	CommitAndActivate PacketType = 9  // leader → follower: commit a reconfig and activate it
	NewLeader         PacketType = 10 // leader → learner: end of the sync data (carries the config)
	FollowerInfo      PacketType = 11 // follower → leader: first packet, a LearnerInfo
	UpToDate          PacketType = 12 // leader → learner: the learner may serve
	Diff              PacketType = 13 // leader → learner: proposals and commits follow
	Trunc             PacketType = 14 // leader → learner: drop everything after zxid
	Snap              PacketType = 15 // leader → learner: a snapshot follows on the stream
	ObserverInfo      PacketType = 16 // observer → leader: first packet, a LearnerInfo
	LeaderInfo        PacketType = 17 // leader → learner: the new epoch and protocol version
	AckEpoch          PacketType = 18 // learner → leader: current epoch and last zxid
	InformAndActivate PacketType = 19 // leader → observer: a committed reconfig to activate
)

var packetNames = map[PacketType]string{
	Request: "REQUEST", Proposal: "PROPOSAL", Ack: "ACK", Commit: "COMMIT", Ping: "PING",
	Revalidate: "REVALIDATE", Sync: "SYNC", Inform: "INFORM", CommitAndActivate: "COMMITANDACTIVATE",
	NewLeader: "NEWLEADER", FollowerInfo: "FOLLOWERINFO", UpToDate: "UPTODATE", Diff: "DIFF",
	Trunc: "TRUNC", Snap: "SNAP", ObserverInfo: "OBSERVERINFO", LeaderInfo: "LEADERINFO",
	AckEpoch: "ACKEPOCH", InformAndActivate: "INFORMANDACTIVATE",
}

// String returns ZooKeeper's name of the type, or UNKNOWN(n).
func (t PacketType) String() string {
	if s, ok := packetNames[t]; ok {
		return s
	}
	return fmt.Sprintf("UNKNOWN(%d)", int32(t))
}

// ProtocolVersion is the Zab protocol version a learner announces in its
// LearnerInfo and a leader in its LEADERINFO (Zab 1.0, ZooKeeper 3.4+).
const ProtocolVersion = 0x10000

// Packet is a QuorumPacket of zookeeper.jute: int type, long zxid, buffer
// data, vector<Id> authinfo. A nil Data or AuthInfo is written as the
// null buffer or vector (length -1), as Java writes null; an empty non-nil
// one as length 0.
type Packet struct {
	Type     PacketType
	Zxid     int64
	Data     []byte
	AuthInfo []jute.ID
}

// Encode appends the packet as BinaryOutputArchive.writeRecord writes it.
func (p *Packet) Encode(e *jute.Encoder) {
	e.Int(int32(p.Type))
	e.Long(p.Zxid)
	e.Buffer(p.Data)
	if p.AuthInfo == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(p.AuthInfo)))
	for i := range p.AuthInfo {
		p.AuthInfo[i].Encode(e)
	}
}

// String is a short description for logs.
func (p *Packet) String() string {
	return fmt.Sprintf("%s zxid=0x%x data=%dB", p.Type, p.Zxid, len(p.Data))
}

// Limits bound what ReadPacket accepts: a hostile or broken peer gets an
// error before anything large is allocated.
type Limits struct {
	// MaxData is the largest data buffer (default DefaultMaxData).
	MaxData int
	// MaxAuth is the most authinfo entries (default 64).
	MaxAuth int
	// MaxString is the longest authinfo scheme or id (default 4096).
	MaxString int
}

// DefaultMaxData is the default data limit: well above ZooKeeper's
// jute.maxbuffer (1 MiB by default), which bounds every transaction.
const DefaultMaxData = 16 << 20

func (l Limits) withDefaults() Limits {
	if l.MaxData <= 0 {
		l.MaxData = DefaultMaxData
	}
	if l.MaxAuth <= 0 {
		l.MaxAuth = 64
	}
	if l.MaxString <= 0 {
		l.MaxString = 4096
	}
	return l
}

// ErrTooLarge is reported for a length beyond the Limits.
var ErrTooLarge = errors.New("zab: length beyond limit")

// ErrBadLength is reported for a negative length other than -1.
var ErrBadLength = errors.New("zab: bad length")

// ReadPacket reads one QuorumPacket from r (packets on a quorum
// connection follow each other with no framing). It returns io.EOF only
// when r ends before the packet's first byte; a packet cut short is
// io.ErrUnexpectedEOF.
func ReadPacket(r *bufio.Reader, lim Limits) (*Packet, error) {
	lim = lim.withDefaults()
	hdr, err := peek(r, 12)
	if err != nil {
		return nil, err
	}
	p := &Packet{
		Type: PacketType(binary.BigEndian.Uint32(hdr[:4])),
		Zxid: int64(binary.BigEndian.Uint64(hdr[4:])),
	}
	r.Discard(12)
	if p.Data, err = readBuffer(r, lim.MaxData); err != nil {
		return nil, fmt.Errorf("zab: %s data: %w", p.Type, noEOF(err))
	}
	n, err := readInt(r)
	if err != nil {
		return nil, fmt.Errorf("zab: %s authinfo: %w", p.Type, noEOF(err))
	}
	switch {
	case n == -1:
		return p, nil
	case n < 0:
		return nil, fmt.Errorf("zab: %s authinfo count %d: %w", p.Type, n, ErrBadLength)
	case int(n) > lim.MaxAuth:
		return nil, fmt.Errorf("zab: %s authinfo count %d (limit %d): %w", p.Type, n, lim.MaxAuth, ErrTooLarge)
	}
	p.AuthInfo = make([]jute.ID, 0, n)
	for i := 0; i < int(n); i++ {
		scheme, err := readBuffer(r, lim.MaxString)
		if err != nil {
			return nil, fmt.Errorf("zab: %s authinfo %d scheme: %w", p.Type, i, noEOF(err))
		}
		id, err := readBuffer(r, lim.MaxString)
		if err != nil {
			return nil, fmt.Errorf("zab: %s authinfo %d id: %w", p.Type, i, noEOF(err))
		}
		p.AuthInfo = append(p.AuthInfo, jute.ID{Scheme: string(scheme), ID: string(id)})
	}
	return p, nil
}

// DecodePacket decodes exactly one packet from b.
func DecodePacket(b []byte, lim Limits) (*Packet, error) {
	r := bufio.NewReader(bytes.NewReader(b))
	p, err := ReadPacket(r, lim)
	if err != nil {
		return nil, noEOF(err)
	}
	if n := r.Buffered(); n > 0 {
		return nil, fmt.Errorf("zab: %d trailing bytes after %s", n, p.Type)
	}
	return p, nil
}

// EncodePacket returns the packet's bytes.
func EncodePacket(p *Packet) []byte {
	var e jute.Encoder
	p.Encode(&e)
	return e.Bytes()
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readInt reads a 4-byte big-endian int (through Peek, so that nothing
// escapes to the heap).
func readInt(r *bufio.Reader) (int32, error) {
	b, err := peek(r, 4)
	if err != nil {
		return 0, err
	}
	v := int32(binary.BigEndian.Uint32(b))
	r.Discard(4)
	return v, nil
}

// peek returns the next n bytes (n no larger than r's buffer) without
// consuming them: io.EOF if none remain, io.ErrUnexpectedEOF if some do.
func peek(r *bufio.Reader, n int) ([]byte, error) {
	b, err := r.Peek(n)
	if len(b) == n {
		return b, nil
	}
	if err == io.EOF && len(b) > 0 {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// readBuffer reads a length-prefixed buffer of at most limit bytes; the
// null buffer (-1) reads as nil. The bytes are read in chunks, so a length
// that lies costs no more memory than the bytes that really arrive.
func readBuffer(r *bufio.Reader, limit int) ([]byte, error) {
	n, err := readInt(r)
	if err != nil {
		return nil, err
	}
	switch {
	case n == -1:
		return nil, nil
	case n < 0:
		return nil, fmt.Errorf("length %d: %w", n, ErrBadLength)
	case int(n) > limit:
		return nil, fmt.Errorf("length %d (limit %d): %w", n, limit, ErrTooLarge)
	}
	const chunk = 64 << 10
	if n <= chunk {
		out := make([]byte, n)
		if _, err := io.ReadFull(r, out); err != nil {
			return nil, noEOF(err)
		}
		return out, nil
	}
	out := make([]byte, 0, chunk)
	for len(out) < int(n) {
		start := len(out)
		out = slices.Grow(out, min(int(n)-start, chunk))[:start+min(int(n)-start, chunk)]
		if _, err := io.ReadFull(r, out[start:]); err != nil {
			return nil, noEOF(err)
		}
	}
	return out, nil
}

// ReadString reads a jute ustring of at most limit bytes (the SNAP
// signature).
func ReadString(r *bufio.Reader, limit int) (string, error) {
	b, err := readBuffer(r, limit)
	return string(b), err
}

// LearnerInfo is the record a learner sends in FOLLOWERINFO or
// OBSERVERINFO: long serverid, int protocolVersion, long configVersion.
type LearnerInfo struct {
	ServerID        int64
	ProtocolVersion int32
	ConfigVersion   int64
}

// Encode implements jute.Record.
func (li *LearnerInfo) Encode(e *jute.Encoder) {
	e.Long(li.ServerID)
	e.Int(li.ProtocolVersion)
	e.Long(li.ConfigVersion)
}

// Decode implements jute.Record. Like LearnerHandler, it accepts the
// older 8-byte (sid only) and 12-byte (no config version) forms.
func (li *LearnerInfo) Decode(d *jute.Decoder) {
	*li = LearnerInfo{}
	li.ServerID = d.Long()
	if d.Remaining() >= 4 {
		li.ProtocolVersion = d.Int()
	}
	if d.Remaining() >= 8 {
		li.ConfigVersion = d.Long()
	}
}

// Epoch returns the epoch of a zxid (its high 32 bits).
func Epoch(zxid int64) int64 { return int64(uint64(zxid) >> 32) }

// MakeZxid returns the zxid of counter in epoch.
func MakeZxid(epoch, counter int64) int64 { return epoch<<32 | (counter & 0xffffffff) }

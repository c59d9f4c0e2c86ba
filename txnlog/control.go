package txnlog

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Control entry kinds: entries that carry no client transaction but keep
// the members of an ensemble honest with each other. Each is a kind byte,
// controlVersion, a fixed body and the CRC-32C (Seal).
//
//	EntryIdentity    [16]byte ensemble id: the ensemble this log belongs
//	                 to; the first one in a log decides, later ones that
//	                 name another ensemble are ignored
//	EntryCheckpoint  no body: every member records the digest of its tree
//	                 at this position (replication's digest log)
//	EntryDigest      uint64 checkpoint index, int64 zxid, uint64 digest:
//	                 the leader's record of that checkpoint, which every
//	                 member compares with its own
const (
	EntryIdentity   byte = 2
	EntryCheckpoint byte = 3
	EntryDigest     byte = 4

	controlVersion byte = 1
)

// Kind returns an entry's kind byte (0 for an empty entry).
func Kind(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func isControl(kind byte) bool {
	return kind == EntryIdentity || kind == EntryCheckpoint || kind == EntryDigest
}

// EnsembleID names one ensemble: chosen at random when its first leader
// takes office, recorded in its log, its snapshots and every member's
// data directory. The zero value means none is known.
type EnsembleID [16]byte

// NewEnsembleID returns a random ensemble id.
func NewEnsembleID() EnsembleID {
	var id EnsembleID
	rand.Read(id[:])
	return id
}

// IsZero reports whether id is unset.
func (id EnsembleID) IsZero() bool { return id == EnsembleID{} }

// String is the id in hex, "none" when unset.
func (id EnsembleID) String() string {
	if id.IsZero() {
		return "none"
	}
	return hex.EncodeToString(id[:])
}

// ParseEnsembleID reads an id written by String.
func ParseEnsembleID(s string) (EnsembleID, error) {
	var id EnsembleID
	if s == "none" || s == "" {
		return id, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("txnlog: bad ensemble id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// Control is a decoded control entry. Ensemble is set for EntryIdentity;
// Index, Zxid and Digest for EntryDigest.
type Control struct {
	Kind     byte
	Ensemble EnsembleID
	Index    uint64
	Zxid     int64
	Digest   uint64
}

// Encode returns the sealed entry.
func (c *Control) Encode() []byte {
	b := []byte{c.Kind, controlVersion}
	switch c.Kind {
	case EntryIdentity:
		b = append(b, c.Ensemble[:]...)
	case EntryDigest:
		b = binary.BigEndian.AppendUint64(b, c.Index)
		b = binary.BigEndian.AppendUint64(b, uint64(c.Zxid))
		b = binary.BigEndian.AppendUint64(b, c.Digest)
	}
	return Seal(b)
}

// controlBodySize is the body length of each control kind.
var controlBodySize = map[byte]int{EntryIdentity: 16, EntryCheckpoint: 0, EntryDigest: 24}

// DecodeControl parses a control entry, checking its checksum. It never
// panics on malformed input.
func DecodeControl(b []byte) (*Control, error) {
	if len(b) < 2 || !isControl(b[0]) || b[1] != controlVersion {
		return nil, ErrUnknownEntry
	}
	body, err := verify(b)
	if err != nil {
		return nil, err
	}
	c := &Control{Kind: b[0]}
	body = body[2:]
	if len(body) != controlBodySize[c.Kind] {
		return nil, fmt.Errorf("txnlog: control entry %d: body of %d bytes", c.Kind, len(body))
	}
	switch c.Kind {
	case EntryIdentity:
		copy(c.Ensemble[:], body)
	case EntryDigest:
		c.Index = binary.BigEndian.Uint64(body)
		c.Zxid = int64(binary.BigEndian.Uint64(body[8:]))
		c.Digest = binary.BigEndian.Uint64(body[16:])
	}
	return c, nil
}

package txnlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/session"
)

// FSM snapshot envelope (big-endian; docs/format/txnlog.md):
//
//	[8]byte  magic "ZKSDSNAP"
//	uint32   version 3 (2 is still read: it lacks the next two fields)
//	int64    last applied zxid
//	uint64   index of the last log entry applied (0: none beyond raft's
//	         snapshot index)
//	[16]byte the ensemble id (zero: none recorded yet)
//	uint64   the tree's digest (datatree.Tree.Digest) at the last zxid
//	uint64   length of the session table
//	         the session table (session.Table.WriteTo)
//	         the tree (datatree's snapshot stream)
//
// The applied index is at most raft's snapshot index, except in snapshots
// of earlier builds, whose followers applied entries before raft delivered
// them: the FSM skips entries up to it after a restore, so raft's replay
// applies nothing twice.

// snapshotMagic starts every FSM snapshot.
var snapshotMagic = [8]byte{'Z', 'K', 'S', 'D', 'S', 'N', 'A', 'P'}

// snapshotVersion is the envelope version written; snapshotVersionPlain
// (no ensemble id, no digest) is still read.
const (
	snapshotVersion      = 3
	snapshotVersionPlain = 2
)

// SnapshotHeaderSize is the size of an encoded SnapshotHeader, which the
// session table follows; snapshotHeaderSizePlain that of version 2.
const (
	SnapshotHeaderSize      = snapshotHeaderSizePlain + 16 + 8
	snapshotHeaderSizePlain = 8 + 4 + 8 + 8 + 8
)

// maxSessionTable bounds the session table length a reader accepts.
const maxSessionTable = 1 << 34

// ErrBadSnapshot is wrapped by every error for a stream that is not an FSM
// snapshot of this format or is damaged.
var ErrBadSnapshot = errors.New("txnlog: bad snapshot")

// SnapshotHeader is the start of an FSM snapshot.
type SnapshotHeader struct {
	// LastZxid is the zxid of the last transaction applied.
	LastZxid int64
	// AppliedIndex is the index of the last log entry applied, 0 when the
	// state holds nothing beyond the index raft stores with the snapshot.
	AppliedIndex uint64
	// Ensemble is the id of the ensemble the state belongs to (zero: none
	// recorded, as in version 2 snapshots).
	Ensemble EnsembleID
	// Digest is the tree's digest at LastZxid; HasDigest is false for
	// version 2 snapshots, which did not record one.
	Digest    uint64
	HasDigest bool
}

// SnapshotHead returns what an FSM snapshot holds before its tree: the
// header and the encoded session table.
func SnapshotHead(h SnapshotHeader, sessions *session.Table) ([]byte, error) {
	var table bytes.Buffer
	if _, err := sessions.WriteTo(&table); err != nil {
		return nil, fmt.Errorf("txnlog: encode session table: %w", err)
	}
	out := make([]byte, SnapshotHeaderSize, SnapshotHeaderSize+table.Len())
	copy(out, snapshotMagic[:])
	binary.BigEndian.PutUint32(out[8:], snapshotVersion)
	binary.BigEndian.PutUint64(out[12:], uint64(h.LastZxid))
	binary.BigEndian.PutUint64(out[20:], h.AppliedIndex)
	copy(out[28:], h.Ensemble[:])
	binary.BigEndian.PutUint64(out[44:], h.Digest)
	binary.BigEndian.PutUint64(out[52:], uint64(table.Len()))
	return append(out, table.Bytes()...), nil
}

// ReadSnapshotHeader reads the header of an FSM snapshot from r and
// returns it with the length of the session table that follows.
func ReadSnapshotHeader(r io.Reader) (SnapshotHeader, uint64, error) {
	var b [SnapshotHeaderSize]byte
	if _, err := io.ReadFull(r, b[:snapshotHeaderSizePlain]); err != nil {
		return SnapshotHeader{}, 0, fmt.Errorf("%w: header: %w", ErrBadSnapshot, err)
	}
	if [8]byte(b[:8]) != snapshotMagic {
		return SnapshotHeader{}, 0, fmt.Errorf("%w: not an FSM snapshot", ErrBadSnapshot)
	}
	h := SnapshotHeader{
		LastZxid:     int64(binary.BigEndian.Uint64(b[12:])),
		AppliedIndex: binary.BigEndian.Uint64(b[20:]),
	}
	switch v := binary.BigEndian.Uint32(b[8:]); v {
	case snapshotVersionPlain:
		return h, binary.BigEndian.Uint64(b[28:]), nil
	case snapshotVersion:
	default:
		return SnapshotHeader{}, 0, fmt.Errorf("%w: unsupported version %d", ErrBadSnapshot, v)
	}
	if _, err := io.ReadFull(r, b[snapshotHeaderSizePlain:]); err != nil {
		return SnapshotHeader{}, 0, fmt.Errorf("%w: header: %w", ErrBadSnapshot, err)
	}
	copy(h.Ensemble[:], b[28:44])
	h.Digest, h.HasDigest = binary.BigEndian.Uint64(b[44:]), true
	return h, binary.BigEndian.Uint64(b[52:]), nil
}

// SnapshotState is the content of an FSM snapshot.
type SnapshotState struct {
	SnapshotHeader
	Sessions *session.Table
	Tree     *datatree.Tree
}

// snapshotBuffer is the read buffer ReadSnapshot puts around its reader.
const snapshotBuffer = 1 << 20

// ReadSnapshot reads a whole FSM snapshot; the tree gets cfg. Truncated or
// damaged input is refused with an error wrapping ErrBadSnapshot; it never
// panics.
func ReadSnapshot(r io.Reader, cfg datatree.Config) (*SnapshotState, error) {
	br := bufio.NewReaderSize(r, snapshotBuffer)
	h, tableLen, err := ReadSnapshotHeader(br)
	if err != nil {
		return nil, err
	}
	if tableLen > maxSessionTable {
		return nil, fmt.Errorf("%w: session table length %d", ErrBadSnapshot, tableLen)
	}
	lr := &io.LimitedReader{R: br, N: int64(tableLen)}
	sessions, err := session.ReadTable(lr)
	if err != nil {
		return nil, fmt.Errorf("%w: sessions: %w", ErrBadSnapshot, err)
	}
	if lr.N != 0 {
		return nil, fmt.Errorf("%w: session table shorter than its length %d", ErrBadSnapshot, tableLen)
	}
	tree, err := datatree.ReadSnapshot(br, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: tree: %w", ErrBadSnapshot, err)
	}
	return &SnapshotState{SnapshotHeader: h, Sessions: sessions, Tree: tree}, nil
}

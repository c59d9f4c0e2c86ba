package replication

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/session"
)

// FSM snapshot stream (docs/format/txnlog.md): an 8-byte magic, a version,
// the last applied zxid, from version 2 the index of the last log entry
// applied, the length of the session table, the session table, then the
// tree's own stream (datatree, docs/format/snapshot.md).
//
// The index matters because a follower may apply entries before raft
// delivers them (fsm.applyAhead): a snapshot raft takes at index i can hold
// entries after i, which the FSM must not apply again when raft replays the
// log from i+1 after restoring it. Version 1 streams, written before early
// applies existed, hold nothing after their raft index.

// snapshotMagic starts every FSM snapshot stream.
var snapshotMagic = [8]byte{'Z', 'K', 'S', 'D', 'S', 'N', 'A', 'P'}

const (
	snapshotVersion   = 2
	snapshotVersionV1 = 1 // no applied index
)

// snapshotHeaderSize is the size of the header before the session table;
// a version 1 header lacks the applied index (8 bytes).
const snapshotHeaderSize = 8 + 4 + 8 + 8 + 8

// Snapshot implements raft.FSM. It runs on the FSM goroutine between two
// applies and only captures the state: the session table is encoded (it is
// small) and the tree opens a copy-on-write snapshot, which costs nothing
// per znode. Persist, which raft runs on another goroutine while applies go
// on, writes the tree as it was here, at this log index.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sinceSnapshot.Store(0)
	var table bytes.Buffer
	if _, err := f.sessions.Load().WriteTo(&table); err != nil {
		return nil, fmt.Errorf("replication: snapshot sessions: %w", err)
	}
	s := &fsmSnapshot{head: snapshotHeader(f.lastZxid.Load(), f.last, table.Bytes())}
	tree := f.tree.Load()
	snap, err := tree.Snapshot()
	switch {
	case errors.Is(err, datatree.ErrSnapshotOpen):
		// An earlier snapshot was never released: serialize here, under
		// the tree's read lock, as a fallback.
		var buf bytes.Buffer
		if err := tree.WriteSnapshot(&buf); err != nil {
			return nil, fmt.Errorf("replication: snapshot tree: %w", err)
		}
		s.data = buf.Bytes()
	case err != nil:
		return nil, fmt.Errorf("replication: snapshot tree: %w", err)
	default:
		s.tree = snap
	}
	return s, nil
}

// snapshotHeader returns the stream's header followed by the encoded
// session table.
func snapshotHeader(lastZxid int64, lastIndex uint64, table []byte) []byte {
	hdr := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(table))
	copy(hdr[:8], snapshotMagic[:])
	binary.BigEndian.PutUint32(hdr[8:], snapshotVersion)
	binary.BigEndian.PutUint64(hdr[12:], uint64(lastZxid))
	binary.BigEndian.PutUint64(hdr[20:], lastIndex)
	binary.BigEndian.PutUint64(hdr[28:], uint64(len(table)))
	return append(hdr, table...)
}

// errBadSnapshot reports a snapshot stream that is not ours or is damaged.
var errBadSnapshot = errors.New("replication: bad snapshot")

// Restore implements raft.FSM: it loads a snapshot into new structures and
// swaps them in.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	r := bufio.NewReaderSize(rc, 1<<20)
	lastZxid, lastIndex, tableLen, err := readSnapshotHeader(r)
	if err != nil {
		return err
	}
	if tableLen > 1<<34 {
		return fmt.Errorf("%w: session table length %d", errBadSnapshot, tableLen)
	}
	table, err := session.ReadTable(io.LimitReader(r, int64(tableLen)))
	if err != nil {
		return fmt.Errorf("replication: restore sessions: %w", err)
	}
	tree, err := datatree.ReadSnapshot(r, f.treeCfg)
	if err != nil {
		return fmt.Errorf("replication: restore tree: %w", err)
	}
	f.tree.Store(tree)
	f.sessions.Store(table)
	f.lastZxid.Store(lastZxid)
	f.last = lastIndex
	if f.observer != nil {
		f.observer.Restored()
	}
	return nil
}

// readSnapshotHeader reads a version 1 or 2 header up to the session table;
// lastIndex is 0 (unknown) in version 1.
func readSnapshotHeader(r io.Reader) (lastZxid int64, lastIndex, tableLen uint64, err error) {
	var hdr [snapshotHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:12]); err != nil {
		return 0, 0, 0, fmt.Errorf("%w: header: %v", errBadSnapshot, err)
	}
	if !bytes.Equal(hdr[:8], snapshotMagic[:]) {
		return 0, 0, 0, fmt.Errorf("%w: unknown format", errBadSnapshot)
	}
	rest := hdr[12:]
	switch binary.BigEndian.Uint32(hdr[8:]) {
	case snapshotVersion:
	case snapshotVersionV1:
		rest = rest[:16]
	default:
		return 0, 0, 0, fmt.Errorf("%w: unknown format", errBadSnapshot)
	}
	if _, err := io.ReadFull(r, rest); err != nil {
		return 0, 0, 0, fmt.Errorf("%w: header: %v", errBadSnapshot, err)
	}
	lastZxid = int64(binary.BigEndian.Uint64(rest))
	if len(rest) == 24 {
		lastIndex = binary.BigEndian.Uint64(rest[8:])
	}
	return lastZxid, lastIndex, binary.BigEndian.Uint64(rest[len(rest)-8:]), nil
}

// fsmSnapshot is a captured FSM state: the header and session table
// encoded at capture, and the tree's open snapshot (or, in the fallback,
// its bytes).
type fsmSnapshot struct {
	head []byte
	tree *datatree.Snapshot
	data []byte
}

// Persist implements raft.FSMSnapshot. It writes the tree while applies
// continue; the tree keeps what they change until Release.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("replication: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) write(w io.Writer) error {
	if _, err := w.Write(s.head); err != nil {
		return err
	}
	if s.tree == nil {
		_, err := w.Write(s.data)
		return err
	}
	_, err := s.tree.WriteTo(w)
	return err
}

// Release implements raft.FSMSnapshot: the tree stops keeping copies.
func (s *fsmSnapshot) Release() {
	if s.tree != nil {
		s.tree.Release()
	}
}

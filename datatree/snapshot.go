package datatree

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// Snapshot stream layout (big-endian; str = uint32 length + bytes):
//
//	magic     [8]byte  "zkdtree\x00"
//	version   uint32   snapshotVersion (1)
//	nacls     uint32   number of ACL lists
//	nacls ×   uint32 n, then n × (int32 perms, str scheme, str id)
//	nnodes    uint64   number of nodes
//	nnodes ×  node, in strictly increasing byte order of path:
//	            str    path
//	            int32  data length (-1 = null), then the data bytes
//	            int64  czxid, mzxid, ctime, mtime, pzxid
//	            int32  version, stored cversion, aversion
//	            int64  ephemeralOwner (as stored: container/TTL encodings kept)
//	            uint8  kind (0 persistent, 1 ephemeral, 2 container, 3 TTL)
//	            uint32 index into the ACL lists
//	crc       uint32   CRC-32C of every byte above
//
// ACL lists are numbered in order of first use by the sorted nodes, so the
// bytes depend only on the tree's content: two trees in the same state
// write identical snapshots.

// ErrBadSnapshot is wrapped by every error ReadSnapshot returns for input
// that is not a complete, well-formed snapshot.
var ErrBadSnapshot = errors.New("datatree: bad snapshot")

const snapshotVersion = 1

var snapshotMagic = [8]byte{'z', 'k', 'd', 't', 'r', 'e', 'e', 0}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// newCRC returns the snapshot checksum: CRC-32C.
func newCRC() hash.Hash32 { return crc32.New(crcTable) }

// nodeFixedSize is the size of a node record after its path and data.
const nodeFixedSize = 5*8 + 3*4 + 8 + 1 + 4

// snapWriter buffers output and checksums it.
type snapWriter struct {
	w   *bufio.Writer
	crc hash.Hash32
	buf []byte
	err error
}

func (s *snapWriter) flushBuf() {
	if s.err != nil {
		s.buf = s.buf[:0]
		return
	}
	s.crc.Write(s.buf)
	_, s.err = s.w.Write(s.buf)
	s.buf = s.buf[:0]
}

func (s *snapWriter) u32(v uint32) { s.buf = binary.BigEndian.AppendUint32(s.buf, v) }
func (s *snapWriter) u64(v uint64) { s.buf = binary.BigEndian.AppendUint64(s.buf, v) }
func (s *snapWriter) i64(v int64)  { s.u64(uint64(v)) }
func (s *snapWriter) i32(v int32)  { s.u32(uint32(v)) }

func (s *snapWriter) str(v string) {
	s.u32(uint32(len(v)))
	s.buf = append(s.buf, v...)
}

func (s *snapWriter) bytes(v []byte) {
	if v == nil {
		s.i32(-1)
		return
	}
	s.i32(int32(len(v)))
	s.buf = append(s.buf, v...)
}

// WriteSnapshot writes the whole tree to w as a deterministic stream: the
// same tree content always gives the same bytes. It holds the read lock for
// the duration, so writes wait until it returns.
func (t *Tree) WriteSnapshot(w io.Writer) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	nodes := make([]*node, 0, len(t.nodes))
	for _, n := range t.nodes {
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b *node) int { return strings.Compare(a.path, b.path) })
	index := make(map[aclID]uint32)
	var order []aclID
	for _, n := range nodes {
		if _, ok := index[n.acl]; !ok {
			index[n.acl] = uint32(len(order))
			order = append(order, n.acl)
		}
	}
	s := &snapWriter{w: bufio.NewWriterSize(w, 64<<10), crc: newCRC()}
	s.buf = append(s.buf, snapshotMagic[:]...)
	s.u32(snapshotVersion)
	s.u32(uint32(len(order)))
	for _, id := range order {
		writeACLList(s, t.acls.get(id))
	}
	s.u64(uint64(len(nodes)))
	for _, n := range nodes {
		writeNode(s, n, index[n.acl])
		if len(s.buf) >= 32<<10 {
			s.flushBuf()
		}
	}
	s.flushBuf()
	if s.err == nil {
		var sum [4]byte
		binary.BigEndian.PutUint32(sum[:], s.crc.Sum32())
		_, s.err = s.w.Write(sum[:])
	}
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err != nil {
		return fmt.Errorf("datatree: write snapshot: %w", s.err)
	}
	return nil
}

func writeACLList(s *snapWriter, list []jute.ACL) {
	s.u32(uint32(len(list)))
	for _, a := range list {
		s.i32(a.Perms)
		s.str(a.ID.Scheme)
		s.str(a.ID.ID)
	}
	if len(s.buf) >= 32<<10 {
		s.flushBuf()
	}
}

func writeNode(s *snapWriter, n *node, acl uint32) {
	s.str(n.path)
	s.bytes(n.data)
	s.i64(n.czxid)
	s.i64(n.mzxid)
	s.i64(n.ctime)
	s.i64(n.mtime)
	s.i64(n.pzxid)
	s.i32(n.version)
	s.i32(n.cversion)
	s.i32(n.aversion)
	s.i64(n.owner)
	s.buf = append(s.buf, byte(n.kind))
	s.u32(acl)
}

// snapReader reads checksummed input without reading past the snapshot when
// the source is an io.ByteReader.
type snapReader struct {
	r       io.Reader
	crc     hash.Hash32
	scratch [nodeFixedSize]byte
}

// byteReader is what ReadSnapshot reads from; bufio.Reader satisfies it.
type byteReader interface {
	io.Reader
	io.ByteReader
}

func (s *snapReader) full(b []byte) error {
	if _, err := io.ReadFull(s.r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%w: truncated: %w", ErrBadSnapshot, err)
	}
	s.crc.Write(b)
	return nil
}

func (s *snapReader) u32() (uint32, error) {
	b := s.scratch[:4]
	if err := s.full(b); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

func (s *snapReader) u64() (uint64, error) {
	b := s.scratch[:8]
	if err := s.full(b); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b), nil
}

// maxSnapshotField bounds a single string or data length.
const maxSnapshotField = 1 << 30

// blob reads n bytes, growing its buffer as data actually arrives so that a
// corrupt length cannot force a huge allocation.
func (s *snapReader) blob(n int) ([]byte, error) {
	const chunk = 64 << 10
	if n <= chunk {
		b := make([]byte, n)
		return b, s.full(b)
	}
	var b []byte
	for len(b) < n {
		k := min(n-len(b), max(chunk, len(b)))
		b = slices.Grow(b, k)
		if err := s.full(b[len(b) : len(b)+k]); err != nil {
			return nil, err
		}
		b = b[:len(b)+k]
	}
	return b, nil
}

func (s *snapReader) str() (string, error) {
	n, err := s.u32()
	if err != nil {
		return "", err
	}
	if n > maxSnapshotField {
		return "", fmt.Errorf("%w: string length %d", ErrBadSnapshot, n)
	}
	b, err := s.blob(int(n))
	return string(b), err
}

func (s *snapReader) data() ([]byte, error) {
	v, err := s.u32()
	if err != nil {
		return nil, err
	}
	n := int32(v)
	switch {
	case n == -1:
		return nil, nil
	case n < 0 || n > maxSnapshotField:
		return nil, fmt.Errorf("%w: data length %d", ErrBadSnapshot, n)
	}
	return s.blob(int(n))
}

// ReadSnapshot rebuilds a tree from a stream written by WriteSnapshot. It
// verifies the structure and the checksum and returns an error wrapping
// ErrBadSnapshot for truncated or corrupt input; it never panics. If r is
// not an io.ByteReader (a *bufio.Reader is), ReadSnapshot may read past the
// end of the snapshot; pass a *bufio.Reader to read one embedded in a longer
// stream.
func ReadSnapshot(r io.Reader, cfg Config) (*Tree, error) {
	br, ok := r.(byteReader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	s := &snapReader{r: br, crc: newCRC()}
	var head [12]byte
	if err := s.full(head[:]); err != nil {
		return nil, err
	}
	if [8]byte(head[:8]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not a datatree snapshot", ErrBadSnapshot)
	}
	if v := binary.BigEndian.Uint32(head[8:]); v != snapshotVersion {
		return nil, fmt.Errorf("%w: unsupported version %d", ErrBadSnapshot, v)
	}
	t := newEmpty(cfg)
	lists, err := s.readACLLists()
	if err != nil {
		return nil, err
	}
	if err := t.readNodes(s, lists); err != nil {
		return nil, err
	}
	want := s.crc.Sum32()
	got, err := s.u32()
	if err != nil {
		return nil, err
	}
	if got != want {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot)
	}
	for _, p := range []string{rootPath, procPath, quotaPath, configPath} {
		if n := t.nodes[p]; n == nil || n.kind != kindPersistent {
			return nil, fmt.Errorf("%w: missing or non-persistent system node %s", ErrBadSnapshot, p)
		}
	}
	t.acls.sweep()
	return t, nil
}

func (s *snapReader) readACLLists() ([][]jute.ACL, error) {
	n, err := s.u32()
	if err != nil {
		return nil, err
	}
	var lists [][]jute.ACL
	for i := uint32(0); i < n; i++ {
		list, err := s.readACLList()
		if err != nil {
			return nil, err
		}
		lists = append(lists, list)
	}
	return lists, nil
}

func (s *snapReader) readACLList() ([]jute.ACL, error) {
	n, err := s.u32()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: empty ACL list", ErrBadSnapshot)
	}
	var list []jute.ACL
	for j := uint32(0); j < n; j++ {
		perms, err := s.u32()
		if err != nil {
			return nil, err
		}
		scheme, err := s.str()
		if err != nil {
			return nil, err
		}
		id, err := s.str()
		if err != nil {
			return nil, err
		}
		list = append(list, jute.ACL{Perms: int32(perms), ID: jute.ID{Scheme: scheme, ID: id}})
	}
	return list, nil
}

// readNodes reads the node records and links each under its parent, which
// the strict path order guarantees was read before.
func (t *Tree) readNodes(s *snapReader, lists [][]jute.ACL) error {
	count, err := s.u64()
	if err != nil {
		return err
	}
	ids := make([]aclID, len(lists))
	for i, l := range lists {
		ids[i] = t.acls.intern(l)
		t.acls.release(ids[i]) // nodes take their own references below
	}
	prev := ""
	for i := uint64(0); i < count; i++ {
		n, err := s.readNode(ids)
		if err != nil {
			return err
		}
		if i > 0 && n.path <= prev {
			return fmt.Errorf("%w: path %q out of order", ErrBadSnapshot, n.path)
		}
		prev = n.path
		if err := t.restoreNode(n); err != nil {
			return err
		}
	}
	return nil
}

func (s *snapReader) readNode(ids []aclID) (*node, error) {
	path, err := s.str()
	if err != nil {
		return nil, err
	}
	if ValidatePath(path) != jute.OK {
		return nil, fmt.Errorf("%w: invalid path %q", ErrBadSnapshot, path)
	}
	data, err := s.data()
	if err != nil {
		return nil, err
	}
	b := s.scratch[:nodeFixedSize]
	if err := s.full(b); err != nil {
		return nil, err
	}
	be := binary.BigEndian
	n := &node{
		path: path, data: data,
		czxid:    int64(be.Uint64(b[0:])),
		mzxid:    int64(be.Uint64(b[8:])),
		ctime:    int64(be.Uint64(b[16:])),
		mtime:    int64(be.Uint64(b[24:])),
		pzxid:    int64(be.Uint64(b[32:])),
		version:  int32(be.Uint32(b[40:])),
		cversion: int32(be.Uint32(b[44:])),
		aversion: int32(be.Uint32(b[48:])),
		owner:    int64(be.Uint64(b[52:])),
		kind:     nodeKind(b[60]),
	}
	idx := be.Uint32(b[61:])
	if idx >= uint32(len(ids)) {
		return nil, fmt.Errorf("%w: %s: ACL index %d out of range", ErrBadSnapshot, path, idx)
	}
	n.acl = ids[idx]
	if !ownerMatchesKind(n.kind, n.owner) {
		return nil, fmt.Errorf("%w: %s: kind %d with owner %#x", ErrBadSnapshot, path, n.kind, n.owner)
	}
	return n, nil
}

// ownerMatchesKind checks the stored ephemeralOwner against the node kind.
func ownerMatchesKind(k nodeKind, owner int64) bool {
	switch k {
	case kindPersistent:
		return owner == 0
	case kindEphemeral:
		return owner != 0
	case kindContainer:
		return owner == jute.ContainerOwner
	case kindTTL:
		ttl := owner &^ jute.TTLOwnerMask
		return owner&jute.TTLOwnerMask == jute.TTLOwnerMask && ttl > 0 && ttl <= jute.MaxTTL
	}
	return false
}

// restoreNode links a node read from a snapshot into the tree.
func (t *Tree) restoreNode(n *node) error {
	t.acls.addRef(n.acl)
	if n.path == rootPath {
		t.root = n
		t.insert(n)
		return nil
	}
	if t.root == nil {
		return fmt.Errorf("%w: %s before the root", ErrBadSnapshot, n.path)
	}
	parentPath, _, _ := splitParent(n.path)
	parent := t.lookup(parentPath)
	if parent == nil {
		return fmt.Errorf("%w: %s has no parent", ErrBadSnapshot, n.path)
	}
	if parent.kind == kindEphemeral {
		return fmt.Errorf("%w: %s is a child of an ephemeral", ErrBadSnapshot, n.path)
	}
	t.link(parent, parentPath, n)
	return nil
}

package datatree

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"io"

	"github.com/cespare/xxhash/v2"
	"github.com/zkserverd/zkserverd/jute"
)

// Snapshot stream, version 2 (big-endian; str = uint32 length + bytes;
// docs/format/snapshot.md has the full description):
//
//	magic     [8]byte  "zkdtree\x00"
//	version   uint32   2
//	nnodes    uint64   number of node records
//	nnodes ×  node, depth first from the root, each directory's children in
//	          increasing byte order of name, each followed by its subtree:
//	            str    name ("" for the root)
//	            int32  data length (-1 = null), then the data bytes
//	            int64  czxid, mzxid, ctime, mtime, pzxid
//	            int32  version, stored cversion, aversion
//	            int64  ephemeralOwner (as stored: container/TTL encodings kept)
//	            uint8  kind (0 persistent, 1 ephemeral, 2 container, 3 TTL)
//	            uint32 number of children
//	            uint32 ACL index; the lists are numbered in order of first
//	                   use, and the record that first uses one carries it:
//	                   uint32 n, then n × (int32 perms, str scheme, str id)
//	crc       uint32   CRC-32C of every byte above
//
// The bytes depend only on the tree's content: two trees in the same state
// write identical snapshots. The only version is 2.

// ErrBadSnapshot is wrapped by every error ReadSnapshot returns for input
// that is not a complete, well-formed snapshot.
var ErrBadSnapshot = errors.New("datatree: bad snapshot")

// snapshotVersion is the stream's version.
const snapshotVersion = 2

var snapshotMagic = [8]byte{'z', 'k', 'd', 't', 'r', 'e', 'e', 0}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// statSize is the size of the stat fields of a node record: five int64, three int32, the int64 owner and the kind byte.
const statSize = 5*8 + 3*4 + 8 + 1

// nodeTail is the size of a record after its data: the stat
// fields, the child count and the ACL index.
const nodeTail = statSize + 4 + 4

// snapWriter buffers output and checksums it.
type snapWriter struct {
	w   io.Writer
	crc uint32
	buf []byte
	n   int64
	err error
}

func newSnapWriter(w io.Writer) *snapWriter {
	return &snapWriter{w: w, buf: make([]byte, 0, walkFlushSize+walkFlushSize/4)}
}

// flush checksums and writes the buffered bytes.
func (s *snapWriter) flush() {
	if s.err == nil && len(s.buf) > 0 {
		s.crc = crc32.Update(s.crc, crcTable, s.buf)
		var k int
		k, s.err = s.w.Write(s.buf)
		s.n += int64(k)
	}
	s.buf = s.buf[:0]
}

// finish writes the checksum trailer and returns the stream's length.
func (s *snapWriter) finish() (int64, error) {
	s.flush()
	if s.err == nil {
		var k int
		k, s.err = s.w.Write(binary.BigEndian.AppendUint32(nil, s.crc))
		s.n += int64(k)
	}
	return s.n, s.err
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

// header writes the magic, the version and the node count.
func (s *snapWriter) header(count uint64) {
	s.buf = append(s.buf, snapshotMagic[:]...)
	s.u32(snapshotVersion)
	s.u64(count)
}

// node writes one node record; list is the ACL list when this
// record is the first to use index acl, else nil.
func (s *snapWriter) node(n *node, children, acl uint32, list []jute.ACL) {
	s.str(n.name())
	s.bytes(n.data())
	s.stat(n)
	s.u32(children)
	s.u32(acl)
	if list != nil {
		s.aclList(list)
	}
}

// stat writes the stat fields, owner and kind of n.
func (s *snapWriter) stat(n *node) {
	s.i64(n.czxid)
	s.i64(n.mzxid)
	s.i64(n.ctime)
	s.i64(n.mtime)
	s.i64(n.pzxid)
	s.i32(n.version)
	s.i32(n.cversion)
	s.i32(n.aversion)
	s.i64(n.owner)
	s.buf = append(s.buf, byte(n.kind()))
}

func (s *snapWriter) aclList(list []jute.ACL) {
	s.u32(uint32(len(list)))
	for _, a := range list {
		s.i32(a.Perms)
		s.str(a.ID.Scheme)
		s.str(a.ID.ID)
	}
}

// snapReader parses a snapshot in place from a bufio.Reader's buffer:
// it peeks at what it needs, checksums what it consumed and discards it,
// so it never consumes bytes past the end of the snapshot. Fields larger
// than the buffer are read through it into their own allocation.
type snapReader struct {
	br  *bufio.Reader
	win []byte // peeked bytes; win[:off] are consumed but not yet discarded
	off int
	crc uint32
}

// commit checksums and discards the consumed bytes.
func (s *snapReader) commit() {
	if s.off > 0 {
		s.crc = crc32.Update(s.crc, crcTable, s.win[:s.off])
		s.br.Discard(s.off) // cannot fail: the bytes are buffered
	}
	s.win, s.off = s.win[s.off:s.off], 0
}

// need makes at least n (<= the buffer size) unconsumed bytes available
// in s.win[s.off:].
func (s *snapReader) need(n int) error {
	if len(s.win)-s.off >= n {
		return nil
	}
	s.commit()
	if _, err := s.br.Peek(n); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%w: truncated: %w", ErrBadSnapshot, err)
	}
	s.win, _ = s.br.Peek(s.br.Buffered())
	return nil
}

// take consumes n bytes and returns them; they are valid until the next
// call.
func (s *snapReader) take(n int) ([]byte, error) {
	if n > s.br.Size() {
		return s.copyOut(n)
	}
	if err := s.need(n); err != nil {
		return nil, err
	}
	b := s.win[s.off : s.off+n]
	s.off += n
	return b, nil
}

func (s *snapReader) u32() (uint32, error) {
	b, err := s.take(4)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

func (s *snapReader) u64() (uint64, error) {
	b, err := s.take(8)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b), nil
}

// maxSnapshotField bounds a single string or data length.
const maxSnapshotField = 1 << 30

// copyOut consumes n bytes into a new slice. Beyond the buffer size it
// reads in chunks, growing the slice as data actually arrives, so that a
// corrupt length cannot force a huge allocation.
func (s *snapReader) copyOut(n int) ([]byte, error) {
	if n <= s.br.Size() {
		b, err := s.take(n)
		if err != nil {
			return nil, err
		}
		return append(make([]byte, 0, n), b...), nil
	}
	s.commit()
	chunk := s.br.Size()
	var out []byte
	for len(out) < n {
		k := min(n-len(out), max(chunk, len(out)))
		out = append(out, make([]byte, k)...)
		part := out[len(out)-k:]
		if _, err := io.ReadFull(s.br, part); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("%w: truncated: %w", ErrBadSnapshot, err)
		}
		s.crc = crc32.Update(s.crc, crcTable, part)
	}
	return out, nil
}

// str reads a string field.
func (s *snapReader) str() (string, error) {
	n, err := s.u32()
	if err != nil {
		return "", err
	}
	if n > maxSnapshotField {
		return "", fmt.Errorf("%w: string length %d", ErrBadSnapshot, n)
	}
	if int(n) <= s.br.Size() {
		b, err := s.take(int(n))
		return string(b), err
	}
	b, err := s.copyOut(int(n))
	return string(b), err
}

// data reads a data field (nil for a null buffer).
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
	return s.copyOut(int(n))
}

// decodeStat decodes the stat fields and owner of a record into n and
// returns the kind byte, which the caller checks.
func decodeStat(b []byte, n *node) nodeKind {
	be := binary.BigEndian
	n.czxid = int64(be.Uint64(b[0:]))
	n.mzxid = int64(be.Uint64(b[8:]))
	n.ctime = int64(be.Uint64(b[16:]))
	n.mtime = int64(be.Uint64(b[24:]))
	n.pzxid = int64(be.Uint64(b[32:]))
	n.version = int32(be.Uint32(b[40:]))
	n.cversion = int32(be.Uint32(b[44:]))
	n.aversion = int32(be.Uint32(b[48:]))
	n.owner = int64(be.Uint64(b[52:]))
	return nodeKind(b[60])
}

// checkKind validates a record's kind against its owner and stores it.
func checkKind(n *node, k nodeKind) error {
	if !ownerMatchesKind(k, n.owner) {
		return fmt.Errorf("%w: %q: kind %d with owner %#x", ErrBadSnapshot, n.name(), k, n.owner)
	}
	n.meta = uint32(k) << metaKindShift
	return nil
}

// aclList reads one ACL list.
func (s *snapReader) aclList() ([]jute.ACL, error) {
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

// snapBufferSize is the read buffer ReadSnapshot puts around a reader that
// is not a *bufio.Reader.
const snapBufferSize = 1 << 20

// ReadSnapshot rebuilds a tree from a stream written by WriteSnapshot or
// Snapshot.WriteTo. It
// verifies the structure and the checksum and returns an error wrapping
// ErrBadSnapshot for truncated or corrupt input; it never panics. From a
// *bufio.Reader it consumes exactly the snapshot's bytes, so a snapshot
// embedded in a longer stream can be read; any other reader is wrapped in
// one and may be read past the end. A larger bufio buffer (1 MiB) reads
// faster.
func ReadSnapshot(r io.Reader, cfg Config) (*Tree, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, snapBufferSize)
	}
	s := &snapReader{br: br}
	head, err := s.take(12)
	if err != nil {
		return nil, err
	}
	if [8]byte(head[:8]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not a datatree snapshot", ErrBadSnapshot)
	}
	if v := binary.BigEndian.Uint32(head[8:]); v != snapshotVersion {
		return nil, fmt.Errorf("%w: unsupported version %d", ErrBadSnapshot, v)
	}
	t := newEmpty(cfg)
	if err := t.readNodes(s); err != nil {
		return nil, err
	}
	s.commit()
	want := s.crc
	sum, err := s.take(4)
	if err != nil {
		return nil, err
	}
	s.commit()
	if binary.BigEndian.Uint32(sum) != want {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot)
	}
	for _, p := range []string{rootPath, procPath, quotaPath, configPath} {
		if n := t.lookup(p); n == nil || n.kind() != kindPersistent {
			return nil, fmt.Errorf("%w: missing or non-persistent system node %s", ErrBadSnapshot, p)
		}
	}
	t.quota = t.lookup(quotaPath)
	t.acls.sweep()
	return t, nil
}

// readFrame is a directory being read: the node, how many children are
// still to come, the children read so far, and the UTF-16 and byte lengths
// of the node's path, which its children's paths extend (0 for the root).
type readFrame struct {
	n    *node
	left uint32
	kids []*node
	plen int
	blen int
}

// maxPresize bounds the children slice allocated ahead from a record's
// child count, which a corrupt stream could inflate; larger directories
// grow.
const maxPresize = 1 << 16

// buildAsync is the size from which a directory's child set is built on
// another goroutine while reading goes on.
const buildAsync = 1024

// nodeReader reads node records: depth first, so each record's
// parent is the innermost directory with children still to come. A
// directory's children are collected in a slice while it is open; when it
// closes, its child set (kids) is built, for a large directory on a
// builder goroutine. No one looks children up before ReadSnapshot
// returns: the strict name order already rules out repeats. Each record's
// path is built in one buffer, extending its parent's, for the indexes and
// the digest, which the reader sums as it goes (digest.go).
type nodeReader struct {
	t     *Tree
	s     *snapReader
	ids   []aclID     // the tree's id of each stream ACL index
	stack []readFrame // open directories, the root first
	path  []byte      // the path of the latest record
	build chan readFrame
	built chan struct{}
}

func (t *Tree) readNodes(s *snapReader) error {
	count, err := s.u64()
	if err != nil {
		return err
	}
	r := &nodeReader{t: t, s: s}
	defer r.wait()
	for i := uint64(0); i < count; i++ {
		r.popDone()
		if i > 0 && len(r.stack) == 0 {
			return fmt.Errorf("%w: node %d of %d outside the tree", ErrBadSnapshot, i, count)
		}
		if err := r.record(count - i - 1); err != nil {
			return err
		}
	}
	r.popDone()
	if len(r.stack) > 0 || count == 0 {
		return fmt.Errorf("%w: %d nodes do not make a tree", ErrBadSnapshot, count)
	}
	return nil
}

// popDone closes the directories whose children have all been read and
// has their child sets built.
func (r *nodeReader) popDone() {
	for len(r.stack) > 0 && r.stack[len(r.stack)-1].left == 0 {
		f := r.stack[len(r.stack)-1]
		r.stack = r.stack[:len(r.stack)-1]
		if len(f.kids) < buildAsync {
			f.n.kids = buildKids(r.t.seed, f.kids)
			continue
		}
		if r.build == nil {
			r.build, r.built = make(chan readFrame, 16), make(chan struct{})
			go func(seed maphash.Seed) {
				for f := range r.build {
					f.n.kids = buildKids(seed, f.kids)
				}
				close(r.built)
			}(r.t.seed)
		}
		r.build <- f
	}
}

// wait stops the builder goroutine, if one started, once it has built
// every directory handed to it.
func (r *nodeReader) wait() {
	if r.build != nil {
		close(r.build)
		<-r.built
	}
}

// buildKids returns the child set of the nodes in list (nil if empty).
func buildKids(seed maphash.Seed, list []*node) *kids {
	if len(list) == 0 {
		return nil
	}
	k := newKids(len(list))
	for _, c := range list {
		k.add(c, nameHash(seed, c.name()))
	}
	return k
}

// record reads one record and links it under the innermost open directory
// (or makes it the root); a node with children becomes the innermost open
// directory. remaining is the number of records after it.
func (r *nodeReader) record(remaining uint64) error {
	s := r.s
	name, err := s.str()
	if err != nil {
		return err
	}
	data, err := s.data()
	if err != nil {
		return err
	}
	b, err := s.take(nodeTail)
	if err != nil {
		return err
	}
	n := &node{}
	n.setName(name)
	n.setData(data)
	if err := checkKind(n, decodeStat(b, n)); err != nil {
		return err
	}
	kids := binary.BigEndian.Uint32(b[statSize:])
	if err := r.aclRef(n, binary.BigEndian.Uint32(b[statSize+4:])); err != nil {
		return err
	}
	if kids > 0 && n.kind() == kindEphemeral {
		return fmt.Errorf("%w: ephemeral %q has children", ErrBadSnapshot, name)
	}
	r.t.lastZxid = max(r.t.lastZxid, n.czxid)
	r.sum(n, kids)
	plen := 0
	if len(r.stack) == 0 {
		if name != "" || n.kind() != kindPersistent {
			return fmt.Errorf("%w: bad root record %q", ErrBadSnapshot, name)
		}
		r.t.root = n
		r.t.insert(n, rootPath)
	} else if plen, err = r.link(n); err != nil {
		return err
	}
	if kids > 0 || len(r.stack) == 0 {
		blen := len(r.path)
		if len(r.stack) == 0 {
			blen = 0 // the root's children are "/" and their name
		}
		list := make([]*node, 0, min(uint64(kids), remaining, maxPresize))
		r.stack = append(r.stack, readFrame{n: n, left: kids, kids: list, plen: plen, blen: blen})
	}
	return nil
}

// sum sets r.path to the path of the record n, which has kids children
// ("/" for the root, else its parent's path, '/' and its name), and adds
// n's hash to the tree's digest.
func (r *nodeReader) sum(n *node, kids uint32) {
	if len(r.stack) == 0 {
		r.path = append(r.path[:0], rootPath...)
	} else {
		r.path = append(r.path[:r.stack[len(r.stack)-1].blen], '/')
		r.path = append(r.path, n.name()...)
	}
	p := xxhash.Sum64(r.path)
	r.t.digest += r.t.ownHash(p, n) + kidsHash(p, n, int(kids))
}

// aclRef resolves a record's ACL index, reading the list when the record
// is its first user.
func (r *nodeReader) aclRef(n *node, idx uint32) error {
	switch {
	case idx < uint32(len(r.ids)):
		n.setACL(r.ids[idx])
		r.t.acls.addRef(n.acl())
	case idx == uint32(len(r.ids)):
		list, err := r.s.aclList()
		if err != nil {
			return err
		}
		n.setACL(r.t.acls.intern(list))
		r.ids = append(r.ids, n.acl())
	default:
		return fmt.Errorf("%w: ACL index %d out of range", ErrBadSnapshot, idx)
	}
	return nil
}

// link checks the child n against its parent, the innermost open
// directory, adds it there and returns the UTF-16 length of its path.
func (r *nodeReader) link(n *node) (int, error) {
	t, p := r.t, &r.stack[len(r.stack)-1]
	name := n.name()
	if !validName(name) {
		return 0, fmt.Errorf("%w: invalid name %q", ErrBadSnapshot, name)
	}
	if len(p.kids) > 0 && name <= p.kids[len(p.kids)-1].name() {
		return 0, fmt.Errorf("%w: name %q out of order", ErrBadSnapshot, name)
	}
	p.kids = append(p.kids, n)
	p.left--
	plen := javaLen(name) + 1
	if len(r.stack) > 1 {
		plen += p.plen
	}
	t.count++
	t.dataSize += int64(plen + len(n.data()))
	if n.kind() != kindPersistent {
		t.indexKind(n, string(r.path))
	}
	return plen, nil
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

package zkimport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

// Errors wrapped by the readers.
var (
	// ErrBadSnapshot reports a ZooKeeper snapshot that is truncated, corrupt
	// or not a snapshot.
	ErrBadSnapshot = errors.New("zkimport: bad ZooKeeper snapshot")
	// ErrBadLog reports a ZooKeeper transaction log that is corrupt.
	ErrBadLog = errors.New("zkimport: bad ZooKeeper transaction log")
)

// File header magics ("ZKSN", "ZKLG") and the format version ZooKeeper
// writes (FileSnap.VERSION, FileTxnLog.VERSION).
const (
	snapMagic   int32 = 0x5a4b534e
	logMagic    int32 = 0x5a4b4c47
	fileVersion int32 = 2
)

// maxField bounds one string or buffer in a snapshot. Reading grows the
// buffer only as bytes arrive, so a corrupt length costs no memory.
const maxField = 1 << 30

// streamReader reads Jute primitives from a stream, keeping the running
// Adler-32 that ZooKeeper's snapshot seal checks. Its error is sticky.
type streamReader struct {
	r    *bufio.Reader
	sum  hash.Hash32
	n    int64 // bytes read
	err  error
	tmp  [8]byte
	onIO func(int64) // progress callback, may be nil
}

// newStreamReader reads r, through a buffer of its own unless r is a
// *bufio.Reader already (which is then read no further than asked).
func newStreamReader(r io.Reader, onIO func(int64)) *streamReader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 256<<10)
	}
	return &streamReader{r: br, sum: adler32.New(), onIO: onIO}
}

func (s *streamReader) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *streamReader) full(b []byte) bool {
	if s.err != nil {
		return false
	}
	k, err := io.ReadFull(s.r, b)
	s.n += int64(k)
	if s.onIO != nil {
		s.onIO(int64(k))
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		s.fail(fmt.Errorf("%w: truncated at byte %d: %w", ErrBadSnapshot, s.n, err))
		return false
	}
	s.sum.Write(b)
	return true
}

func (s *streamReader) int32() int32 {
	if !s.full(s.tmp[:4]) {
		return 0
	}
	return int32(binary.BigEndian.Uint32(s.tmp[:4]))
}

func (s *streamReader) int64() int64 {
	if !s.full(s.tmp[:8]) {
		return 0
	}
	return int64(binary.BigEndian.Uint64(s.tmp[:8]))
}

// buffer reads a Jute buffer; -1 is the null buffer (nil).
func (s *streamReader) buffer() []byte {
	n := s.int32()
	if s.err != nil || n == -1 {
		return nil
	}
	if n < 0 || n > maxField {
		s.fail(fmt.Errorf("%w: length %d at byte %d", ErrBadSnapshot, n, s.n-4))
		return nil
	}
	const chunk = 64 << 10
	b := make([]byte, 0, min(int(n), chunk))
	for len(b) < int(n) && s.err == nil {
		k := min(int(n)-len(b), max(chunk, len(b)))
		start := len(b)
		b = append(b, make([]byte, k)...)
		s.full(b[start:])
	}
	if s.err != nil {
		return nil
	}
	return b
}

// string reads a Jute string; null reads as "".
func (s *streamReader) string() string { return string(s.buffer()) }

// seal checks ZooKeeper's stream seal: the Adler-32 of everything read so
// far as a long, then the string "/".
func (s *streamReader) seal() {
	want := int64(s.sum.Sum32())
	got := s.int64()
	if s.err != nil {
		return
	}
	if got != want {
		s.fail(fmt.Errorf("%w: checksum %#x, computed %#x", ErrBadSnapshot, got, want))
		return
	}
	if p := s.string(); s.err == nil && p != "/" {
		s.fail(fmt.Errorf("%w: seal trailer %q", ErrBadSnapshot, p))
	}
}

// readSnapshot reads a FileSnap stream (uncompressed) into a new db: the
// header, the session map, the ACL cache and the node list, then the seal,
// and what may follow it (readTrailer). It never panics.
func readSnapshot(r io.Reader, onIO func(int64)) (*db, error) {
	s := newStreamReader(r, onIO)
	if magic, version := s.int32(), s.int32(); s.err == nil && (magic != snapMagic || version != fileVersion) {
		return nil, fmt.Errorf("%w: magic %#x version %d", ErrBadSnapshot, magic, version)
	}
	s.int64() // dbid
	d := newDB()
	readBody(s, d)
	s.seal()
	if s.err == nil {
		readTrailer(s, d)
	}
	if s.err != nil {
		return nil, s.err
	}
	if d.nodes["/"] == nil {
		return nil, fmt.Errorf("%w: no root node", ErrBadSnapshot)
	}
	return d, nil
}

// readBody reads what SerializeUtils.serializeSnapshot writes: the
// session map, then DataTree.serialize (the ACL cache, the nodes and the
// "/" that ends them).
func readBody(s *streamReader, d *db) {
	readSessions(s, d)
	cache := readACLCache(s)
	readNodes(s, d, cache)
}

func readSessions(s *streamReader, d *db) {
	count := s.int32()
	for i := int32(0); i < count && s.err == nil; i++ {
		id, timeout := s.int64(), s.int32()
		if s.err == nil {
			d.sessions[id] = timeout
		}
	}
}

// readACLCache reads ReferenceCountedACLCache.serialize: a count, then per
// entry its long key and the ACL vector.
func readACLCache(s *streamReader) map[int64][]jute.ACL {
	cache := make(map[int64][]jute.ACL)
	count := s.int32()
	for i := int32(0); i < count && s.err == nil; i++ {
		key := s.int64()
		n := s.int32()
		if n < -1 {
			s.fail(fmt.Errorf("%w: ACL vector length %d", ErrBadSnapshot, n))
		}
		var list []jute.ACL
		for j := int32(0); j < n && s.err == nil; j++ {
			perms := s.int32()
			scheme := s.string()
			id := s.string()
			list = append(list, jute.ACL{Perms: perms, ID: jute.ID{Scheme: scheme, ID: id}})
		}
		cache[key] = list
	}
	return cache
}

// readNodes reads DataTree.serializeNode output: (path, DataNode) pairs in
// depth-first order, the root under the empty path, ending with "/".
func readNodes(s *streamReader, d *db, cache map[int64][]jute.ACL) {
	for s.err == nil {
		path := s.string()
		if s.err != nil || path == "/" {
			return
		}
		data := s.buffer()
		aclKey := s.int64()
		var st Stat
		st.Czxid, st.Mzxid, st.Ctime, st.Mtime = s.int64(), s.int64(), s.int64(), s.int64()
		st.Version, st.Cversion, st.Aversion = s.int32(), s.int32(), s.int32()
		st.EphemeralOwner, st.Pzxid = s.int64(), s.int64()
		if s.err != nil {
			return
		}
		if path == "" {
			path = "/"
		} else if err := checkChild(d, path); err != nil {
			s.fail(err)
			return
		}
		acl, err := resolveACL(cache, aclKey)
		if err != nil {
			s.fail(fmt.Errorf("%s: %w", path, err))
			return
		}
		d.put(&Node{Path: path, Data: data, ACL: d.acls.intern(acl), Stat: st})
	}
}

// checkChild rejects a node whose path is malformed, duplicated or whose
// parent was not read before it.
func checkChild(d *db, path string) error {
	pp, ok := parentOf(path)
	if !ok || datatree.ValidatePath(path) != jute.OK {
		return fmt.Errorf("%w: invalid path %q", ErrBadSnapshot, path)
	}
	if d.nodes[path] != nil {
		return fmt.Errorf("%w: duplicate node %q", ErrBadSnapshot, path)
	}
	if d.nodes[pp] == nil {
		return fmt.Errorf("%w: node %q before its parent", ErrBadSnapshot, path)
	}
	return nil
}

// resolveACL maps an ACL cache key to its list; -1 is world:anyone/all.
func resolveACL(cache map[int64][]jute.ACL, key int64) ([]jute.ACL, error) {
	if key == openACLID {
		return jute.OpenACLUnsafe, nil
	}
	list, ok := cache[key]
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("%w: unknown or empty ACL %d", ErrBadSnapshot, key)
	}
	return list, nil
}

// Sizes of what ZooKeeper may write after a snapshot's seal: the 3.6+
// digest of the tree (ZxidDigest: zxid, digest version, digest) and 3.9's
// last processed zxid, each sealed again.
const (
	sealSize      = 8 + 4 + 1
	digestTrailer = 8 + 4 + 8 + sealSize
	zxidTrailer   = 8 + sealSize
)

// readTrailer reads what follows the first seal, told apart by what is
// left: 33 bytes are the digest, 21 the last processed zxid, 54 both.
// Their seals are checked; the digest is ZooKeeper's own algorithm and is
// not. The last processed zxid is kept in d.lastZxid. Anything else after
// the first seal is ignored, as ZooKeeper itself reads a trailer only
// when its features are on.
func readTrailer(s *streamReader, d *db) {
	rest, _ := s.r.Peek(digestTrailer + zxidTrailer + 1)
	n := len(rest)
	if n != digestTrailer && n != zxidTrailer && n != digestTrailer+zxidTrailer {
		return
	}
	if n != zxidTrailer {
		s.int64() // the zxid of the digest
		s.int32() // its version
		s.int64() // the digest
		s.seal()
	}
	if n != digestTrailer {
		z := s.int64()
		s.seal()
		if s.err == nil {
			d.lastZxid = z
		}
	}
}

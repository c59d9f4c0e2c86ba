package zkimport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"slices"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/session"
)

// Backups in Apache ZooKeeper's snapshot format. WriteSnapshot writes a
// zkserverd state as ZooKeeper's FileSnap writes a DataTree, in the
// format readSnapshot (snapshot.go) reads: the file header, the session
// table, the ACL cache, the nodes (parents first) and the stream's
// Adler-32 seal. Nothing follows the seal: ZooKeeper reads the 3.6+
// digest and 3.9's last processed zxid only when they are present, and
// takes the last zxid from the file name (snapshot.<zxid in hex>), so a
// backup is named that way to be loaded by a ZooKeeper server.
// ReadBackup reads such a stream back as zkserverd restores it.

// zkDBID is the dbid ZooKeeper writes in a snapshot's header
// (FileSnap.DB_ID is not used by readers; ZooKeeper writes -1).
const zkDBID int64 = -1

// streamWriter writes Jute primitives, keeping the running Adler-32 that
// the seal carries. Its error is sticky.
type streamWriter struct {
	w   *bufio.Writer
	sum hash.Hash32
	n   int64
	err error
	tmp [8]byte
}

func newStreamWriter(w io.Writer) *streamWriter {
	return &streamWriter{w: bufio.NewWriterSize(w, 256<<10), sum: adler32.New()}
}

func (s *streamWriter) put(b []byte) {
	if s.err != nil {
		return
	}
	k, err := s.w.Write(b)
	s.n += int64(k)
	s.sum.Write(b[:k])
	s.err = err
}

func (s *streamWriter) int32(v int32) {
	binary.BigEndian.PutUint32(s.tmp[:4], uint32(v))
	s.put(s.tmp[:4])
}

func (s *streamWriter) int64(v int64) {
	binary.BigEndian.PutUint64(s.tmp[:8], uint64(v))
	s.put(s.tmp[:8])
}

// buffer writes a Jute buffer; nil is the null buffer (-1).
func (s *streamWriter) buffer(b []byte) {
	if b == nil {
		s.int32(-1)
		return
	}
	s.int32(int32(len(b)))
	s.put(b)
}

func (s *streamWriter) string(v string) {
	s.int32(int32(len(v)))
	s.put([]byte(v))
}

// seal writes the Adler-32 of everything written so far, then "/".
func (s *streamWriter) seal() {
	s.int64(int64(s.sum.Sum32()))
	s.string("/")
}

// WriteSnapshot writes tree and sessions to w as an Apache ZooKeeper
// snapshot (FileSnap, uncompressed) and returns the number of bytes
// written. Sessions are written in id order and the ACL lists in the
// order the nodes first use them, so one state always gives the same
// bytes. The tree must not change while it is written (Tree.Walk holds
// its read lock).
func WriteSnapshot(w io.Writer, tree *datatree.Tree, sessions *session.Table) (int64, error) {
	nodes, lists, err := collectNodes(tree)
	if err != nil {
		return 0, err
	}
	s := newStreamWriter(w)
	s.int32(snapMagic)
	s.int32(fileVersion)
	s.int64(zkDBID)
	all := sessions.All()
	slices.SortFunc(all, func(a, b session.Info) int { return cmpZxid(a.ID, b.ID) })
	s.int32(int32(len(all)))
	for _, info := range all {
		s.int64(info.ID)
		s.int32(info.Timeout)
	}
	s.int32(int32(len(lists)))
	for i, list := range lists {
		s.int64(int64(i + 1))
		s.int32(int32(len(list)))
		for _, a := range list {
			s.int32(a.Perms)
			s.string(a.ID.Scheme)
			s.string(a.ID.ID)
		}
	}
	for _, n := range nodes {
		path := n.Path
		if path == "/" {
			path = "" // ZooKeeper serializes the root under the empty path
		}
		s.string(path)
		s.buffer(n.Data)
		s.int64(n.aclKey)
		s.int64(n.Czxid)
		s.int64(n.Mzxid)
		s.int64(n.Ctime)
		s.int64(n.Mtime)
		s.int32(n.Version)
		s.int32(n.Cversion)
		s.int32(n.Aversion)
		s.int64(n.EphemeralOwner)
		s.int64(n.Pzxid)
	}
	s.string("/")
	s.seal()
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err != nil {
		return s.n, fmt.Errorf("zkimport: write ZooKeeper snapshot: %w", s.err)
	}
	return s.n, nil
}

// keyedNode is a node to write with the key of its ACL list.
type keyedNode struct {
	datatree.StoredNode
	aclKey int64
}

// collectNodes lists the tree's nodes, parents first, and numbers their
// distinct ACL lists from 1 (ZooKeeper's cache keys).
func collectNodes(tree *datatree.Tree) ([]keyedNode, [][]jute.ACL, error) {
	var nodes []keyedNode
	var lists [][]jute.ACL
	keys := make(map[string]int64)
	err := tree.Walk(func(n datatree.StoredNode) error {
		id := aclKey(n.ACL)
		k, ok := keys[id]
		if !ok {
			lists = append(lists, n.ACL)
			k = int64(len(lists))
			keys[id] = k
		}
		nodes = append(nodes, keyedNode{StoredNode: n, aclKey: k})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("zkimport: list the tree: %w", err)
	}
	return nodes, lists, nil
}

// aclKey is a map key naming an ACL list exactly.
func aclKey(list []jute.ACL) string {
	var b []byte
	for _, a := range list {
		b = binary.BigEndian.AppendUint32(b, uint32(a.Perms))
		b = binary.BigEndian.AppendUint32(b, uint32(len(a.ID.Scheme)))
		b = append(b, a.ID.Scheme...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(a.ID.ID)))
		b = append(b, a.ID.ID...)
	}
	return string(b)
}

// Backup is a state read from a ZooKeeper snapshot, as zkserverd
// restores it.
type Backup struct {
	Tree     *datatree.Tree
	Sessions *session.Table
	// LastZxid is the last processed zxid ZooKeeper 3.9 writes after the
	// seal, or else the highest zxid any node's stat records (older
	// snapshots do not carry their zxid: ZooKeeper takes it from the
	// file name); the larger of the two.
	LastZxid int64
}

// ReadBackup reads a ZooKeeper snapshot stream (uncompressed) into a
// tree and a session table, every node and stat as stored, ephemeral
// nodes and their sessions included (ZooKeeper's restore keeps both).
// System nodes the stream lacks (/zookeeper, its quota and config nodes)
// are added as a fresh ZooKeeper has them. A truncated, damaged or
// inconsistent stream is refused with an error wrapping ErrBadSnapshot or
// datatree.ErrBadSnapshot; it never panics.
func ReadBackup(r io.Reader) (*Backup, error) {
	d, err := readSnapshot(r, nil)
	if err != nil {
		return nil, err
	}
	img := d.image()
	last := img.LastZxid
	for _, n := range img.Nodes {
		last = max(last, n.Stat.Czxid, n.Stat.Mzxid, n.Stat.Pzxid)
	}
	nodes := img.Nodes
	tree, err := loadTree(nodes, nil)
	if err != nil {
		return nil, err
	}
	sessions := session.NewTable()
	for id, timeout := range d.sessions {
		sessions.Add(id, timeout)
	}
	return &Backup{Tree: tree, Sessions: sessions, LastZxid: last}, nil
}

package zkimport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// The datatree snapshot stream (see datatree/snapshot.go for the layout),
// written here directly so every stat field is kept exactly as ZooKeeper
// had it.
var treeMagic = [8]byte{'z', 'k', 'd', 't', 'r', 'e', 'e', 0}

const treeVersion = 1

// fsmMagic and fsmVersion start replication's FSM snapshot stream.
var fsmMagic = [8]byte{'Z', 'K', 'S', 'D', 'S', 'N', 'A', 'P'}

const fsmVersion = 1

// treeWriter buffers and checksums (CRC-32C) the tree stream.
type treeWriter struct {
	w   *bufio.Writer
	crc uint32
	buf []byte
	err error
	n   int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (t *treeWriter) flush() {
	if t.err == nil {
		t.crc = crc32.Update(t.crc, castagnoli, t.buf)
		_, t.err = t.w.Write(t.buf)
		t.n += int64(len(t.buf))
	}
	t.buf = t.buf[:0]
}

func (t *treeWriter) u32(v uint32) { t.buf = binary.BigEndian.AppendUint32(t.buf, v) }
func (t *treeWriter) i32(v int32)  { t.u32(uint32(v)) }
func (t *treeWriter) i64(v int64)  { t.buf = binary.BigEndian.AppendUint64(t.buf, uint64(v)) }
func (t *treeWriter) str(s string) { t.u32(uint32(len(s))); t.buf = append(t.buf, s...) }

func (t *treeWriter) data(b []byte) {
	if b == nil {
		t.i32(-1)
		return
	}
	t.i32(int32(len(b)))
	t.buf = append(t.buf, b...)
}

// aclKey identifies an ACL list by content.
func aclKey(list []jute.ACL) string {
	var b strings.Builder
	for _, a := range list {
		fmt.Fprintf(&b, "%d\x00%s\x00%s\x00", a.Perms, a.ID.Scheme, a.ID.ID)
	}
	return b.String()
}

// writeTree writes nodes, sorted by path, as a datatree snapshot stream and
// returns the number of bytes written. onNode is called after each node.
func writeTree(w io.Writer, nodes []*Node, onNode func()) (int64, error) {
	index := make(map[string]uint32)
	var lists [][]jute.ACL
	ids := make([]uint32, len(nodes))
	for i, n := range nodes {
		k := aclKey(n.ACL)
		id, ok := index[k]
		if !ok {
			id = uint32(len(lists))
			index[k] = id
			lists = append(lists, n.ACL)
		}
		ids[i] = id
	}
	t := &treeWriter{w: bufio.NewWriterSize(w, 64<<10)}
	t.buf = append(t.buf, treeMagic[:]...)
	t.u32(treeVersion)
	t.u32(uint32(len(lists)))
	for _, l := range lists {
		t.u32(uint32(len(l)))
		for _, a := range l {
			t.i32(a.Perms)
			t.str(a.ID.Scheme)
			t.str(a.ID.ID)
		}
	}
	t.i64(int64(len(nodes)))
	for i, n := range nodes {
		writeTreeNode(t, n, ids[i])
		if len(t.buf) >= 32<<10 {
			t.flush()
		}
		if onNode != nil {
			onNode()
		}
	}
	t.flush()
	if t.err == nil {
		t.buf = binary.BigEndian.AppendUint32(t.buf, t.crc)
		_, t.err = t.w.Write(t.buf)
		t.n += 4
	}
	if t.err == nil {
		t.err = t.w.Flush()
	}
	if t.err != nil {
		return t.n, fmt.Errorf("zkimport: write tree: %w", t.err)
	}
	return t.n, nil
}

func writeTreeNode(t *treeWriter, n *Node, acl uint32) {
	st := n.Stat
	t.str(n.Path)
	t.data(n.Data)
	t.i64(st.Czxid)
	t.i64(st.Mzxid)
	t.i64(st.Ctime)
	t.i64(st.Mtime)
	t.i64(st.Pzxid)
	t.i32(st.Version)
	t.i32(st.Cversion)
	t.i32(st.Aversion)
	t.i64(st.EphemeralOwner)
	t.buf = append(t.buf, byte(kindOf(st.EphemeralOwner)))
	t.u32(acl)
}

// fsmHeader returns the FSM snapshot header for lastZxid and a session
// table of tableLen bytes.
func fsmHeader(lastZxid int64, tableLen int) []byte {
	var h [28]byte
	copy(h[:8], fsmMagic[:])
	binary.BigEndian.PutUint32(h[8:], fsmVersion)
	binary.BigEndian.PutUint64(h[12:], uint64(lastZxid))
	binary.BigEndian.PutUint64(h[20:], uint64(tableLen))
	return h[:]
}

// finalNodes turns the replayed ZooKeeper state into the node set to
// write: ephemerals dropped (their sessions do not survive), the
// /zookeeper/config node reset to a standalone server's, the system nodes
// ensured, sorted by path. It returns the nodes and the number of
// ephemerals dropped.
func finalNodes(d *db) ([]*Node, int) {
	fresh := emptyZooKeeperDB()
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota"} {
		if d.nodes[p] == nil {
			d.put(fresh.nodes[p])
		}
	}
	d.nodes["/zookeeper/config"] = fresh.nodes["/zookeeper/config"]
	out := make([]*Node, 0, len(d.nodes))
	dropped := 0
	for _, n := range d.nodes {
		if kindOf(n.Stat.EphemeralOwner) == kindEphemeral {
			dropped++
			continue
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *Node) int { return strings.Compare(a.Path, b.Path) })
	return out, dropped
}

package mirror

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
	"sync/atomic"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

// ZooKeeper's tree digest (DigestCalculator, digest version 2): the sum,
// wrapping at 64 bits, over every node not under /zookeeper/ of the CRC32
// of its path ("" for the root), its data, then czxid, mzxid, pzxid,
// ctime, mtime (8 bytes each), version, stored cversion, aversion (4
// bytes each) and the stored ephemeralOwner (8 bytes), all big-endian.
// The leader logs the digest after each transaction (TxnDigest).

// zkDigestVersion is the DigestCalculator version this file implements.
const zkDigestVersion = 2

// systemPrefix is ZooDefs.ZOOKEEPER_NODE_SUBTREE: nodes below it are left
// out of the digest.
const systemPrefix = "/zookeeper/"

// digester keeps the ZooKeeper digest of one tree up to date. Client
// stats show container and TTL owners as 0, so it remembers the stored
// owner of those nodes itself. It is used by one goroutine; value is
// atomic so that State.Digest may read it from others.
type digester struct {
	value  atomic.Int64
	owners map[string]int64 // container and TTL nodes' stored ephemeralOwner
	ids    []jute.ID        // the mirror's read identity
}

// newDigester computes tree's digest from scratch.
func newDigester(tree *datatree.Tree, ids []jute.ID) *digester {
	d := &digester{owners: make(map[string]int64), ids: ids}
	tree.Walk(func(n datatree.StoredNode) error {
		if n.EphemeralOwner != 0 && !datatree.IsEphemeralOwner(n.EphemeralOwner) {
			d.owners[n.Path] = n.EphemeralOwner
		}
		d.value.Add(nodeDigest(n))
		return nil
	})
	return d
}

// nodeDigest is DigestCalculator.calculateDigest of one stored node.
func nodeDigest(n datatree.StoredNode) int64 {
	if strings.HasPrefix(n.Path, systemPrefix) {
		return 0
	}
	path := n.Path
	if path == "/" {
		path = ""
	}
	var b [60]byte
	binary.BigEndian.PutUint64(b[0:], uint64(n.Czxid))
	binary.BigEndian.PutUint64(b[8:], uint64(n.Mzxid))
	binary.BigEndian.PutUint64(b[16:], uint64(n.Pzxid))
	binary.BigEndian.PutUint64(b[24:], uint64(n.Ctime))
	binary.BigEndian.PutUint64(b[32:], uint64(n.Mtime))
	binary.BigEndian.PutUint32(b[40:], uint32(n.Version))
	binary.BigEndian.PutUint32(b[44:], uint32(n.Cversion))
	binary.BigEndian.PutUint32(b[48:], uint32(n.Aversion))
	binary.BigEndian.PutUint64(b[52:], uint64(n.EphemeralOwner))
	h := crc32.NewIEEE()
	h.Write([]byte(path))
	h.Write(n.Data)
	h.Write(b[:])
	return int64(h.Sum32())
}

// stored reads the node at path as stored (ACL aside), or reports false.
func (d *digester) stored(tree *datatree.Tree, path string) (datatree.StoredNode, bool) {
	data, st, code := tree.GetData(path, d.ids, nil)
	if code != jute.OK {
		return datatree.StoredNode{}, false
	}
	owner := st.EphemeralOwner
	if o, ok := d.owners[path]; ok {
		owner = o
	}
	return datatree.StoredNode{Path: path, Data: data,
		Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: st.Ctime, Mtime: st.Mtime,
		Version: st.Version, Cversion: (st.Cversion + st.NumChildren) / 2, Aversion: st.Aversion,
		EphemeralOwner: owner}, true
}

// sum returns the digest share of the nodes at paths (absent ones count
// 0). The paths must be distinct.
func (d *digester) sum(tree *datatree.Tree, paths []string) int64 {
	var total int64
	for _, p := range paths {
		if strings.HasPrefix(p, systemPrefix) {
			continue
		}
		if n, ok := d.stored(tree, p); ok {
			total += nodeDigest(n)
		}
	}
	return total
}

// update replaces the share of paths, before, by their share now, after
// recording the stored owners of the container and TTL nodes created
// (created: path → owner) and forgetting the nodes gone.
func (d *digester) update(tree *datatree.Tree, paths []string, before int64, created map[string]int64) {
	for _, p := range paths {
		o, isNew := created[p]
		_, _, code := tree.GetData(p, d.ids, nil)
		switch {
		case code != jute.OK:
			delete(d.owners, p)
		case isNew && o != 0 && !datatree.IsEphemeralOwner(o):
			d.owners[p] = o
		case isNew:
			delete(d.owners, p)
		}
	}
	d.value.Add(d.sum(tree, paths) - before)
}

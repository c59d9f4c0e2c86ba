package zkimport

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
)

// Image is a ZooKeeper state as ZooKeeper itself holds it: every znode
// with its stat as stored (ephemerals included) and the open sessions.
type Image struct {
	// Nodes are sorted by path, so every parent comes before its
	// children (the order datatree.Loader takes them in). The system
	// nodes (/, /zookeeper, /zookeeper/quota, /zookeeper/config) are
	// always there: a source lacking one gets it as a new ZooKeeper
	// server has it.
	Nodes []*Node
	// Sessions maps each session id to its timeout (ms).
	Sessions map[int64]int32
	// LastZxid is the zxid of the last transaction applied (0 for a
	// snapshot body, whose zxid travels beside it).
	LastZxid int64
}

// ReadSnapshotBody reads exactly the bytes ZooKeeper's
// SerializeUtils.serializeSnapshot writes (the session count and (id,
// timeout) pairs, then DataTree.serialize: the ACL cache, the nodes and the
// "/" record that ends them), as a Zab SNAP sync sends them and as a
// snapshot file holds them between its header and its seal. It reads r
// itself, never ahead of the "/" record. A truncated or inconsistent body
// is an error wrapping ErrBadSnapshot; it never panics.
func ReadSnapshotBody(r *bufio.Reader) (*Image, error) {
	s := newStreamReader(r, nil)
	d := newDB()
	readBody(s, d)
	if s.err != nil {
		return nil, s.err
	}
	if d.nodes["/"] == nil {
		return nil, fmt.Errorf("%w: no root node", ErrBadSnapshot)
	}
	return d.image(), nil
}

// ReadDataDir restores a ZooKeeper data directory as ZooKeeper does on
// startup (FileTxnSnapLog.restore): the newest snapshot that reads back
// intact, then every logged transaction after it. dataDir and logDir are
// ZooKeeper's dataDir and dataLogDir (or their version-2 directories).
// Unlike Import it keeps the sessions and their ephemerals.
func ReadDataDir(dataDir, logDir string) (*Image, error) {
	res, err := load(versionDir(dataDir), versionDir(logDir), nil)
	if err != nil {
		return nil, err
	}
	return res.db.image(), nil
}

// image returns d's nodes (the missing system nodes added) sorted by path,
// its sessions and its last zxid.
func (d *db) image() *Image {
	fresh := emptyZooKeeperDB()
	for _, p := range []string{"/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		if d.nodes[p] == nil {
			d.put(fresh.nodes[p])
		}
	}
	nodes := make([]*Node, 0, len(d.nodes))
	for _, n := range d.nodes {
		nodes = append(nodes, n)
	}
	// Byte order puts every path after its parent's.
	slices.SortFunc(nodes, func(a, b *Node) int { return strings.Compare(a.Path, b.Path) })
	return &Image{Nodes: nodes, Sessions: d.sessions, LastZxid: d.lastZxid}
}

// Replay applies logged transactions to an Image as ZooKeeper's DataTree
// does when it restores, tolerating what a fuzzy snapshot (one serialized
// while transactions were applied) already holds: a create of a node that
// exists is skipped (its parent's cversion and pzxid only move forward), a
// delete of a missing node too, and setData and setACL set the versions
// the transactions carry. It is used by one goroutine.
type Replay struct{ d *db }

// NewReplay returns a Replay starting from img, which it takes over: the
// caller must not use img afterwards.
func NewReplay(img *Image) *Replay {
	d := newDB()
	for _, n := range img.Nodes {
		d.put(n)
	}
	for id, timeout := range img.Sessions {
		d.sessions[id] = timeout
	}
	d.lastZxid = img.LastZxid
	return &Replay{d: d}
}

// Apply decodes one transaction entry and applies it.
func (r *Replay) Apply(entry []byte) (*Txn, error) {
	t, err := DecodeTxn(entry)
	if err != nil {
		return nil, err
	}
	if err := r.d.apply(t); err != nil {
		return nil, err
	}
	return t, nil
}

// Image returns the current state. The Replay must not be used afterwards.
func (r *Replay) Image() *Image { return r.d.image() }

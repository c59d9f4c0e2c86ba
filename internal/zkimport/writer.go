package zkimport

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/replication"
)

// treeConfig is the tree configuration of the import: every node kind
// ZooKeeper may have written (containers, TTL nodes) is accepted.
var treeConfig = datatree.Config{ExtendedTypesEnabled: true}

// writeTarget creates the zkserverd data directories to and toLog holding
// nodes (sorted by path) at lastZxid, through the server's own code: the
// nodes are loaded into a tree, and replication.Seed writes it as the
// state of a new standalone server, in raft-boltdb (logStore=boltdb). It
// returns the size of the FSM snapshot written. onNode is called after
// each node is loaded.
func writeTarget(to, toLog string, lastZxid int64, nodes []*Node, onNode func()) (int64, error) {
	tree, err := loadTree(nodes, onNode)
	if err != nil {
		return 0, err
	}
	size, err := replication.Seed(replication.Config{
		DataDir:   filepath.Join(to, "version-2"),
		LogDir:    filepath.Join(toLog, "version-2"),
		LogStore:  "boltdb",
		ForceSync: true,
		Tree:      treeConfig,
	}, tree, lastZxid)
	if err != nil {
		return 0, fmt.Errorf("zkimport: write the zkserverd data directory: %w", err)
	}
	return size, nil
}

// loadTree builds the znode tree of nodes, every stat field kept as
// ZooKeeper had it.
func loadTree(nodes []*Node, onNode func()) (*datatree.Tree, error) {
	l := datatree.NewLoader(treeConfig)
	for _, n := range nodes {
		st := n.Stat
		err := l.Add(datatree.StoredNode{Path: n.Path, Data: n.Data, ACL: n.ACL,
			Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: st.Ctime, Mtime: st.Mtime, Pzxid: st.Pzxid,
			Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: st.EphemeralOwner})
		if err != nil {
			return nil, fmt.Errorf("zkimport: the converted tree is not valid: %w", err)
		}
		if onNode != nil {
			onNode()
		}
	}
	tree, err := l.Finish()
	if err != nil {
		return nil, fmt.Errorf("zkimport: the converted tree is not valid: %w", err)
	}
	return tree, nil
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
		if datatree.IsEphemeralOwner(n.Stat.EphemeralOwner) {
			dropped++
			continue
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *Node) int { return strings.Compare(a.Path, b.Path) })
	return out, dropped
}

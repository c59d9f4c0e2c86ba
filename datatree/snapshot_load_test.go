package datatree

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// storedNodes lists every node of tree as a Loader takes it, sorted by
// path (so parents come first).
func storedNodes(tree *Tree) []StoredNode {
	var out []StoredNode
	for p, n := range allNodes(tree) {
		out = append(out, StoredNode{Path: p, Data: n.data(), ACL: tree.acls.get(n.acl()),
			Czxid: n.czxid, Mzxid: n.mzxid, Ctime: n.ctime, Mtime: n.mtime, Pzxid: n.pzxid,
			Version: n.version, Cversion: n.cversion, Aversion: n.aversion, EphemeralOwner: n.owner})
	}
	slices.SortFunc(out, func(a, b StoredNode) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func load(nodes []StoredNode, cfg Config) (*Tree, error) {
	l := NewLoader(cfg)
	for _, n := range nodes {
		if err := l.Add(n); err != nil {
			return nil, err
		}
	}
	return l.Finish()
}

// TestLoaderRebuildsTree loads the nodes of a tree built by 3000 random
// txns (seed 42, as in TestSnapshotRoundTrip): the loaded tree shows what
// testdata/random.view recorded, writes the same snapshot as the original
// and behaves the same from then on.
func TestLoaderRebuildsTree(t *testing.T) {
	cfg := Config{ExtendedTypesEnabled: true}
	built := New(cfg)
	applyRandom(built, 42, 0, 3000)
	built.SetConfigNode([]byte("version=0"), 0, 123)
	loaded, err := load(storedNodes(built), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/random.view", []byte(treeView(loaded)))
	if treeView(loaded) != treeView(built) {
		t.Error("the loaded tree shows something else than the original")
	}
	if !bytes.Equal(snapshotBytes(t, loaded), snapshotBytes(t, built)) {
		t.Error("the loaded tree and the original write different snapshots")
	}
	if !bytes.Equal(applyRandom(loaded, 43, 3000, 500), applyRandom(built, 43, 3000, 500)) {
		t.Error("results after loading differ")
	}
}

// TestLoaderRejects gives a Loader node sets that break one invariant each.
func TestLoaderRejects(t *testing.T) {
	node := func(path string, owner int64) StoredNode {
		return StoredNode{Path: path, Data: []byte{}, ACL: slices.Clone(open), EphemeralOwner: owner}
	}
	system := []StoredNode{node("/", 0), node("/zookeeper", 0), node("/zookeeper/config", 0), node("/zookeeper/quota", 0)}
	with := func(extra ...StoredNode) []StoredNode { return append(slices.Clone(system), extra...) }
	if tree, err := load(with(node("/c", jute.ContainerOwner), node("/t", jute.TTLOwnerMask|5), node("/e", 7)), Config{}); err != nil {
		t.Fatalf("valid node set: %v", err)
	} else if tree.NodeCount() != 7 || tree.EphemeralCount() != 1 || len(tree.containers) != 1 || len(tree.ttls) != 1 ||
		tree.acls.size() != 1 {
		// Every node has a copy of one list: the tree keeps it once.
		t.Errorf("loaded %d nodes, %d ephemerals, %d containers, %d TTL nodes, %d ACL lists; want 7, 1, 1, 1, 1",
			tree.NodeCount(), tree.EphemeralCount(), len(tree.containers), len(tree.ttls), tree.acls.size())
	}
	emptyACL := node("/x", 0)
	emptyACL.ACL = nil
	tests := []struct {
		name  string
		nodes []StoredNode
	}{
		{"missing system node", system[:3]},
		{"no root", system[1:]},
		{"second root", with(node("/", 0))},
		{"ephemeral root", []StoredNode{node("/", 9)}},
		{"child before parent", []StoredNode{system[0], system[2], system[1], system[3]}},
		{"duplicate", with(node("/zookeeper/quota", 0))},
		{"orphan", with(node("/x/y", 0))},
		{"invalid path", with(node("/zookeeper/quota/.", 0))},
		{"relative path", with(node("x", 0))},
		{"child of ephemeral", with(node("/e", 5), node("/e/c", 0))},
		{"empty acl list", with(emptyACL)},
		{"ephemeral system node", []StoredNode{system[0], system[1], node("/zookeeper/config", 1), system[3]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := load(tt.nodes, Config{}); !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("err %v, want one wrapping ErrBadSnapshot", err)
			}
		})
	}
}

func TestKindOfOwner(t *testing.T) {
	tests := []struct {
		owner int64
		want  nodeKind
	}{
		{0, kindPersistent},
		{5, kindEphemeral},
		{-5, kindEphemeral},
		{jute.ContainerOwner, kindContainer},
		{jute.TTLOwnerMask | 1, kindTTL},
		{jute.TTLOwnerMask | jute.MaxTTL, kindTTL},
		{jute.TTLOwnerMask | 3600000, kindTTL},
		{jute.TTLOwnerMask, kindEphemeral},             // a TTL of 0 is no TTL node
		{jute.TTLOwnerMask | 1<<40 | 5, kindEphemeral}, // another extended type
		{0x0100000012340000, kindEphemeral},
	}
	for _, tt := range tests {
		if got := kindOfOwner(tt.owner); got != tt.want {
			t.Errorf("kindOfOwner(%#x) = %d, want %d", tt.owner, got, tt.want)
		}
		if got := IsEphemeralOwner(tt.owner); got != (tt.want == kindEphemeral) {
			t.Errorf("IsEphemeralOwner(%#x) = %v", tt.owner, got)
		}
	}
}

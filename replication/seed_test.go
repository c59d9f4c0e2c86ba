package replication

import (
	"errors"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

// seedTree returns a tree with /a and /a/b beside the system nodes, at zxid
// 0x300000002.
func seedTree(t *testing.T) *datatree.Tree {
	t.Helper()
	tree := datatree.New(datatree.Config{})
	for i, p := range []string{"/a", "/a/b"} {
		res := tree.Apply(&datatree.Txn{Type: jute.OpCreate, Time: 1000,
			Request: &jute.CreateRequest{Path: p, Data: []byte(p), ACL: jute.OpenACLUnsafe}}, 0x300000001+int64(i), nil)
		if res.Err != jute.OK {
			t.Fatalf("create %s: %v", p, res.Err)
		}
	}
	return tree
}

// TestSeed seeds data directories with each log store and opens them as a
// server does: the state is there, and new writes continue after the
// seeded zxid. Seeding them again is refused.
func TestSeed(t *testing.T) {
	for _, store := range []string{"wal", "boltdb"} {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{DataDir: dir, LogStore: store, ForceSync: true}
			size, err := Seed(cfg, seedTree(t), 0x300000002)
			if err != nil {
				t.Fatal(err)
			}
			if size <= 0 {
				t.Errorf("snapshot size %d", size)
			}
			n := openNodeWith(t, Config{DataDir: dir})
			defer n.Close()
			if z := n.LastZxid(); z != 0x300000002 {
				t.Errorf("last zxid %#x, want 0x300000002", z)
			}
			if data, _, code := n.Tree().GetData("/a/b", nil, nil); code != jute.OK || string(data) != "/a/b" {
				t.Errorf("/a/b = %q, %v", data, code)
			}
			if o := await(t, n.Submit(createTxn("/c"))); o.Err != nil || o.Result.Err != jute.OK || o.Zxid != 0x300000003 {
				t.Errorf("create after the seed: %+v, want zxid 0x300000003", o)
			}
			n.Close()
			if _, err := Seed(cfg, seedTree(t), 1); !errors.Is(err, ErrNotFresh) {
				t.Errorf("seeding again: %v, want ErrNotFresh", err)
			}
		})
	}
}

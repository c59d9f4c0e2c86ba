package datatree

import (
	"bytes"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// testAuth is a minimal Authorizer with ZooKeeper's check algorithm: empty
// ACL allows, super allows, otherwise an entry with a wanted bit must be
// world:anyone or match a caller id exactly.
type testAuth struct{}

func (testAuth) Allowed(acl []jute.ACL, ids []jute.ID, perm int32) bool {
	if len(acl) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == "super" {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID == (jute.ID{Scheme: "world", ID: "anyone"}) {
			return true
		}
		for _, id := range ids {
			if id == a.ID {
				return true
			}
		}
	}
	return false
}

func (testAuth) FixupACL(acl []jute.ACL, ids []jute.ID) ([]jute.ACL, jute.Code) {
	return New(Config{}).fixupACL(acl, ids)
}

var (
	open   = jute.OpenACLUnsafe
	alice  = jute.ID{Scheme: "digest", ID: "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="}
	bob    = jute.ID{Scheme: "digest", ID: "bob:h"}
	aliceA = []jute.ACL{{Perms: jute.PermAll, ID: alice}}
)

// harness applies txns with consecutive zxids (from 1) and time = 1000*zxid.
type harness struct {
	tb   testing.TB
	tree *Tree
	zxid int64
	ids  []jute.ID // caller ids put in every txn
	sess int64     // session put in every txn
}

func newHarness(tb testing.TB, cfg Config) *harness {
	return &harness{tb: tb, tree: New(cfg), sess: 0x100}
}

func (h *harness) apply(typ jute.OpCode, req jute.Record) *Result {
	h.zxid++
	txn := &Txn{Type: typ, SessionID: h.sess, Time: h.zxid * 1000, Request: req, IDs: h.ids}
	return h.tree.Apply(txn, h.zxid, nil)
}

func (h *harness) create(path string, data []byte, flags jute.CreateMode) *Result {
	return h.apply(jute.OpCreate, &jute.CreateRequest{Path: path, Data: data, ACL: open, Flags: flags})
}

// mustCreate creates a persistent node with OPEN ACL and fails the test on error.
func (h *harness) mustCreate(path string) {
	h.tb.Helper()
	if r := h.create(path, []byte(path), jute.ModePersistent); r.Err != jute.OK {
		h.tb.Fatalf("create %s: %v", path, r.Err)
	}
}

func (h *harness) createACL(path string, acl []jute.ACL) {
	h.tb.Helper()
	if r := h.apply(jute.OpCreate, &jute.CreateRequest{Path: path, ACL: acl}); r.Err != jute.OK {
		h.tb.Fatalf("create %s: %v", path, r.Err)
	}
}

func (h *harness) stat(path string) jute.Stat {
	h.tb.Helper()
	st, code := h.tree.Exists(path, nil)
	if code != jute.OK {
		h.tb.Fatalf("exists %s: %v", path, code)
	}
	return st
}

func (h *harness) snapshot() []byte {
	h.tb.Helper()
	var b bytes.Buffer
	if err := h.tree.WriteSnapshot(&b); err != nil {
		h.tb.Fatalf("snapshot: %v", err)
	}
	return b.Bytes()
}

func ev(typ jute.EventType, path string) Event { return Event{Type: typ, Path: path} }

// allNodes returns every node of the tree by path.
func allNodes(t *Tree) map[string]*node {
	out := map[string]*node{}
	var walk func(path string, n *node)
	walk = func(path string, n *node) {
		out[path] = n
		prefix := path
		if path == rootPath {
			prefix = ""
		}
		n.kids.each(func(c *node) { walk(prefix+"/"+c.name(), c) })
	}
	walk(rootPath, t.root)
	return out
}

// namedNode returns a bare node called name.
func namedNode(name string) *node {
	n := &node{}
	n.setName(name)
	return n
}

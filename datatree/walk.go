package datatree

import (
	"slices"
	"strings"
)

// Walk calls fn for every node of the tree with its stat as stored, the
// root first and every parent before its children (depth first, children
// in name order): the order a Loader takes them in, so that
// Walk → Loader.Add copies a tree exactly. It stops at the first error fn
// returns and returns it.
//
// Walk holds the tree's read lock throughout, so writes wait for it: it
// is meant for trees no client writes to, such as one just read from a
// snapshot (a backup being converted). fn must not call into the tree.
// The StoredNode's Data and ACL are the tree's own and must not be
// modified.
func (t *Tree) Walk(fn func(StoredNode) error) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	type frame struct {
		path string
		n    *node
	}
	stack := []frame{{rootPath, t.root}}
	var kids []*node
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := f.n
		err := fn(StoredNode{Path: f.path, Data: n.data(), ACL: t.acls.get(n.acl()),
			Czxid: n.czxid, Mzxid: n.mzxid, Ctime: n.ctime, Mtime: n.mtime, Pzxid: n.pzxid,
			Version: n.version, Cversion: n.cversion, Aversion: n.aversion, EphemeralOwner: n.owner})
		if err != nil {
			return err
		}
		kids = n.kids.appendTo(kids[:0])
		// Pushed in reverse name order, so that the first name is walked
		// first.
		slices.SortFunc(kids, func(a, b *node) int { return strings.Compare(b.name(), a.name()) })
		prefix := f.path
		if prefix != rootPath {
			prefix += "/"
		}
		for _, c := range kids {
			stack = append(stack, frame{prefix + c.name(), c})
		}
	}
	return nil
}

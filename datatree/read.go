package datatree

import (
	"slices"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// Reads take the tree's read lock and never consume a zxid. A watch
// callback, if non-nil, runs under that read lock so that registering the
// watch is atomic with the read; it must not call into the Tree. Returned
// data slices are shared with the tree and must not be modified.

// Exists returns the node's Stat. As in ZooKeeper it only rejects a path
// containing NUL (BadArguments, no watch) and checks no ACL; watch is called
// with whether the node exists, also when the result is NoNode.
func (t *Tree) Exists(path string, watch func(exists bool)) (jute.Stat, jute.Code) {
	if containsNUL(path) {
		return jute.Stat{}, jute.BadArguments
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	var st jute.Stat
	n := t.lookup(path)
	if watch != nil {
		watch(n != nil)
	}
	if n == nil {
		return st, jute.NoNode
	}
	n.stat(&st)
	return st, jute.OK
}

// GetData returns the node's data (nil for a null buffer) and Stat. The path
// is not validated ("" reads the root). It needs READ when an Authorizer is
// configured. watch is called (with true) only when the read succeeds:
// ZooKeeper sets no watch on NoNode or NoAuth.
func (t *Tree) GetData(path string, ids []jute.ID, watch func(exists bool)) ([]byte, jute.Stat, jute.Code) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var st jute.Stat
	n, code := t.readable(path, ids)
	if code != jute.OK {
		return nil, st, code
	}
	if watch != nil {
		watch(true)
	}
	n.stat(&st)
	return n.data(), st, jute.OK
}

// GetChildren returns the names of the node's children, in no particular
// order, and its Stat. Validation, ACL and watch rules are GetData's.
func (t *Tree) GetChildren(path string, ids []jute.ID, watch func(exists bool)) ([]string, jute.Stat, jute.Code) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var st jute.Stat
	n, code := t.readable(path, ids)
	if code != jute.OK {
		return nil, st, code
	}
	if watch != nil {
		watch(true)
	}
	names := make([]string, 0, n.kids.len())
	n.kids.each(func(c *node) { names = append(names, c.name()) })
	n.stat(&st)
	return names, st, jute.OK
}

// readable looks path up and checks READ. Caller holds t.mu.
func (t *Tree) readable(path string, ids []jute.ID) (*node, jute.Code) {
	n := t.lookup(path)
	if n == nil {
		return nil, jute.NoNode
	}
	if !t.allowed(n, ids, jute.PermRead) {
		return nil, jute.NoAuth
	}
	return n, jute.OK
}

// GetACL returns a copy of the node's ACL and its Stat. With an Authorizer
// configured it needs READ or ADMIN, and without ADMIN every digest id is
// masked as "user:x".
func (t *Tree) GetACL(path string, ids []jute.ID) ([]jute.ACL, jute.Stat, jute.Code) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var st jute.Stat
	n := t.lookup(path)
	if n == nil {
		return nil, st, jute.NoNode
	}
	acl := t.acls.get(n.acl())
	if t.checksPermissions() {
		admin := t.allowed(n, ids, jute.PermAdmin)
		if !admin && !t.allowed(n, ids, jute.PermRead) {
			return nil, st, jute.NoAuth
		}
		if !admin {
			n.stat(&st)
			return maskDigestIDs(acl), st, jute.OK
		}
	}
	n.stat(&st)
	return cloneACL(acl), st, jute.OK
}

// GetAllChildrenNumber returns the number of descendants of the node at any
// depth (READ needed). For "/" that is every node but the root; the root
// alias "" reports every node including the root, as ZooKeeper's string
// prefix count does. Below the root it counts the subtree, as ZooKeeper
// does (it scans every node), so writes wait for the count.
func (t *Tree) GetAllChildrenNumber(path string, ids []jute.ID) (int32, jute.Code) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n, code := t.readable(path, ids)
	switch {
	case code != jute.OK:
		return 0, code
	case path == "":
		return int32(t.count), jute.OK
	case n == t.root:
		return int32(t.count - 1), jute.OK
	}
	count, _ := subtreeSize(n)
	return int32(count - 1), jute.OK
}

// GetEphemerals returns the session's ephemeral paths that start with prefix
// (a plain string prefix, so "/a" also matches "/ab"), sorted. A prefix that
// is empty or "/" after trimming (Java's String.trim) selects all.
func (t *Tree) GetEphemerals(sessionID int64, prefix string) []string {
	trimmed := strings.TrimFunc(prefix, func(r rune) bool { return r <= ' ' })
	all := trimmed == "" || trimmed == rootPath
	t.mu.RLock()
	set := t.ephemerals[sessionID]
	out := make([]string, 0, len(set))
	for p := range set {
		if all || strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	t.mu.RUnlock()
	slices.Sort(out)
	return out
}

// SessionEphemerals returns all ephemeral paths owned by the session, sorted.
func (t *Tree) SessionEphemerals(sessionID int64) []string {
	return t.GetEphemerals(sessionID, "")
}

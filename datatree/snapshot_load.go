package datatree

import (
	"fmt"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// StoredNode is a znode with its stat as stored, for a Loader.
type StoredNode struct {
	Path string
	Data []byte // nil for a null buffer
	ACL  []jute.ACL
	// The stat fields as stored. Cversion is the stored count of child
	// creations: clients see 2×Cversion − number of children.
	Czxid, Mzxid, Ctime, Mtime, Pzxid int64
	Version, Cversion, Aversion       int32
	// EphemeralOwner is the owning session of an ephemeral node, the
	// container marker or the TTL encoding, and 0 for a persistent node;
	// it decides the node's kind.
	EphemeralOwner int64
}

// Loader builds a tree from nodes whose stats are given rather than
// derived from transactions (an import from Apache ZooKeeper), checked as
// ReadSnapshot checks a stream. A Loader is used by one goroutine; the
// tree is the caller's once Finish returns it.
type Loader struct {
	t    *Tree
	last loc // the parent of the previous node, kept for its siblings
}

// NewLoader returns a Loader of an empty tree with configuration cfg.
func NewLoader(cfg Config) *Loader {
	return &Loader{t: newEmpty(cfg)}
}

// Add adds a node. Parents come before their children, the root first;
// the data slice is kept, not copied. An error wraps ErrBadSnapshot and
// leaves the tree unchanged.
func (l *Loader) Add(s StoredNode) error {
	if ValidatePath(s.Path) != jute.OK {
		return fmt.Errorf("%w: invalid path %q", ErrBadSnapshot, s.Path)
	}
	if len(s.ACL) == 0 {
		return fmt.Errorf("%w: %s: empty ACL list", ErrBadSnapshot, s.Path)
	}
	n := &node{czxid: s.Czxid, mzxid: s.Mzxid, ctime: s.Ctime, mtime: s.Mtime, pzxid: s.Pzxid,
		version: s.Version, cversion: s.Cversion, aversion: s.Aversion, owner: s.EphemeralOwner}
	n.setData(s.Data)
	if err := checkKind(n, kindOfOwner(s.EphemeralOwner)); err != nil {
		return fmt.Errorf("%s: %w", s.Path, err)
	}
	t := l.t
	if s.Path == rootPath {
		if t.root != nil || n.kind() != kindPersistent {
			return fmt.Errorf("%w: a second or non-persistent root", ErrBadSnapshot)
		}
		t.root = n
		t.insert(n, rootPath)
	} else if err := l.link(s.Path, n); err != nil {
		return err
	}
	n.setACL(t.acls.intern(s.ACL))
	t.lastZxid = max(t.lastZxid, n.czxid)
	return nil
}

// link adds n at path under its parent, which must be there already.
func (l *Loader) link(path string, n *node) error {
	t := l.t
	if t.root == nil {
		return fmt.Errorf("%w: %s before the root", ErrBadSnapshot, path)
	}
	parentPath, name, _ := splitParent(path)
	if l.last.parent == nil || l.last.parentPath != parentPath {
		l.last = loc{parent: t.lookup(parentPath), parentPath: parentPath}
	}
	parent := l.last.parent
	switch {
	case parent == nil:
		return fmt.Errorf("%w: %s has no parent", ErrBadSnapshot, path)
	case parent.kind() == kindEphemeral:
		return fmt.Errorf("%w: %s is a child of an ephemeral", ErrBadSnapshot, path)
	case t.child(parent, name) != nil:
		return fmt.Errorf("%w: %s added twice", ErrBadSnapshot, path)
	}
	n.setName(strings.Clone(name))
	t.link(loc{parent: parent, parentPath: parentPath, name: n.name(), path: path}, n)
	return nil
}

// Finish checks that the system nodes are there, computes the tree's
// digest (one pass over the nodes: a node's hash needs its final child
// count), recounts the quota statistics from the tree, as ZooKeeper does
// when it loads (RecomputeQuotaStats), and returns the tree.
func (l *Loader) Finish() (*Tree, error) {
	t := l.t
	for _, p := range []string{rootPath, procPath, quotaPath, configPath} {
		if n := t.lookup(p); n == nil || n.kind() != kindPersistent {
			return nil, fmt.Errorf("%w: missing or non-persistent system node %s", ErrBadSnapshot, p)
		}
	}
	t.quota = t.lookup(quotaPath)
	t.digest = t.walkDigest()
	t.RecomputeQuotaStats()
	return t, nil
}

// IsEphemeralOwner reports whether a stored ephemeralOwner (as ZooKeeper's
// snapshots and logs hold it) names the session of an ephemeral node, as
// opposed to a persistent, container or TTL node.
func IsEphemeralOwner(owner int64) bool { return kindOfOwner(owner) == kindEphemeral }

// kindOfOwner decodes a stored ephemeralOwner as ZooKeeper does: 0 is a
// persistent node, the container marker a container, the extended TTL
// encoding (top byte 0xFF, a TTL in the low 40 bits) a TTL node, anything
// else the owning session of an ephemeral.
func kindOfOwner(owner int64) nodeKind {
	switch {
	case owner == 0:
		return kindPersistent
	case owner == jute.ContainerOwner:
		return kindContainer
	case owner&jute.TTLOwnerMask == jute.TTLOwnerMask:
		if ttl := owner &^ jute.TTLOwnerMask; ttl > 0 && ttl <= jute.MaxTTL {
			return kindTTL
		}
	}
	return kindEphemeral
}

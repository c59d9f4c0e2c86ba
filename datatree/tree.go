package datatree

import (
	"github.com/zkserverd/zkserverd/acl"
	"strings"
	"sync"

	"github.com/zkserverd/zkserverd/jute"
)

// Config carries replica-wide settings that change validation. Every
// replica of one ensemble must use the same Config.
type Config struct {
	// ExtendedTypesEnabled allows TTL nodes; without it a TTL create fails
	// with jute.Unimplemented.
	ExtendedTypesEnabled bool
	// Authorizer checks permissions and validates ACLs. nil means every
	// permission check passes and ACL lists are validated against package
	// acl's built-in schemes (world, ip, digest).
	Authorizer Authorizer
	// SkipACL (zookeeper.skipACL) turns permission checks off; ACL lists are
	// still validated.
	SkipACL bool
	// EnforceQuota (zookeeper.enforceQuota) makes a create or setData that
	// would exceed a hard quota limit fail with QuotaExceeded (quota.go).
	EnforceQuota bool
}

// nodeKind says what a node's ephemeralOwner means.
type nodeKind uint8

const (
	kindPersistent nodeKind = iota
	kindEphemeral
	kindContainer
	kindTTL
	numKinds
)

// node is one znode. Its child names are substrings of the children's own
// path strings, and the child map is allocated with the first child.
type node struct {
	path     string
	data     []byte // nil for a null buffer; never modified in place
	children map[string]*node
	czxid    int64
	mzxid    int64
	pzxid    int64
	ctime    int64
	mtime    int64
	owner    int64 // ephemeralOwner as stored (container/TTL encodings kept)
	version  int32
	cversion int32 // stored: number of child creations
	aversion int32
	desc     int32 // number of descendants at any depth
	acl      aclID
	kind     nodeKind
}

// name returns the last component of the node's path.
func (n *node) name() string {
	return n.path[strings.LastIndexByte(n.path, '/')+1:]
}

// stat fills st with the client-visible Stat: cversion counts creates and
// deletes (2*stored - children), and container/TTL owners read as 0.
func (n *node) stat(st *jute.Stat) {
	nc := int32(len(n.children))
	*st = jute.Stat{
		Czxid:       n.czxid,
		Mzxid:       n.mzxid,
		Ctime:       n.ctime,
		Mtime:       n.mtime,
		Version:     n.version,
		Cversion:    n.cversion*2 - nc,
		Aversion:    n.aversion,
		DataLength:  int32(len(n.data)),
		NumChildren: nc,
		Pzxid:       n.pzxid,
	}
	if n.kind == kindEphemeral {
		st.EphemeralOwner = n.owner
	}
}

// Tree is the znode tree: the replicated state machine's data. Writes go
// through Apply only; reads may run concurrently with each other.
type Tree struct {
	cfg Config
	// builtin validates ACL lists when cfg has no Authorizer.
	builtin Authorizer

	// mu guards every field below. Apply and SetConfigNode hold it for
	// writing, reads and WriteSnapshot for reading. Hooks and watch
	// callbacks run under it and must not call back into the Tree. Lock
	// order: the tree lock is taken before any lock a hook or watch
	// callback takes, never the reverse.
	mu    sync.RWMutex
	root  *node
	nodes map[string]*node // path -> node; "/" is the root (lookup maps "" to it)
	acls  *aclCache

	// ephemerals indexes normal ephemeral nodes by owning session.
	ephemerals map[int64]map[string]struct{}
	// containers and ttls index the reaper's candidates (containers and
	// TTL nodes); ReapCandidates (reap.go) scans these.
	containers map[string]struct{}
	ttls       map[string]struct{}

	ephemeralCount int
	dataSize       int64 // sum of javaLen(path)+len(data) over all nodes
	quotaWarn      quotaWarnings
}

// New returns a fresh tree holding the system nodes of a new ZooKeeper
// server: /, /zookeeper, /zookeeper/quota and /zookeeper/config
// (semantics.md §13).
func New(cfg Config) *Tree {
	t := newEmpty(cfg)
	open := t.acls.intern(jute.OpenACLUnsafe)
	t.acls.addRef(open)
	t.acls.addRef(open)
	read := t.acls.intern(jute.ReadACLUnsafe)
	t.root = &node{path: rootPath, data: []byte{}, acl: open}
	t.insert(t.root)
	t.addSystemChild(&node{path: procPath, data: []byte{}, acl: open})
	t.addSystemChild(&node{path: quotaPath, data: []byte{}, acl: open})
	t.addSystemChild(&node{path: configPath, data: []byte{}, acl: read, aversion: -1})
	return t
}

// newEmpty returns a tree with no nodes at all.
func newEmpty(cfg Config) *Tree {
	return &Tree{
		cfg:        cfg,
		builtin:    acl.NewRegistry(acl.Options{}),
		nodes:      make(map[string]*node),
		acls:       newACLCache(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
	}
}

// addSystemChild links a system node under its parent without counting a
// child creation (ZooKeeper builds them that way, hence the negative
// cversions of / and /zookeeper).
func (t *Tree) addSystemChild(n *node) {
	parentPath, _, _ := splitParent(n.path)
	t.link(t.lookup(parentPath), parentPath, n)
}

// lookup returns the node at path, treating "" as the root (ZooKeeper keeps
// the root under both keys), or nil.
func (t *Tree) lookup(path string) *node {
	if path == "" {
		return t.root
	}
	return t.nodes[path]
}

// insert adds n to the path index and the per-kind indexes and counters,
// without linking it to a parent.
func (t *Tree) insert(n *node) {
	t.nodes[n.path] = n
	t.dataSize += int64(javaLen(n.path) + len(n.data))
	switch n.kind {
	case kindEphemeral:
		set := t.ephemerals[n.owner]
		if set == nil {
			set = make(map[string]struct{})
			t.ephemerals[n.owner] = set
		}
		set[n.path] = struct{}{}
		t.ephemeralCount++
	case kindContainer:
		t.containers[n.path] = struct{}{}
	case kindTTL:
		t.ttls[n.path] = struct{}{}
	}
}

// remove undoes insert.
func (t *Tree) remove(n *node) {
	delete(t.nodes, n.path)
	t.dataSize -= int64(javaLen(n.path) + len(n.data))
	switch n.kind {
	case kindEphemeral:
		if set := t.ephemerals[n.owner]; set != nil {
			delete(set, n.path)
			if len(set) == 0 {
				delete(t.ephemerals, n.owner)
			}
		}
		t.ephemeralCount--
	case kindContainer:
		delete(t.containers, n.path)
	case kindTTL:
		delete(t.ttls, n.path)
	}
}

// link inserts n and makes it a child of parent (at parentPath), updating
// the ancestors' descendant counts. Parent stat fields are the caller's job.
func (t *Tree) link(parent *node, parentPath string, n *node) {
	if parent.children == nil {
		parent.children = make(map[string]*node)
	}
	parent.children[n.name()] = n
	t.insert(n)
	t.addDescendants(parent, parentPath, 1)
}

// unlink undoes link. n must have no children.
func (t *Tree) unlink(parent *node, parentPath string, n *node) {
	delete(parent.children, n.name())
	if len(parent.children) == 0 {
		parent.children = nil
	}
	t.remove(n)
	t.addDescendants(parent, parentPath, -1)
}

// addDescendants adds delta to the descendant count of parent and of every
// ancestor above it.
func (t *Tree) addDescendants(parent *node, parentPath string, delta int32) {
	parent.desc += delta
	for p := parentPath; p != "" && p != rootPath; {
		p = p[:strings.LastIndexByte(p, '/')]
		t.lookup(p).desc += delta
	}
}

// NodeCount returns the number of znodes including "/". (ZooKeeper's
// zk_znode_count is one more, because it also counts the root alias "".)
func (t *Tree) NodeCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.nodes)
}

// EphemeralCount returns the number of normal ephemeral nodes (containers and
// TTL nodes are not counted, as in ZooKeeper).
func (t *Tree) EphemeralCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.ephemeralCount
}

// ApproximateDataSize returns the sum over all nodes of the path length and
// the data length, ZooKeeper's zk_approximate_data_size. Path lengths are
// counted in UTF-16 code units as Java does (the same as bytes for ASCII).
func (t *Tree) ApproximateDataSize() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.dataSize
}

// SetConfigNode stores the ensemble's dynamic configuration text in
// /zookeeper/config the way ZooKeeper does at startup and after a reconfig:
// version -1, mzxid = zxid (ZooKeeper passes the config version), mtime =
// time. It fires no events and is not a replicated write. The tree keeps
// data; the caller must not modify it afterwards.
func (t *Tree) SetConfigNode(data []byte, zxid, time int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.nodes[configPath]
	t.dataSize += int64(len(data) - len(n.data))
	n.data = data
	n.version = -1
	n.mzxid = zxid
	n.mtime = time
}

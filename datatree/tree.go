package datatree

import (
	"hash/maphash"
	"strings"
	"sync"
	"unsafe"

	"github.com/zkserverd/zkserverd/acl"
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

// node is one znode: 96 bytes, one size class of the allocator. Its name
// is the last component of its path; a node does not know its parent or
// its path, since every operation reaches it by walking down from the root
// along a path it already has.
//
// The name and the data are held as a pointer and a 32-bit length each
// rather than as a string and a slice (16 bytes less per node, a size
// class down; docs/perf/compact-2026-12-03.txt). Both point to memory the
// node owns alone and that nothing modifies (see setName and setData), so
// the strings and slices rebuilt from them are as safe as the ones they
// were made from.
type node struct {
	dataPtr  *byte // the data's first byte; nil for a null buffer
	namePtr  *byte // the name's first byte; "" (the root) may have nil
	kids     *kids // nil when the node has no children
	czxid    int64 // never changes once linked
	mzxid    int64
	pzxid    int64
	ctime    int64
	mtime    int64
	owner    int64 // ephemeralOwner as stored (container/TTL encodings kept)
	version  int32
	cversion int32 // stored: number of child creations
	aversion int32
	meta     uint32 // ACL id (low 30 bits) and kind (top 2 bits)
	dataLen  uint32
	nameLen  uint32
}

// data returns the node's data: nil for a null buffer, else a slice of
// exactly its length (callers must not modify it).
func (n *node) data() []byte { return unsafe.Slice(n.dataPtr, n.dataLen) }

// setData makes b the node's data (nil: a null buffer). The node keeps b,
// which must not be modified afterwards. An empty b that is not nil is
// kept as an empty non-nil slice of no array, so that it does not hold on
// to whatever array b was cut from.
func (n *node) setData(b []byte) {
	if b != nil && len(b) == 0 {
		b = []byte{}
	}
	n.dataPtr, n.dataLen = unsafe.SliceData(b), uint32(len(b))
}

// name returns the node's name, the last component of its path.
func (n *node) name() string { return unsafe.String(n.namePtr, n.nameLen) }

// setName sets the node's name. s must not share its bytes with a larger
// string that would then be kept alive (callers clone a path's component).
func (n *node) setName(s string) {
	n.namePtr, n.nameLen = unsafe.StringData(s), uint32(len(s))
}

// metaKindShift places the kind above the ACL id in node.meta. ACL ids
// count distinct live ACL lists, each used by at least one node, so they
// stay far below 1<<30.
const (
	metaKindShift = 30
	metaACLMask   = 1<<metaKindShift - 1
)

// newNode returns a node of kind k with ACL id acl.
func newNode(k nodeKind, acl aclID) *node {
	return &node{meta: uint32(k)<<metaKindShift | uint32(acl)}
}

func (n *node) kind() nodeKind { return nodeKind(n.meta >> metaKindShift) }
func (n *node) acl() aclID     { return aclID(n.meta & metaACLMask) }

// setACL replaces the node's ACL id.
func (n *node) setACL(id aclID) { n.meta = n.meta&^metaACLMask | uint32(id) }

// stat fills st with the client-visible Stat: cversion counts creates and
// deletes (2*stored - children), and container/TTL owners read as 0.
func (n *node) stat(st *jute.Stat) {
	nc := int32(n.kids.len())
	*st = jute.Stat{
		Czxid:       n.czxid,
		Mzxid:       n.mzxid,
		Ctime:       n.ctime,
		Mtime:       n.mtime,
		Version:     n.version,
		Cversion:    n.cversion*2 - nc,
		Aversion:    n.aversion,
		DataLength:  int32(len(n.data())),
		NumChildren: nc,
		Pzxid:       n.pzxid,
	}
	if n.kind() == kindEphemeral {
		st.EphemeralOwner = n.owner
	}
}

// loc says where a node is linked: its parent, the parent's path ("" for
// the root, ZooKeeper's root alias), its name and its path.
type loc struct {
	parent     *node
	parentPath string
	name       string
	path       string
}

// Tree is the znode tree: the replicated state machine's data. Writes go
// through Apply only; reads may run concurrently with each other.
type Tree struct {
	cfg Config
	// builtin validates ACL lists when cfg has no Authorizer.
	builtin Authorizer

	// mu guards every field below. Apply and SetConfigNode hold it for
	// writing, reads for reading, and a snapshot writer (cow.go) for
	// reading in short stretches. Hooks and watch callbacks run under it
	// and must not call back into the Tree. Lock order: the tree lock is
	// taken before any lock a hook or watch callback takes, never the
	// reverse.
	mu    sync.RWMutex
	root  *node
	count int // number of nodes, the root included
	acls  *aclCache
	// seed hashes child names (kids.go).
	seed maphash.Seed
	// quota caches /zookeeper/quota (quota.go).
	quota *node

	// ephemerals indexes normal ephemeral nodes by owning session.
	ephemerals map[int64]map[string]struct{}
	// containers and ttls index the reaper's candidates (containers and
	// TTL nodes); ReapCandidates (reap.go) scans these.
	containers map[string]struct{}
	ttls       map[string]struct{}

	ephemeralCount int
	dataSize       int64 // sum of javaLen(path)+len(data) over all nodes
	quotaWarn      quotaWarnings

	// digest is the sum of every node's hash (digest.go), kept by every
	// write.
	digest uint64

	// lastZxid is the highest zxid applied (or, after a restore, the
	// highest czxid read), and snap the open snapshot's copy-on-write
	// state, nil when none is open (cow.go).
	lastZxid int64
	snap     *snapState
}

// New returns a fresh tree holding the system nodes of a new ZooKeeper
// server: /, /zookeeper, /zookeeper/quota and /zookeeper/config.
func New(cfg Config) *Tree {
	t := newEmpty(cfg)
	open := t.acls.intern(jute.OpenACLUnsafe)
	t.acls.addRef(open)
	t.acls.addRef(open)
	read := t.acls.intern(jute.ReadACLUnsafe)
	t.root = newNode(kindPersistent, open)
	t.root.setData([]byte{})
	t.insert(t.root, rootPath)
	for _, sys := range []struct {
		path     string
		acl      aclID
		aversion int32
	}{{procPath, open, 0}, {quotaPath, open, 0}, {configPath, read, -1}} {
		n := newNode(kindPersistent, sys.acl)
		n.setData([]byte{})
		n.aversion = sys.aversion
		t.addSystemChild(sys.path, n)
	}
	t.quota = t.lookup(quotaPath)
	t.digest = t.walkDigest()
	return t
}

// newEmpty returns a tree with no nodes at all.
func newEmpty(cfg Config) *Tree {
	return &Tree{
		cfg:        cfg,
		builtin:    acl.NewRegistry(acl.Options{}),
		acls:       newACLCache(),
		seed:       maphash.MakeSeed(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
	}
}

// addSystemChild links a system node under its parent without counting a
// child creation (ZooKeeper builds them that way, hence the negative
// cversions of / and /zookeeper).
func (t *Tree) addSystemChild(path string, n *node) {
	l := t.locate(path)
	n.setName(l.name) // a slice of a constant
	t.link(l, n)
}

// locate returns the loc of path (which must have a '/') with its parent
// looked up; parent is nil when the parent does not exist.
func (t *Tree) locate(path string) loc {
	parentPath, name, _ := splitParent(path)
	return loc{parent: t.lookup(parentPath), parentPath: parentPath, name: name, path: path}
}

// lookup returns the node at path, treating "" as the root (ZooKeeper keeps
// the root under both keys), or nil. It walks the path from the root, so a
// path that is not in canonical form ("/a/", "//a", "a") finds nothing.
func (t *Tree) lookup(path string) *node {
	if path == "" || path == rootPath {
		return t.root
	}
	if path[0] != '/' {
		return nil
	}
	return t.descend(t.root, path[1:])
}

// descend walks rel, a '/'-separated list of names, down from n and returns
// the node it reaches, or nil.
func (t *Tree) descend(n *node, rel string) *node {
	for n != nil {
		i := strings.IndexByte(rel, '/')
		if i < 0 {
			return t.child(n, rel)
		}
		n = t.child(n, rel[:i])
		rel = rel[i+1:]
	}
	return nil
}

// child returns n's child called name, or nil.
func (t *Tree) child(n *node, name string) *node {
	return n.kids.get(name, nameHash(t.seed, name))
}

// insert counts n, at path, in the per-kind indexes and counters, without
// linking it to a parent.
func (t *Tree) insert(n *node, path string) {
	t.count++
	t.dataSize += int64(javaLen(path) + len(n.data()))
	t.indexKind(n, path)
}

// indexKind adds n, at path, to the index of its kind, if it has one.
func (t *Tree) indexKind(n *node, path string) {
	switch n.kind() {
	case kindEphemeral:
		set := t.ephemerals[n.owner]
		if set == nil {
			set = make(map[string]struct{})
			t.ephemerals[n.owner] = set
		}
		set[path] = struct{}{}
		t.ephemeralCount++
	case kindContainer:
		t.containers[path] = struct{}{}
	case kindTTL:
		t.ttls[path] = struct{}{}
	}
}

// remove undoes insert.
func (t *Tree) remove(n *node, path string) {
	t.count--
	t.dataSize -= int64(javaLen(path) + len(n.data()))
	switch n.kind() {
	case kindEphemeral:
		if set := t.ephemerals[n.owner]; set != nil {
			delete(set, path)
			if len(set) == 0 {
				delete(t.ephemerals, n.owner)
			}
		}
		t.ephemeralCount--
	case kindContainer:
		delete(t.containers, path)
	case kindTTL:
		delete(t.ttls, path)
	}
}

// link inserts n, whose name is l.name, and makes it l.parent's child.
// Parent stat fields are the caller's job.
func (t *Tree) link(l loc, n *node) {
	if l.parent.kids == nil {
		l.parent.kids = newKids(1)
	}
	l.parent.kids.add(n, nameHash(t.seed, n.name()))
	t.insert(n, l.path)
}

// unlink undoes link. n must have no children.
func (t *Tree) unlink(l loc, n *node) {
	t.noteUnlink(l, n)
	l.parent.kids.remove(n.name(), nameHash(t.seed, n.name()))
	if l.parent.kids.len() == 0 {
		l.parent.kids = nil
	}
	t.remove(n, l.path)
}

// subtreeSize returns the number of nodes at and below n and the sum of
// their data lengths.
func subtreeSize(n *node) (count, bytes int64) {
	stack := []*node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = n.kids.appendTo(stack[:len(stack)-1])
		count++
		bytes += int64(len(n.data()))
	}
	return count, bytes
}

// NodeCount returns the number of znodes including "/". (ZooKeeper's
// zk_znode_count is one more, because it also counts the root alias "".)
func (t *Tree) NodeCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.count
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
	n := t.lookup(configPath)
	p := pathHash(configPath)
	t.digest -= t.ownHash(p, n)
	t.touch(n)
	t.dataSize += int64(len(data) - len(n.data()))
	n.setData(data)
	n.version = -1
	n.mzxid = zxid
	n.mtime = time
	t.digest += t.ownHash(p, n)
}

package zkimport

import (
	"slices"
	"strconv"
	"strings"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

// openACLID is the ACL cache key ZooKeeper uses for world:anyone with every
// permission; it never appears in the serialized cache.
const openACLID int64 = -1

// Stat is ZooKeeper's StatPersisted: a node's stat as stored. Cversion is
// the stored count of child creations (clients see 2*Cversion-numChildren).
type Stat struct {
	Czxid, Mzxid, Ctime, Mtime int64
	Version, Cversion          int32
	Aversion                   int32
	EphemeralOwner, Pzxid      int64
}

// Node is one znode of the imported tree.
type Node struct {
	Path string // "/" for the root
	Data []byte // nil for a null buffer
	ACL  []jute.ACL
	Stat Stat
}

// db is ZooKeeper's DataTree reduced to what a migration needs: the nodes,
// the sessions and the per-session ephemeral index. It is used by one
// goroutine only.
type db struct {
	nodes      map[string]*Node
	sessions   map[int64]int32
	ephemerals map[int64]map[string]struct{}
	lastZxid   int64
	acls       aclInterner
}

func newDB() *db {
	return &db{
		nodes:      make(map[string]*Node),
		sessions:   make(map[int64]int32),
		ephemerals: make(map[int64]map[string]struct{}),
		acls:       aclInterner{m: make(map[string][]jute.ACL)},
	}
}

// aclInterner shares identical ACL lists between nodes.
type aclInterner struct{ m map[string][]jute.ACL }

func (a *aclInterner) intern(list []jute.ACL) []jute.ACL {
	var b strings.Builder
	for _, x := range list {
		b.WriteString(x.ID.Scheme)
		b.WriteByte(0)
		b.WriteString(x.ID.ID)
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(int(x.Perms)))
		b.WriteByte(0)
	}
	k := b.String()
	if got, ok := a.m[k]; ok {
		return got
	}
	list = slices.Clone(list)
	a.m[k] = list
	return list
}

// parentOf returns the parent path of p ("/" for top-level nodes) and false
// for the root.
func parentOf(p string) (string, bool) {
	i := strings.LastIndexByte(p, '/')
	if p == "/" || i < 0 {
		return "", false
	}
	if i == 0 {
		return "/", true
	}
	return p[:i], true
}

// put adds a node, indexing it by owner when it is an ephemeral.
func (d *db) put(n *Node) {
	d.nodes[n.Path] = n
	if datatree.IsEphemeralOwner(n.Stat.EphemeralOwner) {
		set := d.ephemerals[n.Stat.EphemeralOwner]
		if set == nil {
			set = make(map[string]struct{})
			d.ephemerals[n.Stat.EphemeralOwner] = set
		}
		set[n.Path] = struct{}{}
	}
}

// create is DataTree.createNode: a missing parent or an existing node
// leaves the tree unchanged and reports false. parentCVersion -1 means
// "one more than now"; the parent's cversion and pzxid only move forward,
// which keeps replays over a fuzzy snapshot correct.
func (d *db) create(path string, data []byte, acl []jute.ACL, owner int64, parentCVersion int32, zxid, time int64) bool {
	pp, ok := parentOf(path)
	if !ok {
		return false
	}
	parent := d.nodes[pp]
	if parent == nil || d.nodes[path] != nil {
		return false
	}
	if parentCVersion == -1 {
		parentCVersion = parent.Stat.Cversion + 1
	}
	if parentCVersion > parent.Stat.Cversion {
		parent.Stat.Cversion = parentCVersion
		parent.Stat.Pzxid = zxid
	}
	d.put(&Node{Path: path, Data: data, ACL: d.acls.intern(acl), Stat: Stat{
		Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: time, Mtime: time, EphemeralOwner: owner,
	}})
	return true
}

// fixParent is the NODEEXISTS correction ZooKeeper applies when a replayed
// create (opcode create only) finds its node already in the snapshot.
func (d *db) fixParent(path string, parentCVersion int32, zxid int64) {
	pp, ok := parentOf(path)
	if !ok {
		return
	}
	parent := d.nodes[pp]
	if parent == nil {
		return
	}
	if parentCVersion == -1 {
		parentCVersion = parent.Stat.Cversion + 1
	}
	if parentCVersion > parent.Stat.Cversion {
		parent.Stat.Cversion = parentCVersion
		parent.Stat.Pzxid = zxid
	}
}

// remove is DataTree.deleteNode: the parent's pzxid advances even when the
// child is already gone (fuzzy snapshot); cversion is not touched.
func (d *db) remove(path string, zxid int64) {
	pp, ok := parentOf(path)
	if !ok {
		return
	}
	parent := d.nodes[pp]
	if parent == nil {
		return
	}
	if zxid > parent.Stat.Pzxid {
		parent.Stat.Pzxid = zxid
	}
	n := d.nodes[path]
	if n == nil {
		return
	}
	delete(d.nodes, path)
	if owner := n.Stat.EphemeralOwner; datatree.IsEphemeralOwner(owner) {
		if set := d.ephemerals[owner]; set != nil {
			delete(set, path)
			if len(set) == 0 {
				delete(d.ephemerals, owner)
			}
		}
	}
}

// setData is DataTree.setData; the txn carries the new version.
func (d *db) setData(path string, data []byte, version int32, zxid, time int64) {
	if n := d.nodes[path]; n != nil {
		n.Data = data
		n.Stat.Mzxid = zxid
		n.Stat.Mtime = time
		n.Stat.Version = version
	}
}

// setACL is DataTree.setACL; the txn carries the new aversion.
func (d *db) setACL(path string, acl []jute.ACL, version int32) {
	if n := d.nodes[path]; n != nil {
		n.ACL = d.acls.intern(acl)
		n.Stat.Aversion = version
	}
}

// closeSession forgets a session and deletes its ephemerals (killSession).
func (d *db) closeSession(id, zxid int64) {
	delete(d.sessions, id)
	set := d.ephemerals[id]
	paths := make([]string, 0, len(set))
	for p := range set {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		d.remove(p, zxid)
	}
	delete(d.ephemerals, id)
}

package datatree

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// Snapshot stream, version 1, as written by earlier builds and by zkimport
// (big-endian; str = uint32 length + bytes):
//
//	magic     [8]byte  "zkdtree\x00"
//	version   uint32   1
//	nacls     uint32   number of ACL lists
//	nacls ×   uint32 n, then n × (int32 perms, str scheme, str id)
//	nnodes    uint64   number of nodes
//	nnodes ×  node, in strictly increasing byte order of path:
//	            str    path
//	            int32  data length (-1 = null), then the data bytes
//	            int64  czxid, mzxid, ctime, mtime, pzxid
//	            int32  version, stored cversion, aversion
//	            int64  ephemeralOwner (as stored: container/TTL encodings kept)
//	            uint8  kind (0 persistent, 1 ephemeral, 2 container, 3 TTL)
//	            uint32 index into the ACL lists
//	crc       uint32   CRC-32C of every byte above

// nodeTailV1 is the size of a version 1 record after its data.
const nodeTailV1 = statSize + 4

// readV1 reads the ACL lists and node records of a version 1 stream.
func (t *Tree) readV1(s *snapReader) error {
	n, err := s.u32()
	if err != nil {
		return err
	}
	var ids []aclID
	for i := uint32(0); i < n; i++ {
		list, err := s.aclList()
		if err != nil {
			return err
		}
		id := t.acls.intern(list)
		t.acls.release(id) // nodes take their own references below
		ids = append(ids, id)
	}
	return t.readNodesV1(s, ids)
}

// readNodesV1 reads the node records and links each under its parent,
// which the strict path order guarantees was read before. Consecutive
// records mostly share a parent, so the last one found is kept.
func (t *Tree) readNodesV1(s *snapReader, ids []aclID) error {
	count, err := s.u64()
	if err != nil {
		return err
	}
	prev := ""
	var last loc
	for i := uint64(0); i < count; i++ {
		path, n, err := s.readNodeV1(ids)
		if err != nil {
			return err
		}
		if i > 0 && path <= prev {
			return fmt.Errorf("%w: path %q out of order", ErrBadSnapshot, path)
		}
		prev = path
		t.acls.addRef(n.acl())
		t.lastZxid = max(t.lastZxid, n.czxid)
		if err := t.restoreV1(path, n, &last); err != nil {
			return err
		}
	}
	return nil
}

// readNodeV1 reads one record.
func (s *snapReader) readNodeV1(ids []aclID) (string, *node, error) {
	path, err := s.str()
	if err != nil {
		return "", nil, err
	}
	if ValidatePath(path) != jute.OK {
		return "", nil, fmt.Errorf("%w: invalid path %q", ErrBadSnapshot, path)
	}
	data, err := s.data()
	if err != nil {
		return "", nil, err
	}
	b, err := s.take(nodeTailV1)
	if err != nil {
		return "", nil, err
	}
	_, name, _ := splitParent(path)
	n := &node{name: strings.Clone(name), data: data}
	if err := checkKind(n, decodeStat(b, n)); err != nil {
		return "", nil, err
	}
	idx := binary.BigEndian.Uint32(b[statSize:])
	if idx >= uint32(len(ids)) {
		return "", nil, fmt.Errorf("%w: %s: ACL index %d out of range", ErrBadSnapshot, path, idx)
	}
	n.setACL(ids[idx])
	return path, n, nil
}

// restoreV1 links a node read from a version 1 snapshot into the tree;
// last caches the previous record's parent.
func (t *Tree) restoreV1(path string, n *node, last *loc) error {
	if path == rootPath {
		t.root = n
		t.insert(n, rootPath)
		return nil
	}
	if t.root == nil {
		return fmt.Errorf("%w: %s before the root", ErrBadSnapshot, path)
	}
	parentPath, name, _ := splitParent(path)
	if last.parent == nil || last.parentPath != parentPath {
		*last = loc{parent: t.lookup(parentPath), parentPath: parentPath}
	}
	if last.parent == nil {
		return fmt.Errorf("%w: %s has no parent", ErrBadSnapshot, path)
	}
	if last.parent.kind() == kindEphemeral {
		return fmt.Errorf("%w: %s is a child of an ephemeral", ErrBadSnapshot, path)
	}
	t.link(loc{parent: last.parent, parentPath: parentPath, name: name, path: path}, n)
	return nil
}

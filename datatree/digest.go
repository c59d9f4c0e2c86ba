package datatree

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// The tree digest (doc.go gives the definition) lives in Tree.digest and
// every write keeps it exact: before it changes a field of a node it
// subtracts the hash of the part of the node that holds the field, and
// after the change it adds the part's new hash. Nothing is cached per node
// (the node struct stays at 112 bytes), so the old hash is recomputed from
// the node as it still is.
//
// A node's hash is the sum of two parts, so that a child create or delete,
// which changes only its parent's pzxid, cversion and child count, never
// hashes the parent's data:
//
//	own(n)  = XXH64(p czxid mzxid ctime mtime owner acl dataLen version|aversion kind|'o' XXH64(data))
//	kids(n) = XXH64(p pzxid cversion|numChildren 'k')
//
// where p = XXH64(full path), acl = XXH64 of the ACL list's jute encoding
// (cached per interned list, aclCache.hashes), dataLen is -1 for a null
// buffer, and each field is a little-endian 64-bit word (a|b: a in the
// low 32 bits, b in the high ones; kind|'o': kind in the low byte, the tag
// above it). Whole words keep the input aligned: a word that straddles two
// narrower stores cannot be forwarded from them and costs XXH64 a stall.
// A multi that fails restores the digest it started from, since its
// rollback restores the tree exactly (multi.go).

// pathHash returns p, the hash of a full path ("/" for the root).
func pathHash(path string) uint64 { return xxhash.Sum64String(path) }

// parentHash returns the path hash of a loc's parent, whose path is "" for
// the root.
func parentHash(parentPath string) uint64 {
	if parentPath == "" {
		return pathHash(rootPath)
	}
	return pathHash(parentPath)
}

// ownHash returns own(n) for the node whose path hashes to p.
func (t *Tree) ownHash(p uint64, n *node) uint64 {
	return ownHash(p, n, t.acls.hash(n.acl()))
}

// nodeHash returns own(n) + kids(n) for the node whose path hashes to p.
func (t *Tree) nodeHash(p uint64, n *node) uint64 {
	return t.ownHash(p, n) + kidsHash(p, n, n.kids.len())
}

// ownHash returns own(n) with acl, the hash of n's ACL list.
func ownHash(p uint64, n *node, acl uint64) uint64 {
	le := binary.LittleEndian
	dataLen := int64(-1)
	if n.dataPtr != nil {
		dataLen = int64(len(n.data()))
	}
	var b [11 * 8]byte
	le.PutUint64(b[0:], p)
	le.PutUint64(b[8:], uint64(n.czxid))
	le.PutUint64(b[16:], uint64(n.mzxid))
	le.PutUint64(b[24:], uint64(n.ctime))
	le.PutUint64(b[32:], uint64(n.mtime))
	le.PutUint64(b[40:], uint64(n.owner))
	le.PutUint64(b[48:], acl)
	le.PutUint64(b[56:], uint64(dataLen))
	le.PutUint64(b[64:], pair(n.version, n.aversion))
	le.PutUint64(b[72:], uint64(n.kind())|'o'<<8)
	le.PutUint64(b[80:], xxhash.Sum64(n.data()))
	return xxhash.Sum64(b[:])
}

// kidsHash returns kids(n) for a node with nkids children.
func kidsHash(p uint64, n *node, nkids int) uint64 {
	le := binary.LittleEndian
	var b [4 * 8]byte
	le.PutUint64(b[0:], p)
	le.PutUint64(b[8:], uint64(n.pzxid))
	le.PutUint64(b[16:], pair(n.cversion, int32(nkids)))
	le.PutUint64(b[24:], 'k')
	return xxhash.Sum64(b[:])
}

// pair packs lo and hi into one word.
func pair(lo, hi int32) uint64 { return uint64(uint32(lo)) | uint64(uint32(hi))<<32 }

// Digest returns the digest of the whole tree: equal on two trees with the
// same content, however each was built (applies, ReadSnapshot, a Loader).
// It is kept up to date by every write, so reading it costs nothing; it
// takes the read lock, so an Apply hook must not call it.
func (t *Tree) Digest() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.digest
}

// ComputeDigest recomputes the digest by hashing every node, under the
// read lock. It equals Digest unless the tree's memory was corrupted or a
// write path missed an update; it is meant for checks at startup and in
// tests.
func (t *Tree) ComputeDigest() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.walkDigest()
}

// digestItem is a node waiting to be hashed by walkDigest, with the length
// of its parent's path in the path buffer (0 for the root's children).
type digestItem struct {
	n         *node
	parentLen int
}

// walkDigest hashes every node, building each path in one buffer: a node's
// parent path is still in the buffer when it is popped, since the stack
// holds only siblings of the nodes on the way down. Caller holds Tree.mu.
func (t *Tree) walkDigest() uint64 {
	var sum uint64
	path := make([]byte, 0, 256)
	stack := []digestItem{{n: t.root}}
	var kids []*node
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		path = append(append(path[:it.parentLen], '/'), it.n.name()...)
		sum += t.nodeHash(xxhash.Sum64(path), it.n)
		prefix := len(path)
		if it.n == t.root {
			prefix = 0
		}
		kids = it.n.kids.appendTo(kids[:0])
		for _, c := range kids {
			stack = append(stack, digestItem{n: c, parentLen: prefix})
		}
	}
	return sum
}

package datatree

import (
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/zkserverd/zkserverd/jute"
)

// Authorizer checks permissions and validates ACL lists. It is implemented
// by package acl; datatree only declares what it needs.
type Authorizer interface {
	// Allowed reports whether ids may perform perm on a node with this ACL.
	// acl must not be modified.
	Allowed(acl []jute.ACL, ids []jute.ID, perm int32) bool
	// FixupACL validates an ACL list for create/setACL (dedup, expand `auth`
	// with the caller's ids) and returns the list to store, or
	// jute.InvalidACL.
	FixupACL(acl []jute.ACL, ids []jute.ID) ([]jute.ACL, jute.Code)
}

// aclID identifies an interned ACL list inside one Tree.
type aclID uint32

// aclCache interns ACL lists so that nodes sharing a list share one copy
// (ZooKeeper's ReferenceCountedACLCache). Entries are reference counted;
// an entry whose count drops to zero is freed by sweep at the end of an
// Apply, so a multi that is rolled back can take its references back.
// Guarded by Tree.mu.
type aclCache struct {
	lists [][]jute.ACL
	refs  []int64
	byKey map[string]aclID
	free  []aclID
	zero  []aclID // ids whose count reached zero since the last sweep
	key   []byte  // scratch buffer for lookups

	// hashes holds each list's content hash, the XXH64 of its key: the
	// tree digest's ACL part (digest.go), the same on every member
	// whatever id the list has here.
	hashes []uint64
}

func newACLCache() *aclCache {
	return &aclCache{byKey: make(map[string]aclID)}
}

// appendACLKey appends an unambiguous encoding of list to dst.
func appendACLKey(dst []byte, list []jute.ACL) []byte {
	e := jute.NewEncoder(dst)
	e.Int(int32(len(list)))
	for i := range list {
		list[i].Encode(e)
	}
	return e.Bytes()
}

// intern returns the id of list, adding one reference. The cache keeps its
// own copy of a new list.
func (c *aclCache) intern(list []jute.ACL) aclID {
	c.key = appendACLKey(c.key[:0], list)
	if id, ok := c.byKey[string(c.key)]; ok {
		c.refs[id]++
		return id
	}
	own := make([]jute.ACL, len(list))
	copy(own, list)
	var id aclID
	if n := len(c.free); n > 0 {
		id = c.free[n-1]
		c.free = c.free[:n-1]
		c.lists[id] = own
		c.refs[id] = 1
		c.hashes[id] = xxhash.Sum64(c.key)
	} else {
		id = aclID(len(c.lists))
		c.lists = append(c.lists, own)
		c.refs = append(c.refs, 1)
		c.hashes = append(c.hashes, xxhash.Sum64(c.key))
	}
	c.byKey[string(c.key)] = id
	return id
}

// get returns the interned list; callers must not modify it.
func (c *aclCache) get(id aclID) []jute.ACL { return c.lists[id] }

// hash returns the content hash of the interned list.
func (c *aclCache) hash(id aclID) uint64 { return c.hashes[id] }

// addRef takes one more reference on id.
func (c *aclCache) addRef(id aclID) { c.refs[id]++ }

// release drops one reference; the entry is freed at the next sweep if no
// reference is taken back before.
func (c *aclCache) release(id aclID) {
	c.refs[id]--
	if c.refs[id] == 0 {
		c.zero = append(c.zero, id)
	}
}

// sweep frees the entries that are still unreferenced.
func (c *aclCache) sweep() {
	for _, id := range c.zero {
		if c.refs[id] != 0 || c.lists[id] == nil {
			continue
		}
		c.key = appendACLKey(c.key[:0], c.lists[id])
		delete(c.byKey, string(c.key))
		c.lists[id] = nil
		c.free = append(c.free, id)
	}
	c.zero = c.zero[:0]
}

// size returns the number of live interned lists.
func (c *aclCache) size() int { return len(c.byKey) }

// maskDigestIDs returns a copy of acl in which every digest id has the text
// from each ':' up to the end of its line replaced by ":x", as getACL shows
// it to a caller without ADMIN (Java: id.replaceAll(":.*", ":x")).
func maskDigestIDs(acl []jute.ACL) []jute.ACL {
	out := make([]jute.ACL, len(acl))
	for i, a := range acl {
		if a.ID.Scheme == "digest" {
			a.ID.ID = maskDigest(a.ID.ID)
		}
		out[i] = a
	}
	return out
}

// maskDigest applies the regular expression ":.*" → ":x", where '.' does not
// match Java line terminators.
func maskDigest(id string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(id, ':')
		if i < 0 {
			b.WriteString(id)
			return b.String()
		}
		b.WriteString(id[:i])
		b.WriteString(":x")
		id = id[i+1:]
		j := indexLineTerminator(id)
		if j < 0 {
			return b.String()
		}
		id = id[j:]
	}
}

// indexLineTerminator finds the first Java line terminator (\n, \r, U+0085,
// U+2028, U+2029) in s.
func indexLineTerminator(s string) int {
	return strings.IndexFunc(s, func(r rune) bool {
		return r == '\n' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029
	})
}

// cloneACL returns a copy of acl that the caller may keep.
func cloneACL(acl []jute.ACL) []jute.ACL {
	out := make([]jute.ACL, len(acl))
	copy(out, acl)
	return out
}

package datatree

import (
	"strings"

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
	} else {
		id = aclID(len(c.lists))
		c.lists = append(c.lists, own)
		c.refs = append(c.refs, 1)
	}
	c.byKey[string(c.key)] = id
	return id
}

// get returns the interned list; callers must not modify it.
func (c *aclCache) get(id aclID) []jute.ACL { return c.lists[id] }

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

// defaultFixupACL is the ACL validation used when no Authorizer is
// configured. It follows ZooKeeper's PrepRequestProcessor.fixupACL with the
// stock providers (ip, digest): duplicates are removed keeping order, an
// empty list is invalid, `world` must be `anyone`, `auth` expands to one
// entry per authenticated caller id (every scheme but ip, world and super),
// `digest` ids must be `user:hash`, `ip` ids an address or CIDR, and any
// other scheme is invalid. The input is returned as is when nothing changes.
func defaultFixupACL(acl []jute.ACL, ids []jute.ID) ([]jute.ACL, jute.Code) {
	uniq := dedupACL(acl)
	if len(uniq) == 0 {
		return nil, jute.InvalidACL
	}
	out := uniq
	expanded := false
	for i, a := range uniq {
		switch a.ID.Scheme {
		case "world":
			if a.ID.ID != "anyone" {
				return nil, jute.InvalidACL
			}
		case "auth":
			if !expanded {
				out = append([]jute.ACL(nil), uniq[:i]...)
				expanded = true
			}
			n := len(out)
			for _, id := range ids {
				if authenticatedScheme(id.Scheme) {
					out = append(out, jute.ACL{Perms: a.Perms, ID: id})
				}
			}
			if len(out) == n {
				return nil, jute.InvalidACL
			}
			continue
		case "digest":
			if !validDigestID(a.ID.ID) {
				return nil, jute.InvalidACL
			}
		case "ip":
			if !validIPID(a.ID.ID) {
				return nil, jute.InvalidACL
			}
		default:
			return nil, jute.InvalidACL
		}
		if expanded {
			out = append(out, a)
		}
	}
	return out, jute.OK
}

// authenticatedScheme reports whether a caller identity of this scheme is
// one an `auth` ACL entry expands to (its provider isAuthenticated in
// ZooKeeper terms).
func authenticatedScheme(scheme string) bool {
	switch scheme {
	case "", "ip", "world", "super", "auth":
		return false
	}
	return true
}

// dedupACL removes exact duplicates keeping the first occurrence. It returns
// acl itself when there are none.
func dedupACL(acl []jute.ACL) []jute.ACL {
	if len(acl) > 32 {
		return dedupACLMap(acl)
	}
	for i := 1; i < len(acl); i++ {
		for j := 0; j < i; j++ {
			if acl[i] == acl[j] {
				return dedupACLMap(acl)
			}
		}
	}
	return acl
}

func dedupACLMap(acl []jute.ACL) []jute.ACL {
	seen := make(map[jute.ACL]struct{}, len(acl))
	out := make([]jute.ACL, 0, len(acl))
	for _, a := range acl {
		if _, dup := seen[a]; dup {
			continue
		}
		seen[a] = struct{}{}
		out = append(out, a)
	}
	return out
}

// validDigestID mirrors DigestAuthenticationProvider.isValid:
// id.split(":").length == 2 with Java's split, which drops trailing empty
// strings (so "alice:" and "a:b:c" are invalid, ":h" and "a:b:" are valid).
func validDigestID(id string) bool {
	parts := strings.Split(id, ":")
	if len(parts) == 1 {
		return false
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return len(parts) == 2
}

// validIPID mirrors IPAuthenticationProvider.isValid (3.9.4+, which also
// accepts IPv6): an address, optionally followed by "/bits" with bits within
// the address width.
func validIPID(id string) bool {
	addr, bits, hasBits := strings.Cut(id, "/")
	width, ok := ipWidth(addr)
	if !ok {
		return false
	}
	if !hasBits {
		return true
	}
	n, ok := javaParseInt(bits, 10)
	return ok && n >= 0 && int(n) <= width
}

// ipWidth returns the bit width of a textual address (32 or 128), choosing
// IPv6 when the text contains ':' and IPv4 when it contains '.'.
func ipWidth(addr string) (int, bool) {
	switch {
	case strings.Contains(addr, ":"):
		return 128, validIPv6(addr)
	case strings.Contains(addr, "."):
		return 32, validIPv4(addr)
	}
	return 0, false
}

func validIPv4(addr string) bool {
	parts := strings.Split(addr, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		v, ok := javaParseInt(p, 10)
		if !ok || v < 0 || v > 255 {
			return false
		}
	}
	return true
}

// validIPv6 accepts eight colon-separated groups of one to four hex digits,
// or fewer groups around a single "::".
func validIPv6(addr string) bool {
	halves := strings.Split(addr, "::")
	var groups []string
	switch len(halves) {
	case 1:
		groups = strings.Split(halves[0], ":")
		if len(groups) != 8 {
			return false
		}
	case 2:
		var a, b []string
		if halves[0] != "" {
			a = strings.Split(halves[0], ":")
		}
		if halves[1] != "" {
			b = strings.Split(halves[1], ":")
		}
		if len(a)+len(b) >= 8 {
			return false
		}
		groups = append(a, b...)
	default:
		return false
	}
	for _, g := range groups {
		if g == "" || len(g) > 4 {
			return false
		}
		if _, ok := javaParseInt(g, 16); !ok {
			return false
		}
	}
	return true
}

// javaParseInt mirrors Integer.parseInt for ASCII input: an optional sign,
// at least one digit, and a value that fits in an int.
func javaParseInt(s string, base int32) (int32, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	switch s[0] {
	case '-':
		neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		d := digitValue(s[i])
		if d < 0 || d >= base {
			return 0, false
		}
		v = v*int64(base) + int64(d)
		if v > 1<<31 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -(1<<31) {
		return 0, false
	}
	return int32(v), true
}

func digitValue(c byte) int32 {
	switch {
	case c >= '0' && c <= '9':
		return int32(c - '0')
	case c >= 'a' && c <= 'z':
		return int32(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int32(c-'A') + 10
	}
	return -1
}

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

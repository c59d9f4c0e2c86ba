package datatree

import "hash/maphash"

// kids is a directory's set of children, found by name. It keeps, for
// every child, the node pointer and a 32-bit hash of its name, so that a
// search compares hashes and dereferences a node only when they match:
//
//   - up to kidsSmall children, the two slices are dense and searched
//     linearly (a directory of one child costs its 64-byte header plus 12
//     bytes);
//   - above that, they form an open-addressing table of a power-of-two
//     size with linear probing, at most 3/4 full, and deletion by backward
//     shift (no tombstones). Growing rehashes from the stored hashes, so it
//     never touches the children themselves.
//
// Against a map[string]*node this takes 12-16 bytes per child instead of
// about 55, holds one pointer per child instead of two, and lets names live
// in the nodes, which the garbage collector marks in about half the time.
// Iteration order is unspecified. kids is guarded by Tree.mu.
type kids struct {
	nodes []*node  // the children (table: nil in an empty slot)
	hash  []uint32 // hash of each child's name (table: 0 in an empty slot)
	n     int      // number of children
	table bool     // open-addressing mode
}

// kidsSmall is the largest directory kept as dense slices.
const kidsSmall = 16

// nameHash hashes a child name; 0 is reserved for empty table slots.
func nameHash(seed maphash.Seed, name string) uint32 {
	h := uint32(maphash.String(seed, name))
	if h == 0 {
		h = 1
	}
	return h
}

// len returns the number of children; a nil set has none.
func (k *kids) len() int {
	if k == nil {
		return 0
	}
	return k.n
}

// get returns the child named name with hash h, or nil.
func (k *kids) get(name string, h uint32) *node {
	if k == nil {
		return nil
	}
	if !k.table {
		for i, x := range k.hash {
			if x == h && k.nodes[i].name() == name {
				return k.nodes[i]
			}
		}
		return nil
	}
	mask := uint32(len(k.hash) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch x := k.hash[i]; {
		case x == 0:
			return nil
		case x == h && k.nodes[i].name() == name:
			return k.nodes[i]
		}
	}
}

// add inserts c, whose name (hash h) must not be present.
func (k *kids) add(c *node, h uint32) {
	if !k.table {
		if k.n < kidsSmall {
			k.nodes = append(k.nodes, c)
			k.hash = append(k.hash, h)
			k.n++
			return
		}
		k.rehash(tableSize(k.n + 1))
	} else if (k.n+1)*4 > len(k.hash)*3 {
		k.rehash(2 * len(k.hash))
	}
	k.place(c, h)
	k.n++
}

// place puts c in the first free slot of its probe sequence (table mode).
func (k *kids) place(c *node, h uint32) {
	mask := uint32(len(k.hash) - 1)
	i := h & mask
	for k.hash[i] != 0 {
		i = (i + 1) & mask
	}
	k.nodes[i], k.hash[i] = c, h
}

// remove deletes the child named name with hash h and reports whether it
// was there.
func (k *kids) remove(name string, h uint32) bool {
	if !k.table {
		for i, x := range k.hash {
			if x == h && k.nodes[i].name() == name {
				last := len(k.nodes) - 1
				k.nodes[i], k.hash[i] = k.nodes[last], k.hash[last]
				k.nodes[last] = nil
				k.nodes, k.hash = k.nodes[:last], k.hash[:last]
				k.n--
				return true
			}
		}
		return false
	}
	mask := uint32(len(k.hash) - 1)
	i := h & mask
	for ; k.hash[i] != h || k.nodes[i].name() != name; i = (i + 1) & mask {
		if k.hash[i] == 0 {
			return false
		}
	}
	k.shiftBack(i, mask)
	k.n--
	if k.n <= kidsSmall/2 {
		k.compact()
	} else if k.n*8 < len(k.hash) && len(k.hash) > 64 {
		k.rehash(len(k.hash) / 2)
	}
	return true
}

// shiftBack empties slot i by moving later entries of the same probe run
// back into it, so that no search is cut short by the hole.
func (k *kids) shiftBack(i, mask uint32) {
	for j := (i + 1) & mask; k.hash[j] != 0; j = (j + 1) & mask {
		home := k.hash[j] & mask
		// Move j to i unless its home lies cyclically in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			k.nodes[i], k.hash[i] = k.nodes[j], k.hash[j]
			i = j
		}
	}
	k.nodes[i], k.hash[i] = nil, 0
}

// compact turns a small table back into dense slices.
func (k *kids) compact() {
	nodes := make([]*node, 0, k.n)
	hash := make([]uint32, 0, k.n)
	for i, c := range k.nodes {
		if c != nil {
			nodes = append(nodes, c)
			hash = append(hash, k.hash[i])
		}
	}
	k.nodes, k.hash, k.table = nodes, hash, false
}

// rehash rebuilds the set as a table of size slots (a power of two).
func (k *kids) rehash(size int) {
	nodes, hash := k.nodes, k.hash
	k.nodes, k.hash, k.table = make([]*node, size), make([]uint32, size), true
	for i, c := range nodes {
		if c != nil {
			k.place(c, hash[i])
		}
	}
}

// tableSize returns the table size for n children: the smallest power of
// two at least 4/3 n.
func tableSize(n int) int {
	size := 32
	for size*3 < n*4 {
		size *= 2
	}
	return size
}

// newKids returns an empty set sized for n children.
func newKids(n int) *kids {
	if n <= kidsSmall {
		return &kids{nodes: make([]*node, 0, n), hash: make([]uint32, 0, n)}
	}
	size := tableSize(n)
	return &kids{nodes: make([]*node, size), hash: make([]uint32, size), table: true}
}

// each calls fn for every child.
func (k *kids) each(fn func(c *node)) {
	if k == nil {
		return
	}
	for _, c := range k.nodes {
		if c != nil {
			fn(c)
		}
	}
}

// appendTo appends every child to dst.
func (k *kids) appendTo(dst []*node) []*node {
	if k == nil {
		return dst
	}
	if !k.table {
		return append(dst, k.nodes...)
	}
	for _, c := range k.nodes {
		if c != nil {
			dst = append(dst, c)
		}
	}
	return dst
}

package datatree

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// Snapshots are copy-on-write. Capturing one (Tree.Snapshot) only records
// the highest zxid applied so far and copies the ACL table, which takes time
// proportional to the number of distinct ACL lists, not of nodes. Writes go
// on as usual while the snapshot is written out, and each change to a node
// that existed at the capture first keeps a copy of it:
//
//   - a node was created after the capture if its czxid is above the
//     capture's zxid (zxids only grow; a create applied with a lower zxid
//     is recorded in snapState.created instead);
//   - touch, called before any change to a field the snapshot stream
//     holds, copies a node that existed at the capture into
//     snapState.saved, once;
//   - unlinking a node that existed at the capture records it, by parent,
//     in snapState.removed, so that the writer still finds it.
//
// The writer (snapWalker) walks the live tree under the read lock in short
// stretches, releasing it every few hundred nodes so that Apply never waits
// long. For each directory it copies the current children and the removed
// ones, keeps those that existed at the capture, sorts them by name outside
// the lock and writes every node as it was at the capture: the saved copy
// if there is one, else the live node, which then has not changed. A child
// unlinked and linked again (a rolled-back multi) is found twice and
// written once.

// ErrSnapshotOpen is returned by Tree.Snapshot while an earlier snapshot
// has not been released.
var ErrSnapshotOpen = errors.New("datatree: a snapshot is already open")

// snapState is the copy-on-write record of the open snapshot. Guarded by
// Tree.mu: Apply writes it under the write lock, the snapshot writer reads
// it under the read lock.
type snapState struct {
	zxid    int64              // Tree.lastZxid at the capture
	created map[*node]struct{} // nodes created since with a czxid <= zxid
	saved   map[*node]*node    // capture-time copies of nodes changed since
	removed map[*node][]*node  // children unlinked since the capture, by parent
	acls    [][]jute.ACL       // ACL lists by id at the capture (immutable lists)
	count   int                // number of nodes at the capture
}

// touch must be called before a field of n that snapshots hold (data,
// stats, ACL) changes: while a snapshot is open it keeps a copy of n as it
// was at the capture, once.
func (t *Tree) touch(n *node) {
	s := t.snap
	if s == nil || !s.existed(n) {
		return
	}
	if _, ok := s.saved[n]; ok {
		return
	}
	c := *n
	c.kids = nil
	s.saved[n] = &c
}

// noteCreate records, while a snapshot is open, a node created with a zxid
// that does not tell it apart from the nodes of the capture.
func (t *Tree) noteCreate(n *node) {
	if s := t.snap; s != nil && n.czxid <= s.zxid {
		s.created[n] = struct{}{}
	}
}

// noteUnlink records, while a snapshot is open, that n (linked at l) is
// being unlinked, if it existed at the capture.
func (t *Tree) noteUnlink(l loc, n *node) {
	if s := t.snap; s != nil && s.existed(n) {
		s.removed[l.parent] = append(s.removed[l.parent], n)
	}
}

// existed reports whether n was in the tree at the capture (n is, or was
// since, in the tree). Caller holds Tree.mu.
func (s *snapState) existed(n *node) bool {
	if n.czxid > s.zxid {
		return false
	}
	if len(s.created) == 0 {
		return true
	}
	_, ok := s.created[n]
	return !ok
}

// value returns n as it was at the capture. Caller holds Tree.mu.
func (s *snapState) value(n *node) *node {
	if c, ok := s.saved[n]; ok {
		return c
	}
	return n
}

// Snapshot is a point-in-time image of a Tree, captured by Tree.Snapshot
// and written out by WriteTo while the tree keeps changing.
type Snapshot struct {
	t *Tree
	s *snapState
}

// Snapshot captures the tree's current state without copying it and
// returns it for writing with WriteTo; writes may continue at once. Until
// Release, every write that changes or deletes a node existing at the
// capture keeps a copy of it, so Release must always be called. Only one
// snapshot may be open at a time; a second call returns ErrSnapshotOpen.
func (t *Tree) Snapshot() (*Snapshot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.snap != nil {
		return nil, ErrSnapshotOpen
	}
	t.snap = &snapState{
		zxid:    t.lastZxid,
		created: make(map[*node]struct{}),
		saved:   make(map[*node]*node),
		removed: make(map[*node][]*node),
		acls:    slices.Clone(t.acls.lists),
		count:   t.count,
	}
	return &Snapshot{t: t, s: t.snap}, nil
}

// Release ends the snapshot: the tree stops keeping copies for it. It is
// safe to call more than once; WriteTo must not be called afterwards.
func (s *Snapshot) Release() {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if s.t.snap == s.s {
		s.t.snap = nil
	}
}

// WriteTo writes the snapshot as a stream that ReadSnapshot reads
// (snapshot.go describes the format). The bytes depend only on the tree's
// content at the capture. It takes the tree's read lock only briefly at a
// time, so writes continue while it runs. It may be called more than once
// before Release.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	return s.write(w, walkBudget, nil)
}

// write is WriteTo with the walker's budget (work per hold of the read
// lock) and a function called whenever it has released the lock (nil:
// none), which tests use to interleave writes.
func (s *Snapshot) write(w io.Writer, budget int, pause func()) (int64, error) {
	s.t.mu.RLock()
	released := s.t.snap != s.s
	s.t.mu.RUnlock()
	if released {
		return 0, errors.New("datatree: write snapshot: already released")
	}
	sw := newSnapWriter(w)
	sw.header(uint64(s.s.count))
	wk := &snapWalker{t: s.t, s: s.s, out: sw, aclIndex: make(map[aclID]uint32), budget: budget, pause: pause}
	wk.run()
	n, err := sw.finish()
	if err == nil && wk.written != uint64(s.s.count) {
		err = fmt.Errorf("wrote %d nodes of %d", wk.written, s.s.count)
	}
	if err != nil {
		return n, fmt.Errorf("datatree: write snapshot: %w", err)
	}
	return n, nil
}

// WriteSnapshot writes the whole tree to w as ReadSnapshot reads it: the
// same tree content always gives the same bytes. Writes to the tree may go
// on meanwhile; the stream holds the state at the call. If a snapshot is
// already open it writes under the read lock instead, holding up writes
// until it returns.
func (t *Tree) WriteSnapshot(w io.Writer) error {
	snap, err := t.Snapshot()
	if errors.Is(err, ErrSnapshotOpen) {
		return t.writeLocked(w)
	}
	if err != nil {
		return err
	}
	defer snap.Release()
	_, err = snap.WriteTo(w)
	return err
}

// writeLocked writes the live tree under the read lock, as a snapshot that
// every node existed at and nothing was saved or removed for.
func (t *Tree) writeLocked(w io.Writer) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := &snapState{zxid: math.MaxInt64, acls: t.acls.lists, count: t.count}
	sw := newSnapWriter(w)
	sw.header(uint64(s.count))
	wk := &snapWalker{t: t, s: s, out: sw, aclIndex: make(map[aclID]uint32), locked: true, budget: walkBudget}
	wk.run()
	if _, err := sw.finish(); err != nil {
		return fmt.Errorf("datatree: write snapshot: %w", err)
	}
	return nil
}

// Walker budgets: the read lock is released after this much work (nodes
// visited plus map entries scanned), and the output is flushed (outside
// the lock) when this many bytes are buffered.
const (
	walkBudget    = 512
	walkFlushSize = 64 << 10
)

// snapWalker writes a snapshot's nodes depth first, children in name
// order.
type snapWalker struct {
	t        *Tree
	s        *snapState
	out      *snapWriter
	aclIndex map[aclID]uint32 // stream index of each ACL list written so far
	locked   bool             // the caller holds the read lock throughout
	budget   int              // work allowed per lock hold
	pause    func()           // called after each release of the lock, if set
	work     int              // work done since the lock was taken
	written  uint64
	stack    []walkFrame
	keyed    []keyedChild // sortChildren's scratch space
	spare    []keyedChild // and sortKeyed's
}

// walkFrame is a directory being written: its children in name order and
// how many of them (with their subtrees) were written.
type walkFrame struct {
	kids []*node
	next int
}

// run writes the root and everything below it.
func (wk *snapWalker) run() {
	wk.lock()
	kids := wk.children(wk.t.root)
	rec := *wk.s.value(wk.t.root)
	wk.unlock()
	wk.emit(&rec, wk.sortChildren(kids))
	for len(wk.stack) > 0 && wk.out.err == nil {
		wk.step()
	}
}

// step writes the next few children of the directory on top of the stack
// under one read lock, stopping after a child that has children of its own
// (its subtree comes next) or when the budget is spent. Children lists are
// sorted outside the lock.
func (wk *snapWalker) step() {
	wk.lock()
	for wk.out.err == nil {
		top := &wk.stack[len(wk.stack)-1]
		if top.next == len(top.kids) {
			wk.stack = wk.stack[:len(wk.stack)-1]
			break
		}
		c := top.kids[top.next]
		top.next++
		kids := wk.children(c)
		rec := *wk.s.value(c)
		if len(kids) > 1 {
			wk.unlock()
			wk.emit(&rec, wk.sortChildren(kids))
			return
		}
		wk.emit(&rec, kids)
		if len(kids) > 0 || wk.work >= wk.budget || len(wk.out.buf) >= walkFlushSize {
			break
		}
	}
	wk.unlock()
}

// emit writes one node record and pushes its children, if any, as the
// directory to write next.
func (wk *snapWalker) emit(rec *node, kids []*node) {
	wk.work++
	wk.written++
	acl := rec.acl()
	idx, ok := wk.aclIndex[acl]
	var newList []jute.ACL
	if !ok {
		idx = uint32(len(wk.aclIndex))
		wk.aclIndex[acl] = idx
		newList = wk.s.acls[acl]
	}
	wk.out.node(rec, uint32(len(kids)), idx, newList)
	if len(kids) > 0 {
		wk.stack = append(wk.stack, walkFrame{kids: kids})
	}
}

// children returns the children n had at the capture, in no order and
// possibly with repeats. Caller holds the read lock. It copies the current
// children and the removed ones at once, then filters the copy, releasing
// the lock now and then (yield) in a large directory.
func (wk *snapWalker) children(n *node) []*node {
	removed := wk.s.removed[n]
	if n.kids.len()+len(removed) == 0 {
		return nil
	}
	all := n.kids.appendTo(make([]*node, 0, n.kids.len()+len(removed)))
	all = append(all, removed...)
	kept := all[:0]
	for _, c := range all {
		if wk.s.existed(c) {
			kept = append(kept, c)
		}
		wk.work++
		if wk.work >= wk.budget {
			wk.yield()
		}
	}
	return kept
}

// sortChildren sorts a directory by name and drops repeats: a child that
// was unlinked and linked again (a rolled-back multi) is found both live
// and among the removed. Two entries with one name are the same node,
// since a directory held one node per name at the capture. Names never
// change, so this needs no lock. A large directory is sorted as (8-byte
// name prefix, node) entries (sortKeyed), which mostly sort without
// touching the nodes or the names' bytes.
func (wk *snapWalker) sortChildren(kids []*node) []*node {
	if len(kids) < 2 {
		return kids
	}
	if len(kids) < sortByKeyFrom {
		slices.SortFunc(kids, func(a, b *node) int { return strings.Compare(a.name(), b.name()) })
		return slices.CompactFunc(kids, func(a, b *node) bool { return a.name() == b.name() })
	}
	if cap(wk.keyed) < len(kids) {
		wk.keyed = make([]keyedChild, 0, len(kids))
		wk.spare = make([]keyedChild, len(kids))
	}
	keyed := wk.keyed[:0]
	for _, k := range kids {
		keyed = append(keyed, keyedChild{key: namePrefix(k.name()), n: k})
	}
	sorted := sortKeyed(keyed, wk.spare[:len(keyed)])
	out := kids[:0]
	for i, k := range sorted {
		// Different keys mean different names; only equal keys need the
		// names themselves, which sit in other cache lines.
		if i > 0 && k.key == sorted[i-1].key && k.n.name() == sorted[i-1].n.name() {
			continue
		}
		out = append(out, k.n)
	}
	clear(keyed)
	clear(wk.spare[:len(keyed)])
	return out
}

// sortKeyed sorts keyed by key, and entries with equal keys (names that
// share their first 8 bytes) by name, using spare (as long as keyed) as
// scratch space; the result is in keyed or in spare. The keys are sorted
// least significant byte first, one counting pass and one scatter pass per
// byte, and a byte that every key shares is skipped: in a large directory
// most names share their first bytes.
func sortKeyed(keyed, spare []keyedChild) []keyedChild {
	src, dst := keyed, spare
	for shift := 0; shift < 64; shift += 8 {
		var count [256]int
		for _, k := range src {
			count[byte(k.key>>shift)]++
		}
		if count[byte(src[0].key>>shift)] == len(src) {
			continue
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for _, k := range src {
			d := byte(k.key >> shift)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	for i := 0; i < len(src); {
		j := i + 1
		for j < len(src) && src[j].key == src[i].key {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(src[i:j], func(a, b keyedChild) int { return strings.Compare(a.n.name(), b.n.name()) })
		}
		i = j
	}
	return src
}

// sortByKeyFrom is the directory size from which sortChildren sorts keyed
// entries.
const sortByKeyFrom = 64

// keyedChild is a child with the first 8 bytes of its name, big-endian,
// zero-padded: prefixes order like the names they start.
type keyedChild struct {
	key uint64
	n   *node
}

func namePrefix(name string) uint64 {
	var k uint64
	for i := range 8 {
		k <<= 8
		if i < len(name) {
			k |= uint64(name[i])
		}
	}
	return k
}

func (wk *snapWalker) lock() {
	if !wk.locked {
		wk.t.mu.RLock()
	}
	wk.work = 0
}

func (wk *snapWalker) unlock() {
	if !wk.locked {
		wk.t.mu.RUnlock()
	}
	if len(wk.out.buf) >= walkFlushSize {
		wk.out.flush()
	}
	if !wk.locked && wk.pause != nil {
		wk.pause()
	}
}

// yield lets waiting writers in, in the middle of a large directory.
func (wk *snapWalker) yield() {
	wk.unlock()
	wk.lock()
}

package datatree

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// digestPaths is txnGen's path universe for the digest tests: genPaths
// plus a quota on /a, so that stats nodes change under writes to /a.
var digestPaths = append(slices.Clone(genPaths),
	"/zookeeper/quota/a", "/zookeeper/quota/a/zookeeper_limits", "/zookeeper/quota/a/zookeeper_stats")

// checkDigest fails the test unless the incremental digest equals a full
// recomputation.
func checkDigest(t *testing.T, tree *Tree, what string) {
	t.Helper()
	if got, want := tree.Digest(), tree.ComputeDigest(); got != want {
		t.Fatalf("%s: Digest() = %#x, ComputeDigest() = %#x", what, got, want)
	}
}

// changesNothing reports whether the result says txn left the tree as it
// was: a failed write, a check, or a multi that was rolled back.
func changesNothing(txn *Txn, res *Result) bool {
	if res.Err != jute.OK || txn.Type == jute.OpCheck || txn.Type == jute.OpCreateSession {
		return true
	}
	if m, ok := res.Response.(*jute.MultiResponse); ok {
		return len(m.Results) == 0 || m.Results[0].Type == jute.OpError
	}
	return false
}

// digestStep is one random step of TestDigestRandomOps: mostly a txn of
// g, sometimes a reaper delete, a quota limit, SetConfigNode, or opening or
// writing and releasing a snapshot.
type digestStep struct {
	t    *testing.T
	tree *Tree
	g    *txnGen
	cfg  Config
	snap *Snapshot
	// at is the digest at the open snapshot's capture.
	at uint64
}

// run applies step zxid and checks the digest.
func (s *digestStep) run(zxid int64) {
	what := fmt.Sprintf("zxid %d", zxid)
	switch s.g.r.IntN(40) {
	case 0:
		s.tree.SetConfigNode(fmt.Appendf(nil, "version=%d", zxid), zxid, zxid*10)
		what += " SetConfigNode"
	case 1:
		s.toggleSnapshot()
		what += " snapshot"
	default:
		txn := s.txn()
		txn.Time = zxid * 10
		before := s.tree.Digest()
		res := s.tree.Apply(txn, zxid, nil)
		what += fmt.Sprintf(" %v %v", txn.Type, res.Err)
		if changesNothing(txn, res) && s.tree.Digest() != before {
			s.t.Fatalf("%s: a write that changed nothing changed the digest", what)
		}
	}
	checkDigest(s.t, s.tree, what)
}

// txn returns the next txn: a reaper delete, a quota limit, or g's.
func (s *digestStep) txn() *Txn {
	switch s.g.r.IntN(20) {
	case 0:
		return &Txn{Type: jute.OpDeleteContainer, Request: &jute.PathRequest{Path: s.g.path()}}
	case 1:
		limit := fmt.Sprintf("count=-1,bytes=-1=;countHardLimit=%d", s.g.r.IntN(6))
		return &Txn{Type: jute.OpSetData, Request: &jute.SetDataRequest{
			Path: "/zookeeper/quota/a/zookeeper_limits", Data: []byte(limit), Version: -1}}
	}
	return s.g.txn()
}

// toggleSnapshot opens a snapshot, or writes the open one, checks that it
// restores to a tree with the digest of its capture, and releases it.
func (s *digestStep) toggleSnapshot() {
	if s.snap == nil {
		snap, err := s.tree.Snapshot()
		if err != nil {
			s.t.Fatal(err)
		}
		s.snap, s.at = snap, s.tree.Digest()
		return
	}
	var b bytes.Buffer
	if _, err := s.snap.WriteTo(&b); err != nil {
		s.t.Fatal(err)
	}
	s.snap.Release()
	s.snap = nil
	restored, err := ReadSnapshot(&b, s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	if restored.Digest() != s.at {
		s.t.Fatalf("restored snapshot: digest %#x, at its capture %#x", restored.Digest(), s.at)
	}
	checkDigest(s.t, restored, "restored snapshot")
}

// TestDigestRandomOps applies long random sequences of every kind of write
// (creates of every mode, deletes, setData, setACL, checks, multis that
// succeed and fail, session closes, reaper deletes, quota updates,
// SetConfigNode), with a snapshot open part of the time, and checks after
// every step that the incremental digest equals a recomputation and that
// writes that change nothing leave it alone.
func TestDigestRandomOps(t *testing.T) {
	cfgs := []Config{
		{ExtendedTypesEnabled: true},
		{ExtendedTypesEnabled: true, Authorizer: testAuth{}, EnforceQuota: true},
	}
	for seed := uint64(1); seed <= 6; seed++ {
		cfg := cfgs[seed%2]
		g := newTxnGen(seed)
		g.paths = digestPaths
		s := &digestStep{t: t, tree: New(cfg), g: g, cfg: cfg}
		checkDigest(t, s.tree, "new tree")
		for zxid := int64(1); zxid <= 3000; zxid++ {
			s.run(zxid)
		}
		if s.snap != nil {
			s.toggleSnapshot()
		}
		if n := s.tree.NodeCount(); n < 10 {
			t.Errorf("seed %d: only %d nodes at the end", seed, n)
		}
	}
}

// txnPaths returns the paths a txn names; ok is false for a session close,
// which names none but reaches every subtree.
func txnPaths(txn *Txn) (paths []string, ok bool) {
	switch r := txn.Request.(type) {
	case *jute.CreateRequest:
		return []string{r.Path}, true
	case *jute.CreateTTLRequest:
		return []string{r.Path}, true
	case *jute.DeleteRequest:
		return []string{r.Path}, true
	case *jute.SetDataRequest:
		return []string{r.Path}, true
	case *jute.SetACLRequest:
		return []string{r.Path}, true
	case *jute.CheckVersionRequest:
		return []string{r.Path}, true
	case *jute.MultiRequest:
		for _, op := range r.Ops {
			p, _ := txnPaths(&Txn{Request: op.Request})
			paths = append(paths, p...)
		}
		return paths, true
	}
	return nil, false
}

// subtreeTxns returns n txns of a generator seeded with seed that touch
// nothing outside the subtree under prefix, each with its zxid (first,
// first+step, ...) and time fixed.
func subtreeTxns(seed uint64, prefix string, n int, first, step int64) []*Txn {
	g := newTxnGen(seed)
	g.paths = []string{prefix + "/a", prefix + "/b", prefix + "/a/x", prefix + "/a/y", prefix + "/b/z"}
	var out []*Txn
	for zxid := first; len(out) < n; {
		txn := g.txn()
		paths, ok := txnPaths(txn)
		if !ok || slices.ContainsFunc(paths, func(p string) bool { return !strings.HasPrefix(p, prefix+"/") }) {
			continue
		}
		txn.Time = zxid * 10
		out = append(out, txn)
		zxid += step
	}
	return out
}

// applyInterleaved applies two txn lists whose zxids are odd and even
// (after zxid 2) in a random interleaving that keeps each list's order.
func applyInterleaved(tree *Tree, r *rand.Rand, a, b []*Txn) {
	zxidOf := func(txn *Txn) int64 { return txn.Time / 10 }
	for len(a)+len(b) > 0 {
		if len(b) == 0 || (len(a) > 0 && r.IntN(2) == 0) {
			tree.Apply(a[0], zxidOf(a[0]), nil)
			a = a[1:]
		} else {
			tree.Apply(b[0], zxidOf(b[0]), nil)
			b = b[1:]
		}
	}
}

// TestDigestOrderIndependent applies the same writes to two disjoint
// subtrees in different interleavings, each write with the same zxid
// everywhere: the trees end with the same content (the snapshots are
// equal) but intern their ACL lists in different orders, under different
// ids. The digests must be equal, and equal to the restored tree's.
func TestDigestOrderIndependent(t *testing.T) {
	cfg := Config{ExtendedTypesEnabled: true}
	setup := []*Txn{
		{Type: jute.OpCreate, Time: 10, Request: &jute.CreateRequest{Path: "/p", ACL: open}},
		{Type: jute.OpCreate, Time: 20, Request: &jute.CreateRequest{Path: "/q", ACL: open}},
	}
	idsDiffer := false
	for seed := uint64(1); seed <= 8; seed++ {
		p := subtreeTxns(seed, "/p", 400, 3, 2)
		q := subtreeTxns(seed+100, "/q", 400, 4, 2)
		var trees [2]*Tree
		for i := range trees {
			trees[i] = New(cfg)
			for z, txn := range setup {
				trees[i].Apply(txn, int64(z+1), nil)
			}
			applyInterleaved(trees[i], rand.New(rand.NewPCG(seed, uint64(i))), p, q)
		}
		if !bytes.Equal(snapshotBytes(t, trees[0]), snapshotBytes(t, trees[1])) {
			t.Fatalf("seed %d: the interleavings ended in different content", seed)
		}
		if trees[0].Digest() != trees[1].Digest() {
			t.Fatalf("seed %d: equal trees, digests %#x and %#x", seed, trees[0].Digest(), trees[1].Digest())
		}
		checkDigest(t, trees[0], "interleaved")
		idsDiffer = idsDiffer || !slices.EqualFunc(trees[0].acls.lists, trees[1].acls.lists, slices.Equal)
	}
	if !idsDiffer {
		t.Error("no interleaving interned the ACL lists in another order: the test shows nothing")
	}
}

// digestBase builds the tree the field-change cases start from: /n with
// two ACL entries, data, and one child, and /e with empty data.
func digestBase(t *testing.T) (*Tree, *node) {
	h := newHarness(t, Config{})
	h.apply(jute.OpCreate, &jute.CreateRequest{Path: "/n", Data: []byte("d"), ACL: []jute.ACL{
		{Perms: jute.PermRead, ID: jute.ID{Scheme: "world", ID: "anyone"}},
		{Perms: jute.PermAll, ID: alice}}})
	h.mustCreate("/n/c")
	h.create("/e", []byte{}, jute.ModePersistent)
	h.apply(jute.OpSetData, &jute.SetDataRequest{Path: "/n", Data: []byte("d"), Version: -1})
	return h.tree, h.tree.lookup("/n")
}

// setACLOf gives n the ACL list edit returns for a copy of its own.
func setACLOf(tree *Tree, n *node, edit func([]jute.ACL) []jute.ACL) {
	n.setACL(tree.acls.intern(edit(slices.Clone(tree.acls.get(n.acl())))))
}

// TestDigestFieldChanges changes one field of one node at a time behind
// the tree's back: the recomputed digest must change every time.
func TestDigestFieldChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(tree *Tree, n *node)
	}{
		{"data", func(_ *Tree, n *node) { n.setData([]byte("e")) }},
		{"data empty", func(_ *Tree, n *node) { n.setData([]byte{}) }},
		{"data null", func(_ *Tree, n *node) { n.setData(nil) }},
		{"empty data made null", func(tree *Tree, _ *node) { tree.lookup("/e").setData(nil) }},
		{"czxid", func(_ *Tree, n *node) { n.czxid++ }},
		{"mzxid", func(_ *Tree, n *node) { n.mzxid++ }},
		{"pzxid", func(_ *Tree, n *node) { n.pzxid++ }},
		{"ctime", func(_ *Tree, n *node) { n.ctime++ }},
		{"mtime", func(_ *Tree, n *node) { n.mtime++ }},
		{"version", func(_ *Tree, n *node) { n.version++ }},
		{"cversion", func(_ *Tree, n *node) { n.cversion++ }},
		{"aversion", func(_ *Tree, n *node) { n.aversion++ }},
		{"ephemeral owner", func(_ *Tree, n *node) { n.owner = 7 }},
		{"kind", func(_ *Tree, n *node) { n.meta = n.meta&metaACLMask | uint32(kindContainer)<<metaKindShift }},
		{"acl perms", func(tree *Tree, n *node) {
			setACLOf(tree, n, func(l []jute.ACL) []jute.ACL { l[0].Perms |= jute.PermWrite; return l })
		}},
		{"acl scheme", func(tree *Tree, n *node) {
			setACLOf(tree, n, func(l []jute.ACL) []jute.ACL { l[1].ID.Scheme = "ip"; return l })
		}},
		{"acl id", func(tree *Tree, n *node) {
			setACLOf(tree, n, func(l []jute.ACL) []jute.ACL { l[1].ID = bob; return l })
		}},
		{"acl order", func(tree *Tree, n *node) {
			setACLOf(tree, n, func(l []jute.ACL) []jute.ACL { slices.Reverse(l); return l })
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree, n := digestBase(t)
			checkDigest(t, tree, "base")
			before := tree.ComputeDigest()
			tc.change(tree, n)
			if tree.ComputeDigest() == before {
				t.Errorf("changing %s left the digest at %#x", tc.name, before)
			}
		})
	}
}

// TestDigestChildCount checks that the child count is hashed: two nodes
// whose every other field is equal, one with a child, differ in their
// hashes.
func TestDigestChildCount(t *testing.T) {
	tree, n := digestBase(t)
	p := pathHash("/n")
	if tree.nodeHash(p, n) == tree.ownHash(p, n)+kidsHash(p, n, 0) {
		t.Error("the number of children does not change the node's hash")
	}
}

// TestDigestSnapshotRoundTrip checks that a restored tree has the digest
// of the tree written, including a snapshot written while writes go on.
func TestDigestSnapshotRoundTrip(t *testing.T) {
	cfg := Config{ExtendedTypesEnabled: true}
	orig := New(cfg)
	applyRandom(orig, 42, 0, 3000)
	orig.SetConfigNode([]byte("version=0"), 0, 123)
	restored, err := ReadSnapshot(bytes.NewReader(snapshotBytes(t, orig)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Digest() != orig.Digest() {
		t.Fatalf("restored digest %#x, written %#x", restored.Digest(), orig.Digest())
	}
	checkDigest(t, restored, "restored")

	snap, err := orig.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	at := orig.Digest()
	applyRandom(orig, 43, 3000, 500)
	var b bytes.Buffer
	_, err = snap.WriteTo(&b)
	snap.Release()
	if err != nil {
		t.Fatal(err)
	}
	if orig.Digest() == at {
		t.Fatal("500 writes did not change the digest")
	}
	restored, err = ReadSnapshot(&b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Digest() != at {
		t.Fatalf("restored digest %#x, at the capture %#x", restored.Digest(), at)
	}
}

// TestDigestLoader checks that a tree built by a Loader has the digest of
// the tree its nodes came from.
func TestDigestLoader(t *testing.T) {
	cfg := Config{ExtendedTypesEnabled: true}
	built := New(cfg)
	applyRandom(built, 42, 0, 3000)
	loaded, err := load(storedNodes(built), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Digest() != built.Digest() {
		t.Fatalf("loaded digest %#x, built %#x", loaded.Digest(), built.Digest())
	}
	checkDigest(t, loaded, "loaded")
}

// TestDigestFreshTrees checks that two new trees agree and that the
// digest is a function of content only, not of the process: it is pinned.
func TestDigestFreshTrees(t *testing.T) {
	a, b := New(Config{}), New(Config{ExtendedTypesEnabled: true})
	checkDigest(t, a, "new tree")
	if a.Digest() != b.Digest() {
		t.Fatalf("fresh trees: %#x and %#x", a.Digest(), b.Digest())
	}
	checkGolden(t, "testdata/fresh.digest", fmt.Appendf(nil, "%#016x\n", a.Digest()))
}

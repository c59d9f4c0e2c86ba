package datatree

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// txnGen produces a reproducible stream of random writes over a small path
// universe, so that creates, deletes, conflicts and failures all happen.
type txnGen struct {
	r     *rand.Rand
	paths []string
}

func newTxnGen(seed uint64) *txnGen {
	return &txnGen{r: rand.New(rand.NewPCG(seed, 99)), paths: genPaths}
}

var genPaths = []string{"/a", "/b", "/a/x", "/a/y", "/b/x", "/a/x/1", "/a/x/2", "/c", "/c/z", "/é"}

func (g *txnGen) path() string {
	if g.r.IntN(20) == 0 {
		return []string{"/", "/zookeeper", "/zookeeper/quota/q", "bad", "/a/", "/a/x/"}[g.r.IntN(6)]
	}
	return g.paths[g.r.IntN(len(g.paths))]
}

func (g *txnGen) data() []byte {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	return fmt.Appendf(nil, "data-%d", g.r.IntN(1000))
}

func (g *txnGen) acl() []jute.ACL {
	switch g.r.IntN(5) {
	case 0:
		return []jute.ACL{aclEntry(jute.PermAll, "digest", fmt.Sprintf("u%d:h", g.r.IntN(3)))}
	case 1:
		return jute.ReadACLUnsafe
	case 2:
		return nil
	}
	return open
}

func (g *txnGen) version() int32 { return int32(g.r.IntN(4)) - 1 }

func (g *txnGen) op() (jute.OpCode, jute.Record) {
	switch g.r.IntN(10) {
	case 0, 1, 2:
		return jute.OpCreate, &jute.CreateRequest{Path: g.path(), Data: g.data(), ACL: g.acl(), Flags: jute.CreateMode(g.r.IntN(5))}
	case 3:
		return jute.OpCreateContainer, &jute.CreateRequest{Path: g.path(), Data: g.data(), ACL: open}
	case 4:
		return jute.OpCreateTTL, &jute.CreateTTLRequest{Path: g.path(), Data: g.data(), ACL: open, Flags: 5 + jute.CreateMode(g.r.IntN(2)), TTL: int64(g.r.IntN(10000))}
	case 5, 6:
		return jute.OpDelete, &jute.DeleteRequest{Path: g.path(), Version: g.version()}
	case 7:
		return jute.OpSetData, &jute.SetDataRequest{Path: g.path(), Data: g.data(), Version: g.version()}
	case 8:
		return jute.OpSetACL, &jute.SetACLRequest{Path: g.path(), ACL: g.acl(), Version: g.version()}
	}
	return jute.OpCheck, &jute.CheckVersionRequest{Path: g.path(), Version: g.version()}
}

func (g *txnGen) txn() *Txn {
	txn := &Txn{SessionID: int64(g.r.IntN(3) + 1), IDs: []jute.ID{{Scheme: "digest", ID: "u1:h"}}}
	switch g.r.IntN(12) {
	case 0:
		txn.Type = jute.OpCloseSession
	case 1, 2:
		txn.Type = jute.OpMulti
		req := &jute.MultiRequest{}
		for n := g.r.IntN(5); n > 0; n-- {
			op, body := g.op()
			if op == jute.OpSetACL {
				op, body = jute.OpCheck, &jute.CheckVersionRequest{Path: g.path(), Version: -1}
			}
			req.Ops = append(req.Ops, jute.MultiOp{Type: op, Request: body})
		}
		txn.Request = req
	default:
		txn.Type, txn.Request = g.op()
	}
	return txn
}

// applyRandom applies n generated txns starting after zxid start and returns
// the encoded results.
func applyRandom(tree *Tree, seed uint64, start int64, n int) []byte {
	g := newTxnGen(seed)
	var out bytes.Buffer
	for i := int64(1); i <= int64(n); i++ {
		txn := g.txn()
		txn.Time = (start + i) * 10
		res := tree.Apply(txn, start+i, nil)
		fmt.Fprintf(&out, "%d %v %v\n", start+i, res.Err, res.Events)
		if res.Response != nil {
			out.Write(jute.Encode(res.Response))
		}
	}
	return out.Bytes()
}

func snapshotBytes(t testing.TB, tree *Tree) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tree.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDeterminism(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := Config{ExtendedTypesEnabled: true, Authorizer: testAuth{}}
		if seed%2 == 0 {
			cfg = Config{ExtendedTypesEnabled: true}
		}
		a, b := New(cfg), New(cfg)
		ra := applyRandom(a, seed, 0, 2000)
		rb := applyRandom(b, seed, 0, 2000)
		if !bytes.Equal(ra, rb) {
			t.Fatalf("seed %d: results differ", seed)
		}
		sa, sb := snapshotBytes(t, a), snapshotBytes(t, b)
		if !bytes.Equal(sa, sb) {
			t.Fatalf("seed %d: snapshots differ", seed)
		}
		if a.NodeCount() < 8 {
			t.Errorf("seed %d: generator built only %d nodes", seed, a.NodeCount())
		}
	}
}

// treeView renders everything a client or the server can observe.
func treeView(t *Tree) string {
	var b bytes.Buffer
	paths := make([]string, 0, t.NodeCount())
	for p := range allNodes(t) {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		data, st, _ := t.GetData(p, nil, nil)
		kids, _, _ := t.GetChildren(p, nil, nil)
		slices.Sort(kids)
		acl, _, _ := t.GetACL(p, nil)
		n, _ := t.GetAllChildrenNumber(p, nil)
		fmt.Fprintf(&b, "%s %q %v %+v %v %v %d\n", p, data, data == nil, st, kids, acl, n)
	}
	for s := int64(0); s < 5; s++ {
		fmt.Fprintf(&b, "session %d: %v\n", s, t.SessionEphemerals(s))
	}
	fmt.Fprintf(&b, "%d %d %d %d %d\n", t.NodeCount(), t.EphemeralCount(), t.ApproximateDataSize(), len(t.containers), len(t.ttls))
	return b.String()
}

func TestSnapshotRoundTrip(t *testing.T) {
	cfg := Config{ExtendedTypesEnabled: true}
	orig := New(cfg)
	applyRandom(orig, 42, 0, 3000)
	orig.SetConfigNode([]byte("version=0"), 0, 123)
	snap := snapshotBytes(t, orig)

	restored, err := ReadSnapshot(bytes.NewReader(snap), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if again := snapshotBytes(t, restored); !bytes.Equal(again, snap) {
		t.Fatal("write-read-write changed the bytes")
	}
	if treeView(restored) != treeView(orig) {
		t.Fatalf("reads differ:\n%s\nvs\n%s", treeView(restored), treeView(orig))
	}
	// Derived state (indexes, counters, descendant counts, stored
	// cversions) must behave the same from here on.
	ra := applyRandom(orig, 43, 3000, 2000)
	rb := applyRandom(restored, 43, 3000, 2000)
	if !bytes.Equal(ra, rb) {
		t.Fatal("results after restore differ")
	}
	if !bytes.Equal(snapshotBytes(t, orig), snapshotBytes(t, restored)) {
		t.Fatal("snapshots after restore differ")
	}
}

func TestSnapshotFreshTreeGolden(t *testing.T) {
	// Stable format: a fresh tree's snapshot is pinned in testdata.
	got := snapshotBytes(t, New(Config{}))
	checkGolden(t, "testdata/fresh.snap.hex", []byte(hexDump(got)))
}

// TestSnapshotV1Golden reads version 1 streams written by the previous
// build: a fresh tree, and a tree built by 3000 random txns (seed 42, as in
// TestSnapshotRoundTrip) whose client-visible view that build recorded.
func TestSnapshotV1Golden(t *testing.T) {
	cfg := Config{ExtendedTypesEnabled: true}
	fresh, err := ReadSnapshot(bytes.NewReader(readHexFile(t, "testdata/fresh_v1.snap.hex")), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, fresh), snapshotBytes(t, New(cfg))) {
		t.Error("fresh tree from version 1 differs")
	}
	restored, err := ReadSnapshot(bytes.NewReader(readHexFile(t, "testdata/random_v1.snap.hex")), cfg)
	if err != nil {
		t.Fatal(err)
	}
	view, err := os.ReadFile("testdata/random_v1.view")
	if err != nil {
		t.Fatal(err)
	}
	if got := treeView(restored); got != string(view) {
		t.Errorf("view of the version 1 tree:\n%s\nwant\n%s", got, view)
	}
	built := New(cfg)
	applyRandom(built, 42, 0, 3000)
	built.SetConfigNode([]byte("version=0"), 0, 123)
	if !bytes.Equal(snapshotBytes(t, restored), snapshotBytes(t, built)) {
		t.Error("version 1 tree and the tree built by the same txns write different snapshots")
	}
	if !bytes.Equal(applyRandom(restored, 43, 3000, 500), applyRandom(built, 43, 3000, 500)) {
		t.Error("results after reading version 1 differ")
	}
}

// readHexFile reads a file written by hexDump.
func readHexFile(t *testing.T, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(text)), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hexDump(b []byte) string {
	var out bytes.Buffer
	for len(b) > 0 {
		n := min(32, len(b))
		out.WriteString(hexString(b[:n]))
		out.WriteByte('\n')
		b = b[n:]
	}
	return out.String()
}

// TestSnapshotEmbedded reads a snapshot followed by other data from a
// bufio.Reader and checks nothing past the snapshot was consumed.
func TestSnapshotEmbedded(t *testing.T) {
	tree := New(Config{})
	applyRandom(tree, 7, 0, 300)
	var stream bytes.Buffer
	if err := tree.WriteSnapshot(&stream); err != nil {
		t.Fatal(err)
	}
	stream.WriteString("TRAILER")
	br := bufio.NewReader(&stream)
	if _, err := ReadSnapshot(br, Config{}); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "TRAILER" {
		t.Fatalf("rest = %q", rest)
	}
}

func TestSnapshotCorrupt(t *testing.T) {
	tree := New(Config{ExtendedTypesEnabled: true})
	applyRandom(tree, 3, 0, 500)
	snap := snapshotBytes(t, tree)
	// Every truncation fails.
	for n := 0; n < len(snap); n++ {
		if _, err := ReadSnapshot(bytes.NewReader(snap[:n]), Config{}); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("truncated at %d: err %v", n, err)
		}
	}
	// Every single-bit flip fails (the checksum covers everything).
	for i := 0; i < len(snap); i++ {
		bad := slices.Clone(snap)
		bad[i] ^= 1 << (i % 8)
		if _, err := ReadSnapshot(bytes.NewReader(bad), Config{}); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("flip at %d: err %v", i, err)
		}
	}
}

// v1Rec is one node of a hand-built version 1 stream.
type v1Rec struct {
	path  string
	kind  nodeKind
	owner int64
	acl   uint32
}

// encodeV1 builds a well-checksummed version 1 stream, as earlier builds
// and zkimport write it.
func encodeV1(lists [][]jute.ACL, nodes []v1Rec) []byte {
	var b bytes.Buffer
	s := newSnapWriter(&b)
	s.buf = append(s.buf, snapshotMagic[:]...)
	s.u32(snapshotV1)
	s.u32(uint32(len(lists)))
	for _, l := range lists {
		s.aclList(l)
	}
	s.u64(uint64(len(nodes)))
	for _, r := range nodes {
		writeTestNode(s, r.path, r.owner, r.kind)
		s.u32(r.acl)
	}
	s.finish()
	return b.Bytes()
}

// TestSnapshotV1StructuralChecks builds well-checksummed version 1
// snapshots that break one invariant each.
func TestSnapshotV1StructuralChecks(t *testing.T) {
	system := []v1Rec{{path: "/"}, {path: "/zookeeper"}, {path: "/zookeeper/config"}, {path: "/zookeeper/quota"}}
	with := func(extra ...v1Rec) []v1Rec {
		out := append(slices.Clone(system), extra...)
		slices.SortStableFunc(out, func(a, b v1Rec) int { return strings.Compare(a.path, b.path) })
		return out
	}
	lists := [][]jute.ACL{open}
	if _, err := ReadSnapshot(bytes.NewReader(encodeV1(lists, system)), Config{}); err != nil {
		t.Fatalf("valid minimal snapshot: %v", err)
	}
	tests := []struct {
		name  string
		lists [][]jute.ACL
		nodes []v1Rec
	}{
		{"missing system node", lists, system[:3]},
		{"no root", lists, system[1:]},
		{"out of order", lists, []v1Rec{system[0], system[2], system[1], system[3]}},
		{"duplicate", lists, with(v1Rec{path: "/zookeeper/quota"})},
		{"orphan", lists, with(v1Rec{path: "/x/y"})},
		{"invalid path", lists, with(v1Rec{path: "/zookeeper/quota/."})},
		{"child of ephemeral", lists, with(v1Rec{path: "/e", kind: kindEphemeral, owner: 5}, v1Rec{path: "/e/c"})},
		{"acl index", lists, with(v1Rec{path: "/x", acl: 1})},
		{"empty acl list", [][]jute.ACL{open, {}}, system},
		{"persistent with owner", lists, with(v1Rec{path: "/x", owner: 5})},
		{"ephemeral without owner", lists, with(v1Rec{path: "/x", kind: kindEphemeral})},
		{"container owner", lists, with(v1Rec{path: "/x", kind: kindContainer, owner: 5})},
		{"ttl owner", lists, with(v1Rec{path: "/x", kind: kindTTL, owner: jute.TTLOwnerMask})},
		{"unknown kind", lists, with(v1Rec{path: "/x", kind: numKinds})},
		{"ephemeral system node", lists, []v1Rec{system[0], system[1], {path: "/zookeeper/config", kind: kindEphemeral, owner: 1}, system[3]}},
	}
	for _, tt := range tests {
		if _, err := ReadSnapshot(bytes.NewReader(encodeV1(tt.lists, tt.nodes)), Config{}); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: err %v", tt.name, err)
		}
	}
	// Unused and duplicate ACL lists are accepted and dropped.
	tree, err := ReadSnapshot(bytes.NewReader(encodeV1([][]jute.ACL{open, aliceA, open}, with(v1Rec{path: "/x", acl: 2}))), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tree.acls.size() != 1 {
		t.Errorf("ACL cache size %d", tree.acls.size())
	}
}

// v2Rec is one node of a hand-built version 2 stream, in stream order.
type v2Rec struct {
	name  string
	kids  uint32
	kind  nodeKind
	owner int64
	acl   uint32
	list  []jute.ACL // the ACL list, when this record introduces it
}

// writeTestNode writes the part of a node record both versions share: its
// name or path, empty data and a stat whose last byte is kind (any byte,
// even an unknown kind).
func writeTestNode(s *snapWriter, name string, owner int64, kind nodeKind) {
	s.str(name)
	s.bytes([]byte{})
	s.stat(&node{owner: owner})
	s.buf[len(s.buf)-1] = byte(kind)
}

// encodeV2 builds a well-checksummed version 2 stream claiming count
// nodes.
func encodeV2(count uint64, nodes []v2Rec) []byte {
	var b bytes.Buffer
	s := newSnapWriter(&b)
	s.header(count)
	for _, r := range nodes {
		writeTestNode(s, r.name, r.owner, r.kind)
		s.u32(r.kids)
		s.u32(r.acl)
		if r.list != nil {
			s.aclList(r.list)
		}
	}
	s.finish()
	return b.Bytes()
}

// TestSnapshotV2StructuralChecks builds well-checksummed version 2
// snapshots that break one invariant each.
func TestSnapshotV2StructuralChecks(t *testing.T) {
	// "/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota".
	minimal := func(rootKids uint32, extra ...v2Rec) []v2Rec {
		out := []v2Rec{{name: "", kids: rootKids, list: open}}
		return append(append(out, v2Rec{name: "zookeeper", kids: 2}, v2Rec{name: "config"}, v2Rec{name: "quota"}), extra...)
	}
	valid := minimal(1)
	if _, err := ReadSnapshot(bytes.NewReader(encodeV2(4, valid)), Config{}); err != nil {
		t.Fatalf("valid minimal snapshot: %v", err)
	}
	if _, err := ReadSnapshot(bytes.NewReader(encodeV2(5, minimal(2, v2Rec{name: "zz", acl: 1, list: aliceA}))), Config{}); err != nil {
		t.Fatalf("valid snapshot with a second ACL: %v", err)
	}
	swapped := minimal(1)
	swapped[2], swapped[3] = swapped[3], swapped[2]
	tests := []struct {
		name  string
		count uint64
		nodes []v2Rec
	}{
		{"count too high", 5, valid},
		{"count too low", 3, valid},
		{"children missing", 5, minimal(2)},
		{"extra node after the tree", 5, append(minimal(1), v2Rec{name: "x"})},
		{"named root", 4, append([]v2Rec{{name: "r", kids: 1, list: open}}, valid[1:]...)},
		{"out of order", 4, swapped},
		{"duplicate", 5, []v2Rec{valid[0], {name: "zookeeper", kids: 3}, {name: "config"}, {name: "quota"}, {name: "quota"}}},
		{"invalid name", 5, minimal(2, v2Rec{name: "."})},
		{"name with slash", 5, minimal(2, v2Rec{name: "zz/a"})},
		{"empty name", 5, minimal(2, v2Rec{name: ""})},
		{"child of ephemeral", 6, minimal(2, v2Rec{name: "zz", kids: 1, kind: kindEphemeral, owner: 5}, v2Rec{name: "c"})},
		{"acl index", 5, minimal(2, v2Rec{name: "zz", acl: 2})},
		{"empty acl list", 5, minimal(2, v2Rec{name: "zz", acl: 1, list: []jute.ACL{}})},
		{"persistent with owner", 5, minimal(2, v2Rec{name: "zz", owner: 5})},
		{"ephemeral without owner", 5, minimal(2, v2Rec{name: "zz", kind: kindEphemeral})},
		{"unknown kind", 5, minimal(2, v2Rec{name: "zz", kind: numKinds})},
		{"missing system node", 3, []v2Rec{valid[0], {name: "zookeeper", kids: 1}, {name: "config"}}},
		{"ephemeral system node", 4, []v2Rec{valid[0], valid[1], {name: "config", kind: kindEphemeral, owner: 1}, valid[3]}},
		{"ephemeral root", 1, []v2Rec{{name: "", kind: kindEphemeral, owner: 1, list: open}}},
		{"empty", 0, nil},
	}
	for _, tt := range tests {
		if _, err := ReadSnapshot(bytes.NewReader(encodeV2(tt.count, tt.nodes)), Config{}); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: err %v", tt.name, err)
		}
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteSnapshotError(t *testing.T) {
	tree := New(Config{})
	if err := tree.WriteSnapshot(&failWriter{n: 10}); err == nil {
		t.Fatal("no error")
	}
}

func FuzzReadSnapshot(f *testing.F) {
	tree := New(Config{ExtendedTypesEnabled: true})
	applyRandom(tree, 5, 0, 100)
	valid := snapshotBytes(f, tree)
	f.Add(valid)
	f.Add(snapshotBytes(f, New(Config{})))
	f.Add(valid[:len(valid)/2])
	f.Add([]byte("zkdtree\x00\x00\x00\x00\x01\xff\xff\xff\xff"))
	f.Add(encodeV1([][]jute.ACL{open}, []v1Rec{{path: "/"}, {path: "/zookeeper"}, {path: "/zookeeper/config"}, {path: "/zookeeper/quota"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ReadSnapshot(bytes.NewReader(b), Config{})
		if err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("error does not wrap ErrBadSnapshot: %v", err)
			}
			return
		}
		// Whatever loads must round-trip from then on.
		out := snapshotBytes(t, got)
		again, err := ReadSnapshot(bytes.NewReader(out), Config{})
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if !bytes.Equal(snapshotBytes(t, again), out) {
			t.Fatalf("accepted snapshot does not round-trip")
		}
	})
}

// TestSnapshotLargeDirectories round-trips directories large enough to
// have their child sets built on the reader's builder goroutine, nested
// and side by side, and checks that damaged streams still fail cleanly.
func TestSnapshotLargeDirectories(t *testing.T) {
	h := newHarness(t, Config{ExtendedTypesEnabled: true})
	for _, dir := range []string{"/big", "/big/inner", "/other"} {
		h.mustCreate(dir)
	}
	for i := 0; i < 3*buildAsync; i++ {
		h.create(fmt.Sprintf("/big/n%d", i), []byte{byte(i)}, jute.ModePersistent)
		if i%3 == 0 {
			h.create(fmt.Sprintf("/big/inner/e%d", i), nil, jute.ModeEphemeral)
		}
		if i < buildAsync+5 {
			h.create(fmt.Sprintf("/other/x%d", i), nil, jute.ModePersistent)
		}
	}
	snap := h.snapshot()
	got, err := ReadSnapshot(bytes.NewReader(snap), Config{ExtendedTypesEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if treeView(got) != treeView(h.tree) {
		t.Fatal("restored tree reads differently")
	}
	if !bytes.Equal(snapshotBytes(t, got), snap) {
		t.Fatal("restored tree writes a different snapshot")
	}
	for _, n := range []int{len(snap) / 3, len(snap) / 2, len(snap) - 5} {
		if _, err := ReadSnapshot(bytes.NewReader(snap[:n]), Config{}); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("truncated at %d: %v", n, err)
		}
	}
}

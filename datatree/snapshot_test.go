package datatree

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
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

// streamRec is one node of a hand-built stream, in stream order.
type streamRec struct {
	name  string
	kids  uint32
	kind  nodeKind
	owner int64
	acl   uint32
	list  []jute.ACL // the ACL list, when this record introduces it
}

// writeTestNode writes the start of a node record: its name, empty data and a stat whose last byte is kind (any byte,
// even an unknown kind).
func writeTestNode(s *snapWriter, name string, owner int64, kind nodeKind) {
	s.str(name)
	s.bytes([]byte{})
	s.stat(&node{owner: owner})
	s.buf[len(s.buf)-1] = byte(kind)
}

// encodeStream builds a well-checksummed version 2 stream claiming count
// nodes.
func encodeStream(count uint64, nodes []streamRec) []byte {
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

// TestSnapshotStructuralChecks builds well-checksummed
// snapshots that break one invariant each.
func TestSnapshotStructuralChecks(t *testing.T) {
	// "/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota".
	minimal := func(rootKids uint32, extra ...streamRec) []streamRec {
		out := []streamRec{{name: "", kids: rootKids, list: open}}
		return append(append(out, streamRec{name: "zookeeper", kids: 2}, streamRec{name: "config"}, streamRec{name: "quota"}), extra...)
	}
	valid := minimal(1)
	if _, err := ReadSnapshot(bytes.NewReader(encodeStream(4, valid)), Config{}); err != nil {
		t.Fatalf("valid minimal snapshot: %v", err)
	}
	if _, err := ReadSnapshot(bytes.NewReader(encodeStream(5, minimal(2, streamRec{name: "zz", acl: 1, list: aliceA}))), Config{}); err != nil {
		t.Fatalf("valid snapshot with a second ACL: %v", err)
	}
	swapped := minimal(1)
	swapped[2], swapped[3] = swapped[3], swapped[2]
	tests := []struct {
		name  string
		count uint64
		nodes []streamRec
	}{
		{"count too high", 5, valid},
		{"count too low", 3, valid},
		{"children missing", 5, minimal(2)},
		{"extra node after the tree", 5, append(minimal(1), streamRec{name: "x"})},
		{"named root", 4, append([]streamRec{{name: "r", kids: 1, list: open}}, valid[1:]...)},
		{"out of order", 4, swapped},
		{"duplicate", 5, []streamRec{valid[0], {name: "zookeeper", kids: 3}, {name: "config"}, {name: "quota"}, {name: "quota"}}},
		{"invalid name", 5, minimal(2, streamRec{name: "."})},
		{"name with slash", 5, minimal(2, streamRec{name: "zz/a"})},
		{"empty name", 5, minimal(2, streamRec{name: ""})},
		{"child of ephemeral", 6, minimal(2, streamRec{name: "zz", kids: 1, kind: kindEphemeral, owner: 5}, streamRec{name: "c"})},
		{"acl index", 5, minimal(2, streamRec{name: "zz", acl: 2})},
		{"empty acl list", 5, minimal(2, streamRec{name: "zz", acl: 1, list: []jute.ACL{}})},
		{"persistent with owner", 5, minimal(2, streamRec{name: "zz", owner: 5})},
		{"ephemeral without owner", 5, minimal(2, streamRec{name: "zz", kind: kindEphemeral})},
		{"unknown kind", 5, minimal(2, streamRec{name: "zz", kind: numKinds})},
		{"missing system node", 3, []streamRec{valid[0], {name: "zookeeper", kids: 1}, {name: "config"}}},
		{"ephemeral system node", 4, []streamRec{valid[0], valid[1], {name: "config", kind: kindEphemeral, owner: 1}, valid[3]}},
		{"ephemeral root", 1, []streamRec{{name: "", kind: kindEphemeral, owner: 1, list: open}}},
		{"empty", 0, nil},
	}
	for _, tt := range tests {
		if _, err := ReadSnapshot(bytes.NewReader(encodeStream(tt.count, tt.nodes)), Config{}); !errors.Is(err, ErrBadSnapshot) {
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

package datatree

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// txnGen produces a reproducible stream of random writes over a small path
// universe, so that creates, deletes, conflicts and failures all happen.
type txnGen struct {
	r *rand.Rand
}

func newTxnGen(seed uint64) *txnGen { return &txnGen{r: rand.New(rand.NewPCG(seed, 99))} }

var genPaths = []string{"/a", "/b", "/a/x", "/a/y", "/b/x", "/a/x/1", "/a/x/2", "/c", "/c/z", "/é"}

func (g *txnGen) path() string {
	if g.r.IntN(20) == 0 {
		return []string{"/", "/zookeeper", "/zookeeper/quota/q", "bad", "/a/", "/a/x/"}[g.r.IntN(6)]
	}
	return genPaths[g.r.IntN(len(genPaths))]
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
	paths := make([]string, 0, len(t.nodes))
	for p := range t.nodes {
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

// TestSnapshotStructuralChecks builds well-checksummed snapshots that break
// one invariant each.
func TestSnapshotStructuralChecks(t *testing.T) {
	type rec struct {
		path  string
		kind  nodeKind
		owner int64
		acl   uint32
	}
	system := []rec{{path: "/"}, {path: "/zookeeper"}, {path: "/zookeeper/config"}, {path: "/zookeeper/quota"}}
	build := func(lists [][]jute.ACL, nodes []rec) []byte {
		var b bytes.Buffer
		s := &snapWriter{w: bufio.NewWriter(&b), crc: newCRC()}
		s.buf = append(s.buf, snapshotMagic[:]...)
		s.u32(snapshotVersion)
		s.u32(uint32(len(lists)))
		for _, l := range lists {
			writeACLList(s, l)
		}
		s.u64(uint64(len(nodes)))
		for _, r := range nodes {
			writeNode(s, &node{path: r.path, kind: r.kind, owner: r.owner}, r.acl)
		}
		s.flushBuf()
		var sum [4]byte
		sum[0], sum[1], sum[2], sum[3] = byte(s.crc.Sum32()>>24), byte(s.crc.Sum32()>>16), byte(s.crc.Sum32()>>8), byte(s.crc.Sum32())
		s.w.Write(sum[:])
		s.w.Flush()
		return b.Bytes()
	}
	with := func(extra ...rec) []rec {
		out := append(slices.Clone(system), extra...)
		slices.SortStableFunc(out, func(a, b rec) int { return strings.Compare(a.path, b.path) })
		return out
	}
	lists := [][]jute.ACL{open}
	if _, err := ReadSnapshot(bytes.NewReader(build(lists, system)), Config{}); err != nil {
		t.Fatalf("valid minimal snapshot: %v", err)
	}
	tests := []struct {
		name  string
		lists [][]jute.ACL
		nodes []rec
	}{
		{"missing system node", lists, system[:3]},
		{"no root", lists, system[1:]},
		{"out of order", lists, []rec{system[0], system[2], system[1], system[3]}},
		{"duplicate", lists, with(rec{path: "/zookeeper/quota"})},
		{"orphan", lists, with(rec{path: "/x/y"})},
		{"invalid path", lists, with(rec{path: "/zookeeper/quota/."})},
		{"child of ephemeral", lists, with(rec{path: "/e", kind: kindEphemeral, owner: 5}, rec{path: "/e/c"})},
		{"acl index", lists, with(rec{path: "/x", acl: 1})},
		{"empty acl list", [][]jute.ACL{open, {}}, system},
		{"persistent with owner", lists, with(rec{path: "/x", owner: 5})},
		{"ephemeral without owner", lists, with(rec{path: "/x", kind: kindEphemeral})},
		{"container owner", lists, with(rec{path: "/x", kind: kindContainer, owner: 5})},
		{"ttl owner", lists, with(rec{path: "/x", kind: kindTTL, owner: jute.TTLOwnerMask})},
		{"unknown kind", lists, with(rec{path: "/x", kind: numKinds})},
		{"ephemeral system node", lists, []rec{system[0], system[1], {path: "/zookeeper/config", kind: kindEphemeral, owner: 1}, system[3]}},
	}
	for _, tt := range tests {
		if _, err := ReadSnapshot(bytes.NewReader(build(tt.lists, tt.nodes)), Config{}); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: err %v", tt.name, err)
		}
	}
	// Unused and duplicate ACL lists are accepted and dropped.
	tree, err := ReadSnapshot(bytes.NewReader(build([][]jute.ACL{open, aliceA, open}, with(rec{path: "/x", acl: 2}))), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tree.acls.size() != 1 {
		t.Errorf("ACL cache size %d", tree.acls.size())
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

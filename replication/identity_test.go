package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Every member of an ensemble learns the identity its first leader
// proposed, keeps it across a restart before replaying anything, and a
// member of another ensemble is refused on the election port (raft's
// port runs the same hello).
func TestEnsembleIdentity(t *testing.T) {
	a := newTestCluster(t, 3)
	b := newTestCluster(t, 3)
	idA, idB := a.nodes[0].Ensemble(), b.nodes[0].Ensemble()
	if idA.IsZero() || idA == idB {
		t.Fatalf("ensembles %s and %s: want two distinct ids", idA, idB)
	}
	follower := (a.leader() + 1) % 3
	a.nodes[follower].Close()
	a.start(follower)
	if got := a.nodes[follower].Ensemble(); got != idA {
		t.Fatalf("after a restart member %d knows ensemble %s before replaying, want %s", follower+1, got, idA)
	}
	st, err := a.nodes[0].probe(a.peers[1])
	if err != nil || st.Ensemble != idA || st.ServerID != 2 || !st.HasState {
		t.Fatalf("probe within the ensemble = %+v, %v", st, err)
	}
	if _, err := a.nodes[0].probe(b.peers[1]); !errors.Is(err, ErrForeignEnsemble) {
		t.Fatalf("probe of another ensemble's member: %v, want ErrForeignEnsemble", err)
	}
}

// A snapshot records the ensemble and the tree's digest; a member of
// another ensemble refuses to restore it, and so does any member when
// the tree does not match the digest.
func TestSnapshotIdentityAndDigest(t *testing.T) {
	f := newTestFSM()
	id := txnlog.NewEnsembleID()
	f.learnIdentity(id, "test")
	stream := persistSnapshot(t, f)
	g := newTestFSM()
	if err := g.Restore(nopCloser(stream)); err != nil || g.ensemble != id {
		t.Fatalf("restore: %v, ensemble %s, want %s", err, g.ensemble, id)
	}
	other := newTestFSM()
	other.ident.id = txnlog.NewEnsembleID()
	if err := other.Restore(nopCloser(stream)); !errors.Is(err, ErrForeignEnsemble) {
		t.Fatalf("restore into another ensemble's member: %v, want ErrForeignEnsemble", err)
	}
	bad := append([]byte(nil), stream...)
	bad[44] ^= 1 // the recorded digest
	if err := newTestFSM().Restore(nopCloser(bad)); !errors.Is(err, errDigestMismatch) {
		t.Fatalf("restore with a wrong digest: %v, want errDigestMismatch", err)
	}
}

// Members record their digests at the same checkpoints and agree.
func TestDigestCheckpointsAgree(t *testing.T) {
	c := newTestClusterWith(t, 3, func(cfg *Config) { cfg.DigestInterval = 100 * time.Millisecond })
	for i := range 20 {
		submitRetrying(t, c.nodes[i%3], createTxn(fmt.Sprintf("/d%d", i)))
	}
	var common []DigestRecord
	testutil.Eventually(t, 15*time.Second, "a checkpoint compared on every member", func() bool {
		common = commonRecords(c.nodes)
		return len(common) > 0 && common[len(common)-1].Zxid == c.nodes[c.leader()].LastZxid()
	})
	for _, n := range c.nodes {
		if n.Fenced() != nil || n.DigestMismatches() != 0 {
			t.Fatalf("member %d fenced (%v) with %d mismatches", n.cfg.ServerID, n.Fenced(), n.DigestMismatches())
		}
	}
	if want := c.nodes[0].Tree().ComputeDigest(); common[len(common)-1].Digest != want {
		t.Fatalf("the last checkpoint's digest %016x is not the tree's %016x", common[len(common)-1].Digest, want)
	}
}

// commonRecords returns the records every member holds, checking that
// members agree on each.
func commonRecords(nodes []*Node) []DigestRecord {
	var out []DigestRecord
	for _, r := range nodes[0].Digests() {
		everywhere := true
		for _, n := range nodes[1:] {
			own, ok := n.digests.find(r.Index)
			everywhere = everywhere && ok && own == r
		}
		if everywhere {
			out = append(out, r)
		}
	}
	return out
}

// An ensemble member that starts empty does not bootstrap while a listed
// member does not answer; once every member answers empty, they found
// the ensemble together.
func TestEmptyMemberWaitsForEveryMember(t *testing.T) {
	c := &testCluster{t: t}
	for i := 1; i <= 3; i++ {
		c.peers = append(c.peers, Peer{ID: int64(i), RaftAddr: freeAddr(t), ForwardAddr: freeAddr(t)})
		c.dirs = append(c.dirs, t.TempDir())
	}
	c.nodes = make([]*Node, 3)
	t.Cleanup(func() { c.closeAll() })
	c.start(0)
	c.start(1)
	time.Sleep(3 * discoverInterval)
	for _, n := range c.nodes[:2] {
		if n.raft.LastIndex() != 0 {
			t.Fatalf("member %d bootstrapped while member 3 did not answer", n.cfg.ServerID)
		}
	}
	c.start(2)
	c.waitReady()
	if o := submitRetrying(t, c.nodes[0], createTxn("/founded")); o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("write to the new ensemble: %+v", o)
	}
}

// A standalone server's data directory, restarted with server lines,
// grows into the ensemble: the empty members join it, and every member
// serves its data.
func TestStandaloneDataGrowsIntoEnsemble(t *testing.T) {
	dir := t.TempDir()
	solo, err := Open(Config{ServerID: 1, DataDir: dir, ForceSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := solo.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if o := await(t, solo.Submit(createTxn(fmt.Sprintf("/seed%d", i)))); o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("standalone write: %+v", o)
		}
	}
	testutil.Eventually(t, 10*time.Second, "the standalone identity", func() bool { return !solo.Ensemble().IsZero() })
	id := solo.Ensemble()
	solo.Close()

	c := &testCluster{t: t}
	for i := 1; i <= 3; i++ {
		c.peers = append(c.peers, Peer{ID: int64(i), RaftAddr: freeAddr(t), ForwardAddr: freeAddr(t)})
		c.dirs = append(c.dirs, t.TempDir())
	}
	c.dirs[0] = dir
	c.nodes = make([]*Node, 3)
	c.cfgHook = func(cfg *Config, _ *seams) { cfg.Logger = testutil.Logger(t, slog.LevelInfo) }
	t.Cleanup(func() { c.closeAll() })
	for _, i := range []int{2, 1, 0} { // the empty members first
		c.start(i)
	}
	c.waitReady()
	testutil.Eventually(t, 30*time.Second, "every member a voter with the seed's data", func() bool {
		m := c.nodes[0].Membership()
		for _, n := range c.nodes {
			if !hasNode(n, "/seed4") || n.Ensemble() != id {
				return false
			}
		}
		return m.Followers == 2 && m.Observers == 0
	})
}

// A member whose log was damaged on disk refuses to start. (raft-boltdb
// keeps no checksums of its own; raft-wal truncates a damaged tail as a
// torn write when it opens, and the check here covers its sealed
// segments.)
func TestDamagedLogRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{ServerID: 1, DataDir: dir, ForceSync: true, LogStore: "boltdb"}
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	marker := []byte("FLIP-ME-0123456789")
	txn := createTxn("/damaged")
	txn.Tree.Request.(*jute.CreateRequest).Data = marker
	if o := await(t, n.Submit(txn)); o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("write: %+v", o)
	}
	n.Close()
	if !flipIn(t, filepath.Join(dir, "raft"), marker) {
		t.Fatal("the marker was not found in the log's files")
	}
	if n, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "is damaged") {
		if n != nil {
			n.Close()
		}
		t.Fatalf("Open of a damaged log: %v, want a refusal naming the damaged entry", err)
	}
}

// flipIn flips one bit of marker's first occurrence in the files of dir.
func flipIn(t *testing.T, dir string, marker []byte) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil || e.IsDir() {
			continue
		}
		if i := strings.Index(string(b), string(marker)); i >= 0 {
			b[i+4] ^= 0x20
			writeFile(t, path, b)
			return true
		}
	}
	return false
}

func nopCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// FuzzDecodeHello and FuzzDecodeMemberStatus: a peer's bytes are decoded
// or refused, never a panic, and what decodes encodes back the same.
func FuzzDecodeHello(f *testing.F) {
	f.Add(hello{serverID: 3, ensemble: txnlog.NewEnsembleID()}.encode())
	f.Add(make([]byte, helloSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != helloSize {
			return
		}
		h, err := decodeHello(b)
		if err == nil && !bytes.Equal(h.encode(), b) {
			t.Fatalf("hello %x re-encodes as %x", b, h.encode())
		}
	})
}

func FuzzDecodeMemberStatus(f *testing.F) {
	f.Add(memberStatus{ServerID: 2, HasState: true, Applied: 8}.encode())
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeMemberStatus(b)
		if err == nil && len(b) == memberStatusSize && b[24] > 1 {
			return // booleans other than 0 and 1 read as true
		}
		if err == nil && !bytes.Equal(s.encode(), b) {
			t.Fatalf("status %x re-encodes as %x", b, s.encode())
		}
	})
}

// A data directory opens only as the member that wrote it.
func TestDataDirectoryOfAnotherMemberRefused(t *testing.T) {
	dir := t.TempDir()
	n, err := Open(Config{ServerID: 1, DataDir: dir, ForceSync: true})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	if n, err := Open(Config{ServerID: 2, DataDir: dir, ForceSync: true}); err == nil || !strings.Contains(err.Error(), "belongs to server 1") {
		if n != nil {
			n.Close()
		}
		t.Fatalf("opened member 1's directory as member 2: %v", err)
	}
	n, err = Open(Config{ServerID: 1, DataDir: dir, ForceSync: true})
	if err != nil {
		t.Fatalf("member 1 reopening its directory: %v", err)
	}
	n.Close()
}

// A member whose log records another membership than its server lines
// says so, naming both, and keeps the log's.
func TestMembershipDifferingFromLinesIsNamed(t *testing.T) {
	c := newTestCluster(t, 3)
	follower := (c.leader() + 1) % 3
	c.nodes[follower].Close()
	logger, logs := testutil.CaptureLogger(t, slog.LevelInfo)
	c.cfgHook = func(cfg *Config, _ *seams) {
		cfg.Logger = logger
		extra := Peer{ID: 4, RaftAddr: freeAddr(t), ForwardAddr: freeAddr(t)}
		cfg.Peers = append(append([]Peer(nil), c.peers...), extra)
	}
	c.start(follower)
	if lines := logs.Lines("level=WARN", "differs from its configuration's server lines", "log_membership=1,2,3", "configured=1,2,3,4"); len(lines) != 1 {
		t.Fatalf("want one WARN naming both memberships, got %q", logs.String())
	}
	c.cfgHook = nil
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.nodes[follower].WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if m := c.nodes[c.leader()].Membership(); m.Followers != 2 {
		t.Fatalf("membership changed: %+v", m)
	}
}

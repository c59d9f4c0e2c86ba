package replication

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// openNode opens a standalone node in dir, or with its stores in memory.
func openNode(t *testing.T, dir string, inMemory bool) *Node {
	return openNodeSeams(t, Config{DataDir: dir}, seams{memStores: inMemory})
}

// openReady opens a node with cfg as it is and the seams s, and waits
// until it serves.
func openReady(t *testing.T, cfg Config, s seams) *Node {
	t.Helper()
	n, err := open(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitReady(ctx); err != nil {
		n.Close()
		t.Fatal(err)
	}
	return n
}

// openNodeWith opens a node with cfg, the tests' log settings (forceSync,
// small snapshot thresholds) and no seams, and waits until it serves.
func openNodeWith(t *testing.T, cfg Config) *Node {
	t.Helper()
	return openNodeSeams(t, cfg, seams{})
}

// openNodeSeams is openNodeWith with the seams s.
func openNodeSeams(t *testing.T, cfg Config, s seams) *Node {
	t.Helper()
	cfg.ForceSync, cfg.SnapshotThreshold, cfg.TrailingLogs = true, 64, 16
	return openReady(t, cfg, s)
}

func createTxn(path string) *txnlog.Txn {
	return &txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCreate,
		Request: &jute.CreateRequest{Path: path, Data: []byte(path), ACL: jute.OpenACLUnsafe}}}
}

func await(t *testing.T, ch <-chan Outcome) Outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome within 10s")
	}
	return Outcome{}
}

func TestSubmitAssignsConsecutiveZxidsInOrder(t *testing.T) {
	n := openNode(t, t.TempDir(), true)
	defer n.Close()
	var chans []<-chan Outcome
	for i := 0; i < 50; i++ {
		chans = append(chans, n.Submit(createTxn(fmt.Sprintf("/n%d", i))))
	}
	// A failing write consumes a zxid too.
	chans = append(chans, n.Submit(createTxn("/n0")))
	for i, ch := range chans {
		o := await(t, ch)
		if o.Err != nil || o.Zxid != int64(i+1) {
			t.Fatalf("txn %d: zxid %d err %v, want zxid %d", i, o.Zxid, o.Err, i+1)
		}
		want := jute.OK
		if i == 50 {
			want = jute.NodeExists
		}
		if o.Result.Err != want {
			t.Fatalf("txn %d: %v, want %v", i, o.Result.Err, want)
		}
	}
	if n.LastZxid() != 51 {
		t.Fatalf("last zxid %d", n.LastZxid())
	}
}

func TestConcurrentWritesShareEntries(t *testing.T) {
	n := openNode(t, t.TempDir(), false)
	defer n.Close()
	before := n.raft.LastIndex()
	const writers, each = 16, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var chans []<-chan Outcome
			for i := 0; i < each; i++ {
				chans = append(chans, n.Submit(createTxn(fmt.Sprintf("/w%d-%d", w, i))))
			}
			for _, ch := range chans {
				if o := await(t, ch); o.Err != nil || o.Result.Err != jute.OK {
					t.Errorf("write failed: %+v", o)
				}
			}
		}(w)
	}
	wg.Wait()
	entries := n.raft.LastIndex() - before
	if entries >= writers*each {
		t.Fatalf("%d writes took %d log entries: no batching", writers*each, entries)
	}
	t.Logf("%d writes in %d log entries", writers*each, entries)
}

func TestRestartReplaysLogAndSnapshot(t *testing.T) {
	for _, store := range []string{"boltdb", "wal"} {
		t.Run(store, func(t *testing.T) { restartReplaysLogAndSnapshot(t, store) })
	}
}

func restartReplaysLogAndSnapshot(t *testing.T, store string) {
	dir := t.TempDir()
	n := openNodeWith(t, Config{DataDir: dir, LogStore: store})
	for i := 0; i < 200; i++ { // crosses the snapshot threshold of 64 entries
		if o := await(t, n.Submit(createTxn(fmt.Sprintf("/r%d", i)))); o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	sid := int64(0x0100000000000001)
	await(t, n.Submit(&txnlog.Txn{Timeout: 5000, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: sid}}))
	eph := createTxn("/eph")
	eph.Tree.SessionID = sid
	eph.Tree.Request.(*jute.CreateRequest).Flags = jute.ModeEphemeral
	await(t, n.Submit(eph))
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	await(t, n.Submit(createTxn("/after-snapshot")))
	var want bytes.Buffer
	n.Tree().WriteSnapshot(&want)
	last := n.LastZxid()
	n.Close()

	// No logStore on restart: the node must find the store it wrote.
	n2 := openNodeWith(t, Config{DataDir: dir})
	defer n2.Close()
	var got bytes.Buffer
	n2.Tree().WriteSnapshot(&got)
	if !bytes.Equal(want.Bytes(), got.Bytes()) {
		t.Fatal("tree after restart differs from the tree before")
	}
	if n2.LastZxid() != last {
		t.Fatalf("last zxid %d after restart, want %d", n2.LastZxid(), last)
	}
	if info, ok := n2.Sessions().Get(sid); !ok || info.Timeout != 5000 {
		t.Fatalf("session table after restart: %+v %v", info, ok)
	}
	if o := await(t, n2.Submit(createTxn("/next"))); o.Zxid != last+1 {
		t.Fatalf("zxid after restart %d, want %d", o.Zxid, last+1)
	}
}

func TestChooseLogStore(t *testing.T) {
	tests := []struct {
		configured string
		existing   []string // entries of the log directory
		want       string   // "" means an error
	}{
		{"", nil, "wal"},
		{"", []string{"raft.db"}, "boltdb"},
		{"", []string{"wal"}, "wal"},
		{"", []string{"raft.db", "wal"}, ""},
		{"wal", nil, "wal"},
		{"boltdb", nil, "boltdb"},
		{"wal", []string{"raft.db"}, ""},
		{"boltdb", []string{"wal"}, ""},
		{"boltdb", []string{"raft.db", "wal"}, "boltdb"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		for _, e := range tt.existing {
			if err := os.Mkdir(filepath.Join(dir, e), 0o750); err != nil {
				t.Fatal(err)
			}
		}
		got, err := chooseLogStore(tt.configured, dir)
		if (err != nil) != (tt.want == "") || got != tt.want {
			t.Errorf("chooseLogStore(%q) with %v = %q, %v; want %q", tt.configured, tt.existing, got, err, tt.want)
		}
	}
}

func TestSubmitAfterCloseFails(t *testing.T) {
	n := openNode(t, t.TempDir(), true)
	n.Close()
	if o := await(t, n.Submit(createTxn("/x"))); o.Err == nil {
		t.Fatal("submit after close succeeded")
	}
}

func TestNextZxidEpochs(t *testing.T) {
	f := &fsm{epochFromTerm: true}
	f.lastZxid.Store(0)
	if z := f.nextZxid(1, 0); z != 1<<32|1 {
		t.Fatalf("first zxid of term 1 = %#x", z)
	}
	f.lastZxid.Store(1<<32 | 7)
	if z := f.nextZxid(1, 0); z != 1<<32|8 {
		t.Fatalf("next in term 1 = %#x", z)
	}
	if z := f.nextZxid(3, 0); z != 3<<32|1 {
		t.Fatalf("first in term 3 = %#x", z)
	}
	standalone := &fsm{}
	standalone.lastZxid.Store(41)
	if z := standalone.nextZxid(9, 0); z != 42 {
		t.Fatalf("standalone zxid = %d", z)
	}
	// A standalone server's entry replayed by an ensemble member (its data
	// directory grew into an ensemble) keeps the zxids it was served with.
	f.lastZxid.Store(5)
	if z := f.nextZxid(9, txnlog.FlagStandalone); z != 6 {
		t.Fatalf("standalone entry on an ensemble member: zxid %#x, want 6", z)
	}
}

func TestWriteOfAClosedSessionFails(t *testing.T) {
	n := openNode(t, t.TempDir(), true)
	defer n.Close()
	sid := int64(0x0100000000000042)
	await(t, n.Submit(&txnlog.Txn{Timeout: 4000, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: sid}}))
	await(t, n.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCloseSession, SessionID: sid}}))
	eph := createTxn("/orphan")
	eph.Tree.SessionID = sid
	eph.Tree.Request.(*jute.CreateRequest).Flags = jute.ModeEphemeral
	before := n.LastZxid()
	o := await(t, n.Submit(eph))
	if o.Err != nil || o.Result.Err != jute.SessionExpired || o.Zxid != before+1 {
		t.Fatalf("ephemeral create after close: %+v, want SessionExpired consuming zxid %d", o, before+1)
	}
	if _, _, code := n.Tree().GetData("/orphan", nil, nil); code != jute.NoNode {
		t.Fatalf("orphan ephemeral created: %v", code)
	}
}

// TestForwardedBatchIsOneLogEntry: the transactions a follower forwards
// together enter the leader's log together, not one entry each.
func TestForwardedBatchIsOneLogEntry(t *testing.T) {
	n := openNode(t, t.TempDir(), true)
	defer n.Close()
	var txns [][]byte
	for i := 0; i < 20; i++ {
		txn := createTxn(fmt.Sprintf("/fwd%d", i))
		txn.RequestID = n.NewRequestID()
		txns = append(txns, txnlog.EncodeTxn(nil, txn))
	}
	before := n.raft.LastIndex()
	wait, _ := n.enqueueForwarded(txns)
	select {
	case err := <-wait:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("forwarded batch not committed within 10s")
	}
	if grew := n.raft.LastIndex() - before; grew != 1 {
		t.Fatalf("the leader's log grew by %d entries for one forwarded batch, want 1", grew)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitApplied(ctx, n.raft.LastIndex()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, _, code := n.Tree().GetData(fmt.Sprintf("/fwd%d", i), nil, nil); code != jute.OK {
			t.Fatalf("/fwd%d: %v", i, code)
		}
	}
}

// TestRaftTimeouts: an ensemble member's heartbeat and election timeouts
// are a quarter of tickTime, at least 250 ms, and its leader lease is as
// long (a leader does not give up before its followers would); a
// standalone member's are short. Every mapping is one raft accepts.
func TestRaftTimeouts(t *testing.T) {
	peers := []Peer{{ID: 1}, {ID: 2}, {ID: 3}}
	tests := []struct {
		name                       string
		cfg                        Config
		heartbeat, election, lease time.Duration
	}{
		{"standalone", Config{ServerID: 1, TickTime: 2 * time.Second}, 20 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond},
		{"ensemble, tickTime 2000", Config{ServerID: 1, TickTime: 2 * time.Second, Peers: peers}, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
		{"ensemble, tickTime 200", Config{ServerID: 1, TickTime: 200 * time.Millisecond, Peers: peers}, 250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := raftConfig(tt.cfg, slog.New(slog.DiscardHandler))
			if rc.HeartbeatTimeout != tt.heartbeat || rc.ElectionTimeout != tt.election || rc.LeaderLeaseTimeout != tt.lease {
				t.Fatalf("heartbeat %v, election %v, lease %v; want %v, %v, %v", rc.HeartbeatTimeout,
					rc.ElectionTimeout, rc.LeaderLeaseTimeout, tt.heartbeat, tt.election, tt.lease)
			}
			if err := raft.ValidateConfig(rc); err != nil {
				t.Fatalf("raft refuses the configuration: %v", err)
			}
		})
	}
}

// TestMoveSessionConsumesNoZxid: moving a session to another member (its
// client resumed it there) changes the owner and leaves the zxid alone,
// whether the session is live or gone; the next write takes the next zxid.
func TestMoveSessionConsumesNoZxid(t *testing.T) {
	n := openNode(t, t.TempDir(), true)
	defer n.Close()
	live, gone := int64(0x0100000000000051), int64(0x0100000000000052)
	await(t, n.Submit(&txnlog.Txn{Timeout: 4000, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: live}}))
	tests := []struct {
		name  string
		sid   int64
		owner int64
		want  jute.Code
	}{
		{"live session to member 2", live, 2, jute.OK},
		{"live session back to member 3", live, 3, jute.OK},
		{"unknown session", gone, 2, jute.SessionExpired},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := n.LastZxid()
			o := await(t, n.Submit(&txnlog.Txn{Owner: tc.owner, Tree: datatree.Txn{Type: txnlog.OpMoveSession, SessionID: tc.sid}}))
			if o.Err != nil || o.Result.Err != tc.want || o.Zxid != before {
				t.Fatalf("move: %+v (result %v), want %v at zxid %d", o, o.Result.Err, tc.want, before)
			}
			if after := n.LastZxid(); after != before {
				t.Fatalf("last zxid %d -> %d across a move", before, after)
			}
			if tc.want == jute.OK && n.Sessions().Owner(tc.sid) != tc.owner {
				t.Fatalf("owner %d, want %d", n.Sessions().Owner(tc.sid), tc.owner)
			}
			next := await(t, n.Submit(createTxn(fmt.Sprintf("/after-move-%d", i))))
			if next.Zxid != before+1 {
				t.Fatalf("write after a move: zxid %d, want %d", next.Zxid, before+1)
			}
		})
	}
}

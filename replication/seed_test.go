package replication

import (
	"errors"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// seedTree returns a tree with /a and /a/b beside the system nodes, at zxid
// 0x300000002.
func seedTree(t *testing.T) *datatree.Tree {
	t.Helper()
	tree := datatree.New(datatree.Config{})
	for i, p := range []string{"/a", "/a/b"} {
		res := tree.Apply(&datatree.Txn{Type: jute.OpCreate, Time: 1000,
			Request: &jute.CreateRequest{Path: p, Data: []byte(p), ACL: jute.OpenACLUnsafe}}, 0x300000001+int64(i), nil)
		if res.Err != jute.OK {
			t.Fatalf("create %s: %v", p, res.Err)
		}
	}
	return tree
}

// TestSeed seeds data directories with each log store and opens them as a
// server does: the state is there, and new writes continue after the
// seeded zxid. Seeding them again is refused.
func TestSeed(t *testing.T) {
	for _, store := range []string{"wal", "boltdb"} {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{DataDir: dir, LogStore: store, ForceSync: true}
			size, err := Seed(cfg, seedTree(t), 0x300000002)
			if err != nil {
				t.Fatal(err)
			}
			if size <= 0 {
				t.Errorf("snapshot size %d", size)
			}
			n := openNodeWith(t, Config{DataDir: dir})
			defer n.Close()
			if z := n.LastZxid(); z != 0x300000002 {
				t.Errorf("last zxid %#x, want 0x300000002", z)
			}
			if data, _, code := n.Tree().GetData("/a/b", nil, nil); code != jute.OK || string(data) != "/a/b" {
				t.Errorf("/a/b = %q, %v", data, code)
			}
			if o := await(t, n.Submit(createTxn("/c"))); o.Err != nil || o.Result.Err != jute.OK || o.Zxid != 0x300000003 {
				t.Errorf("create after the seed: %+v, want zxid 0x300000003", o)
			}
			n.Close()
			if _, err := Seed(cfg, seedTree(t), 1); !errors.Is(err, ErrNotFresh) {
				t.Errorf("seeding again: %v, want ErrNotFresh", err)
			}
		})
	}
}

// TestSeedStateWithSessions seeds what a mirror of a ZooKeeper ensemble
// holds at a takeover: a tree with an ephemeral znode, its session and
// another, and ZooKeeper's last zxid, for member 4. The directories open
// with the sessions (ids and timeouts), the ephemeral and the zxid; a
// write continues after the zxid, a seeded session writes, and closing a
// seeded session deletes its ephemeral.
func TestSeedStateWithSessions(t *testing.T) {
	const (
		last           = int64(0x500000009)
		owner, idle    = int64(0x0100000000000001), int64(0x0200000000000007)
		ownerTO, idleT = int32(4000), int32(6000)
	)
	tree := seedTree(t)
	res := tree.Apply(&datatree.Txn{Type: jute.OpCreate, SessionID: owner, Time: 2000,
		Request: &jute.CreateRequest{Path: "/a/e", Data: []byte("e"), ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral}}, last, nil)
	if res.Err != jute.OK {
		t.Fatalf("create the ephemeral: %v", res.Err)
	}
	sessions := session.NewTable()
	sessions.Add(owner, ownerTO)
	sessions.Add(idle, idleT)
	dir := t.TempDir()
	if _, err := SeedState(Config{DataDir: dir, ServerID: 4, ForceSync: true}, SeedInput{Tree: tree, Sessions: sessions, LastZxid: last}); err != nil {
		t.Fatal(err)
	}
	n := openNodeWith(t, Config{DataDir: dir, ServerID: 4})
	defer n.Close()
	if z := n.LastZxid(); z != last {
		t.Errorf("last zxid %#x, want %#x", z, last)
	}
	for id, timeout := range map[int64]int32{owner: ownerTO, idle: idleT} {
		if info, ok := n.Sessions().Get(id); !ok || info.Timeout != timeout {
			t.Errorf("session %#x: %+v %v, want timeout %d", id, info, ok, timeout)
		}
	}
	if eph := n.Tree().SessionEphemerals(owner); len(eph) != 1 || eph[0] != "/a/e" {
		t.Errorf("session %#x's ephemerals %v, want [/a/e]", owner, eph)
	}
	o := await(t, n.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpSetData, SessionID: owner,
		Request: &jute.SetDataRequest{Path: "/a", Data: []byte("after"), Version: -1}}}))
	if o.Err != nil || o.Result.Err != jute.OK || o.Zxid != last+1 {
		t.Errorf("a seeded session's write: %+v, want zxid %#x", o, last+1)
	}
	o = await(t, n.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCloseSession, SessionID: owner}}))
	if o.Err != nil || o.Zxid != last+2 {
		t.Errorf("close session: %+v, want zxid %#x", o, last+2)
	}
	if _, _, code := n.Tree().GetData("/a/e", nil, nil); code != jute.NoNode {
		t.Errorf("/a/e after its session closed: %v, want NoNode", code)
	}
	if _, ok := n.Sessions().Get(idle); !ok || n.Sessions().Len() != 1 {
		t.Errorf("sessions after the close: %v, want only %#x", n.Sessions().All(), idle)
	}
}

// TestSeededZxidsIncrease checks that zxids continue after a seeded
// ZooKeeper zxid whatever the raft term of the ensemble that takes over:
// a term at or below ZooKeeper's epoch continues its counter, a higher
// one starts its own epoch (fsm.nextZxid with epochs from terms).
func TestSeededZxidsIncrease(t *testing.T) {
	tests := []struct {
		name       string
		zkLast     int64
		term       uint64
		want       int64
		standalone bool
	}{
		{"term below ZooKeeper's epoch", 0x500000009, 2, 0x50000000a, false},
		{"term equal to ZooKeeper's epoch", 0x500000009, 5, 0x50000000a, false},
		{"term above ZooKeeper's epoch", 0x500000009, 6, 0x600000001, false},
		{"epoch 1, the usual first term", 0x100000003, 2, 0x200000001, false},
		{"a standalone server's entry", 0x500000009, 9, 0x50000000a, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fsm{epochFromTerm: true}
			f.lastZxid.Store(tt.zkLast)
			var flags byte
			if tt.standalone {
				flags = txnlog.FlagStandalone
			}
			z := f.nextZxid(tt.term, flags)
			if z != tt.want || uint64(z) <= uint64(tt.zkLast) {
				t.Errorf("next zxid %#x, want %#x (above %#x)", z, tt.want, tt.zkLast)
			}
		})
	}
}

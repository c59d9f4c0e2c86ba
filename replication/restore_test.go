package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// nodesOf lists a tree's nodes with their stored stats, leaving out
// /zookeeper/config (a restore keeps the running ensemble's).
func nodesOf(t *testing.T, tree *datatree.Tree) string {
	t.Helper()
	var b bytes.Buffer
	err := tree.Walk(func(n datatree.StoredNode) error {
		if n.Path != configPath {
			fmt.Fprintf(&b, "%+v\n", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// backupOf takes a backup of n and decodes it.
func backupOf(t *testing.T, n *Node) (BackupInfo, *txnlog.SnapshotState) {
	t.Helper()
	info, rc, err := n.Backup()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(raw)) != info.Size {
		t.Fatalf("backup of %d bytes, info says %d", len(raw), info.Size)
	}
	st, err := txnlog.ReadSnapshot(bytes.NewReader(raw), datatree.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return info, st
}

// TestBackupRestoreIntoAnotherEnsemble backs up a standalone member,
// twice (the second time nothing is new to snapshot), and restores the
// backup into a 3-member ensemble through the log: a follower refuses
// and names the leader, a backup whose digest is wrong is refused with
// nothing changed, and the restore leaves every member with the
// backup's znodes and stats, the backup's sessions (owned by no member:
// their clients are not connected here), the ensemble's own identity,
// and a zxid that did not go back.
//
// It runs with each log store: raft-wal takes no entry after the hole a
// restore leaves in the log unless raft empties the log first.
func TestBackupRestoreIntoAnotherEnsemble(t *testing.T) {
	for _, store := range []string{"wal", "boltdb"} {
		t.Run(store, func(t *testing.T) { backupRestoreIntoAnotherEnsemble(t, store) })
	}
}

func backupRestoreIntoAnotherEnsemble(t *testing.T, logStore string) {
	src := openNodeWith(t, Config{DataDir: t.TempDir(), LogStore: logStore})
	defer src.Close()
	session := &txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: 0x77}, Timeout: 30000}
	if o := await(t, src.Submit(session)); o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("create session: %+v", o)
	}
	for i := range 40 {
		if o := await(t, src.Submit(createTxn(fmt.Sprintf("/b%02d", i)))); o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("create: %+v", o)
		}
	}
	info, st := backupOf(t, src)
	again, _ := backupOf(t, src)
	if info.LastZxid != src.LastZxid() || again.LastZxid != info.LastZxid {
		t.Fatalf("backups at zxid %#x and %#x, the member is at %#x", info.LastZxid, again.LastZxid, src.LastZxid())
	}
	want := nodesOf(t, src.Tree())

	c := startTestCluster(t, 3, false, logStore)
	lead := c.leader()
	for i := range 300 {
		submitRetrying(t, c.nodes[lead], createTxn(fmt.Sprintf("/old%03d", i)))
	}
	c.converged()
	ensemble := c.nodes[lead].Ensemble()
	before := nodesOf(t, c.nodes[lead].Tree())
	zxidBefore := c.nodes[lead].LastZxid()

	follower := (lead + 1) % 3
	_, err := c.nodes[follower].Restore(context.Background(), st)
	if !errors.Is(err, ErrNotLeader) || !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprintf("server %d", lead+1))) {
		t.Fatalf("restore on a follower: %v, want ErrNotLeader naming server %d", err, lead+1)
	}
	bad := *st
	bad.Digest ^= 1
	if _, err := c.nodes[lead].Restore(context.Background(), &bad); !errors.Is(err, errDigestMismatch) {
		t.Fatalf("restore of a damaged backup: %v, want a digest mismatch", err)
	}
	if got := nodesOf(t, c.nodes[lead].Tree()); got != before {
		t.Fatal("a refused restore changed the tree")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var res RestoreResult
	// A loaded machine can cost the leader its lease while it commits the
	// restore: the restore is then tried again on the new leader, as an
	// operator would (a restore of the same backup is the same state).
	for attempt := 1; ; attempt++ {
		_, st = backupOf(t, src)      // a fresh copy: Restore takes the tree over
		st.Sessions.SetOwner(0x77, 9) // a member of the backup's ensemble
		res, err = c.nodes[lead].Restore(ctx, st)
		if err == nil {
			break
		}
		if attempt == 3 || !(errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, ErrNotLeader)) {
			t.Fatal(err)
		}
		t.Logf("restore attempt %d: %v; trying again on the leader", attempt, err)
		lead = c.leader()
	}
	if res.LastZxid != max(info.LastZxid, zxidBefore) || res.Sessions != 1 {
		t.Errorf("restore result %+v, want zxid %#x and 1 session", res, max(info.LastZxid, zxidBefore))
	}
	testutil.Eventually(t, 15*time.Second, "every member holds the backup", func() bool {
		for _, n := range c.nodes {
			if nodesOf(t, n.Tree()) != want {
				return false
			}
		}
		return true
	})
	for i, n := range c.nodes {
		if n.Ensemble() != ensemble || n.Fenced() != nil {
			t.Errorf("member %d: ensemble %s fenced %v, want %s and not fenced", i+1, n.Ensemble(), n.Fenced(), ensemble)
		}
		if _, ok := n.Sessions().Get(0x77); !ok || n.Sessions().Len() != 1 || n.Sessions().Owner(0x77) != 0 {
			t.Errorf("member %d: sessions %v, want the backup's", i+1, n.Sessions().All())
		}
		if n.LastZxid() < zxidBefore {
			t.Errorf("member %d: zxid went back to %#x from %#x", i+1, n.LastZxid(), zxidBefore)
		}
	}
	o := submitRetrying(t, c.nodes[follower], createTxn("/after"))
	if o.Err != nil || o.Result.Err != jute.OK || o.Zxid <= res.LastZxid {
		t.Fatalf("write after the restore: %+v", o)
	}
	c.converged()
	// Every member restarts from the restored snapshot and the log after
	// the hole.
	want = nodesOf(t, c.nodes[lead].Tree())
	for i := range c.nodes {
		c.nodes[i].Close()
		c.start(i)
	}
	c.waitReady()
	for i, n := range c.nodes {
		if got := nodesOf(t, n.Tree()); got != want {
			t.Errorf("member %d after a restart differs from before", i+1)
		}
	}
}

// TestVerifyLogAllowsHolesBelowTheSnapshot: a log with a hole opens when
// the newest snapshot covers the hole (raft-boltdb keeps one after a
// restore or a snapshot install), and is refused when it does not.
func TestVerifyLogAllowsHolesBelowTheSnapshot(t *testing.T) {
	store := raft.NewInmemStore()
	for _, i := range []uint64{1, 2, 3, 4, 5, 8, 9, 10} {
		if err := store.StoreLog(&raft.Log{Index: i, Term: 1, Type: raft.LogNoop}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		covered uint64
		ok      bool
	}{{0, false}, {6, false}, {7, true}, {9, true}}
	for _, tc := range cases {
		err := verifyLog(store, "test", tc.covered)
		if (err == nil) != tc.ok {
			t.Errorf("covered %d: %v, want ok=%v", tc.covered, err, tc.ok)
		}
	}
}

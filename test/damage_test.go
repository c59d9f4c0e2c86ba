package test

import (
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
)

// A flipped byte in a member's data directory (replication/logcheck.go,
// snapcheck.go): a damaged log entry keeps the member from starting; a
// damaged snapshot is set aside when the log can replace it, and keeps the
// member from starting when it cannot. Either way the member never serves
// a tree that differs from the others', and the others keep serving.

// flipMarker is a znode's data that the tests look for in a member's files.
const flipMarker = "FLIPME-0123456789"

// flipIn flips one byte inside the first occurrence of flipMarker in the
// files under dir that keep selects, and returns the file.
func flipIn(t *testing.T, dir string, keep func(path string) bool) string {
	t.Helper()
	var seen []string
	var hit string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || hit != "" || !keep(path) {
			return err
		}
		seen = append(seen, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		at := bytes.Index(b, []byte(flipMarker))
		if at < 0 {
			return nil
		}
		if bytes.Contains(b[at+1:], []byte(flipMarker)) {
			t.Logf("%s holds %q more than once; flipping the first", path, flipMarker)
		}
		b[at+7] ^= 0x01 // the '0' after "FLIPME-"
		hit = path
		return os.WriteFile(path, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	if hit == "" {
		t.Fatalf("%q is in none of %v", flipMarker, seen)
	}
	t.Logf("flipped a byte of %q in %s", flipMarker, hit)
	return hit
}

// openMember builds member i on its configuration without the ensemble
// (which fails the test when a member does not start), for a member
// expected to refuse; it closes what it built.
func openMember(t *testing.T, e *loggedEnsemble, i int) error {
	t.Helper()
	srv, err := server.New(server.Options{Config: e.Config(i), Logger: testutil.Logger(t, slog.LevelInfo), Operator: ops.New(ops.Options{})})
	if err == nil {
		srv.Close()
	}
	return err
}

// damageSetup launches 3 members, writes fillTree and the marker through
// the leader, then writes after it more entries each on its own (the
// marker is not in the log's last commit, which the log store may treat
// as a torn write), and waits until a follower has applied them all. It
// returns the ensemble, the leader, that follower and a client on the
// leader.
func damageSetup(t *testing.T) (e *loggedEnsemble, lead, f int, c *zk.Conn) {
	t.Helper()
	e = newLoggedEnsemble(t, 3, nil)
	e.Launch()
	e.awaitEnsembleID()
	lead = e.Leader()
	f = (lead + 1) % 3
	c, err := dialMember(e.Addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	fillTree(t, c, "/d")
	if _, err := c.Create("/flip", []byte(flipMarker), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	writeSerially(t, c, "/later", 20)
	awaitSameTrees(t, e.addrs(lead, f), nil, nil, false)
	return e, lead, f, c
}

// writeSerially creates root and n znodes under it, one request at a time.
func writeSerially(t *testing.T, c *zk.Conn, root string, n int) {
	t.Helper()
	if _, err := c.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := c.Create(fmt.Sprintf("%s/n%04d", root, i), []byte{byte(i)}, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
}

// assertOthersServe checks that the members other than f serve, and
// accept a write that each reads after a sync.
func assertOthersServe(t *testing.T, e *loggedEnsemble, f int, c *zk.Conn) {
	t.Helper()
	var others []int
	for i := range e.Size() {
		if i != f {
			others = append(others, i)
			if !e.Member(i).Serving() {
				t.Errorf("member %d stopped serving", i+1)
			}
		}
	}
	if _, err := c.Create("/still", []byte("served"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("write after member %d's damage: %v", f+1, err)
	}
	tree := awaitSameTrees(t, e.addrs(others...), nil, nil, false)
	if string(tree["/still"].data) != "served" {
		t.Errorf("/still reads %v", tree["/still"])
	}
}

// TestDamagedLogEntryRefusesStart: one byte flipped inside a log entry's
// payload (a znode's data in a raft-wal segment) of a stopped member: it
// refuses to start, with an error saying the entry is damaged; the other
// two keep serving.
func TestDamagedLogEntryRefusesStart(t *testing.T) {
	e, _, f, c := damageSetup(t)
	time.Sleep(time.Second) // a digest checkpoint or two after the writes
	e.Stop(f)
	flipIn(t, filepath.Join(e.Config(f).DataLogDir, "version-2", "raft", "wal"), func(p string) bool {
		return strings.HasSuffix(p, ".wal")
	})
	err := openMember(t, e, f)
	if err == nil || !strings.Contains(err.Error(), "is damaged") {
		t.Fatalf("member %d opened a log with a flipped byte: err = %v, want one saying the entry \"is damaged\"", f+1, err)
	}
	t.Logf("member %d refused to start: %v", f+1, err)
	assertOthersServe(t, e, f, c)
}

// TestDamagedSnapshot: one byte flipped inside a stopped member's newest
// snapshot (state.bin). When its log still holds every entry the snapshot
// covers, the member sets the snapshot aside (renamed *.damaged, said at
// ERROR and WARN), starts from the log, and serves the same tree as the
// others. When the log was compacted behind the snapshot (over 1024
// entries, raft's trailing logs, since the snapshot before it), it refuses
// to start with an error naming the damaged file. The others keep serving.
func TestDamagedSnapshot(t *testing.T) {
	t.Run("log-replaces-it", func(t *testing.T) {
		e, lead, f, c := damageSetup(t)
		if err := e.node(f).Snapshot(); err != nil {
			t.Fatalf("member %d snapshot: %v", f+1, err)
		}
		writeSerially(t, c, "/after-snapshot", 10)
		want := awaitSameTrees(t, e.addrs(lead, f), nil, nil, false)
		e.Stop(f)
		snapDir := filepath.Join(e.Config(f).DataDir, "version-2", "raft", "snapshots")
		id := newestSnapshot(t, snapDir)
		flipIn(t, filepath.Join(snapDir, id), func(p string) bool { return filepath.Base(p) == "state.bin" })
		mark := e.mark()
		e.Start(f)
		e.WaitServing(f)
		if len(e.linesSince(mark, f, "level=ERROR", "snapshot damaged", id)) == 0 {
			t.Errorf("member %d did not say at ERROR that snapshot %s is damaged", f+1, id)
		}
		if len(e.linesSince(mark, f, "level=WARN", "damaged snapshot set aside")) == 0 {
			t.Errorf("member %d did not say it set the damaged snapshot aside", f+1)
		}
		if _, err := os.Stat(filepath.Join(snapDir, id+".damaged")); err != nil {
			t.Errorf("the damaged snapshot was not kept aside: %v", err)
		}
		awaitSameTrees(t, e.addrs(f, lead, 3-f-lead), want, nil, true)
		time.Sleep(time.Second) // two digest intervals
		e.assertUnfenced(e.node(lead).Ensemble())
		assertOthersServe(t, e, f, c)
	})
	t.Run("log-compacted", func(t *testing.T) {
		e, _, f, c := damageSetup(t)
		if err := e.node(f).Snapshot(); err != nil {
			t.Fatalf("member %d first snapshot: %v", f+1, err)
		}
		// More entries than raft keeps behind a snapshot (1024), one each.
		writeSerially(t, c, "/bulk", 1100)
		awaitSameTrees(t, e.addrs(f), nil, nil, false)
		if err := e.node(f).Snapshot(); err != nil {
			t.Fatalf("member %d second snapshot: %v", f+1, err)
		}
		stats := e.node(f).Stats()
		t.Logf("member %d after its second snapshot: last_snapshot_index=%s last_log_index=%s",
			f+1, stats["last_snapshot_index"], stats["last_log_index"])
		e.Stop(f)
		snapDir := filepath.Join(e.Config(f).DataDir, "version-2", "raft", "snapshots")
		id := newestSnapshot(t, snapDir)
		flipIn(t, filepath.Join(snapDir, id), func(p string) bool { return filepath.Base(p) == "state.bin" })
		err := openMember(t, e, f)
		if err == nil || !strings.Contains(err.Error(), "is damaged") || !strings.Contains(err.Error(), id) {
			t.Fatalf("member %d opened with its newest snapshot damaged and its log compacted: err = %v, want one naming %s as damaged", f+1, err, id)
		}
		t.Logf("member %d refused to start: %v", f+1, err)
		if _, err := os.Stat(filepath.Join(snapDir, id)); err != nil {
			t.Errorf("the refused member's snapshot was moved: %v", err)
		}
		assertOthersServe(t, e, f, c)
	})
}

// newestSnapshot returns the name of the snapshot directory in dir with
// the highest index (names are term-index-millis).
func newestSnapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	type snap struct {
		name              string
		term, index, msec uint64
	}
	var snaps []snap
	for _, e := range entries {
		var s snap
		if _, err := fmt.Sscanf(e.Name(), "%d-%d-%d", &s.term, &s.index, &s.msec); err == nil && e.IsDir() && !strings.Contains(e.Name(), ".") {
			s.name = e.Name()
			snaps = append(snaps, s)
		}
	}
	if len(snaps) == 0 {
		t.Fatalf("no snapshot in %s", dir)
	}
	slices.SortFunc(snaps, func(a, b snap) int {
		return cmp.Or(cmp.Compare(a.term, b.term), cmp.Compare(a.index, b.index), cmp.Compare(a.msec, b.msec))
	})
	return snaps[len(snaps)-1].name
}

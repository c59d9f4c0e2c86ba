package datatree

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// cowPaths is a path universe with a few directories of many children, so
// that snapshot writers scan large maps while writes change them.
func cowPaths() []string {
	var paths []string
	for d := 0; d < 3; d++ {
		paths = append(paths, fmt.Sprintf("/d%d", d))
		for i := 0; i < 60; i++ {
			paths = append(paths, fmt.Sprintf("/d%d/n%02d", d, i))
		}
	}
	return append(paths, "/d0/n00/x", "/d0/n00/y", "/d1/n01/x", "/q", "/zookeeper/quota/d0", "/zookeeper/quota/d0/zookeeper_limits", "/zookeeper/quota/d0/zookeeper_stats")
}

// cowGen returns a generator over cowPaths that creates more than it
// deletes, and the tree after seeding it with n of its txns.
func cowSetup(t *testing.T, seed uint64, n int) (*Tree, *txnGen, int64) {
	t.Helper()
	tree := New(Config{ExtendedTypesEnabled: true, Authorizer: testAuth{}})
	g := newTxnGen(seed)
	g.paths = cowPaths()
	zxid := applyGen(tree, g, 0, n)
	if tree.NodeCount() < 40 {
		t.Fatalf("seed %d: only %d nodes", seed, tree.NodeCount())
	}
	return tree, g, zxid
}

// applyGen applies n txns of g after zxid and returns the last zxid.
func applyGen(tree *Tree, g *txnGen, zxid int64, n int) int64 {
	for i := 0; i < n; i++ {
		zxid++
		txn := g.txn()
		txn.Time = zxid * 10
		tree.Apply(txn, zxid, nil)
	}
	return zxid
}

// TestSnapshotCopyOnWrite writes snapshots while txns are applied between
// every release of the read lock (budget 1: the writer yields after every
// node and every map entry), and checks each stream is exactly the state at
// its capture, that it reads back, and that the tree itself is unaffected.
func TestSnapshotCopyOnWrite(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		tree, g, zxid := cowSetup(t, seed, 1500)
		shadow, gs, _ := cowSetup(t, seed, 1500) // same txns, never snapshotted
		for round := 0; round < 3; round++ {
			want := snapshotBytes(t, tree)
			snap, err := tree.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			perPause := 1 + int(seed%3)
			applied := 0
			pause := func() {
				zxid = applyGen(tree, g, zxid, perPause)
				applied += perPause
			}
			var got bytes.Buffer
			if _, err := snap.write(&got, 1, pause); err != nil {
				t.Fatal(err)
			}
			snap.Release()
			if applied < 100 {
				t.Fatalf("seed %d: only %d txns ran during the write", seed, applied)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("seed %d round %d: snapshot differs from the state at its capture", seed, round)
			}
			if _, err := ReadSnapshot(bytes.NewReader(got.Bytes()), Config{ExtendedTypesEnabled: true}); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			applyGen(shadow, gs, zxid-int64(applied), applied)
			if treeView(tree) != treeView(shadow) || !bytes.Equal(snapshotBytes(t, tree), snapshotBytes(t, shadow)) {
				t.Fatalf("seed %d round %d: snapshotting changed the tree", seed, round)
			}
		}
	}
}

// TestSnapshotConcurrentWrites runs the writer and Apply on different
// goroutines (for the race detector) and checks the stream is the state at
// the capture and restores to a tree that reads the same.
func TestSnapshotConcurrentWrites(t *testing.T) {
	for seed := uint64(20); seed < 24; seed++ {
		tree, g, zxid := cowSetup(t, seed, 1500)
		want := snapshotBytes(t, tree)
		wantView := treeView(tree)
		snap, err := tree.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				zxid = applyGen(tree, g, zxid, 1)
				tree.GetChildren("/d0", nil, nil)
			}
		})
		var got bytes.Buffer
		_, err = snap.write(&got, 3, nil)
		close(stop)
		wg.Wait()
		snap.Release()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("seed %d: snapshot differs from the state at its capture", seed)
		}
		restored, err := ReadSnapshot(bytes.NewReader(got.Bytes()), Config{ExtendedTypesEnabled: true, Authorizer: testAuth{}})
		if err != nil {
			t.Fatal(err)
		}
		if treeView(restored) != wantView {
			t.Fatalf("seed %d: restored tree reads differently", seed)
		}
	}
}

func TestSnapshotOneAtATime(t *testing.T) {
	tree, g, zxid := cowSetup(t, 5, 3000)
	snap, err := tree.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.Snapshot(); !errors.Is(err, ErrSnapshotOpen) {
		t.Fatalf("second Snapshot: %v", err)
	}
	applyGen(tree, g, zxid, 200)
	// WriteSnapshot still works, under the read lock, with the live state.
	var live bytes.Buffer
	if err := tree.WriteSnapshot(&live); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if !bytes.Equal(live.Bytes(), snapshotBytes(t, tree)) {
		t.Error("WriteSnapshot during an open snapshot differs")
	}
	if _, err := snap.WriteTo(&bytes.Buffer{}); err == nil {
		t.Error("WriteTo after Release succeeded")
	}
	snap.Release()
	again, err := tree.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	again.Release()
}

// TestSnapshotWriteError checks a failing writer is reported and that the
// snapshot can still be released.
func TestSnapshotWriteError(t *testing.T) {
	tree, _, _ := cowSetup(t, 6, 3000)
	snap, err := tree.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	for _, n := range []int{0, 10, 5000} {
		if _, err := snap.WriteTo(&failWriter{n: n}); err == nil {
			t.Errorf("limit %d: no error", n)
		}
	}
	if res := tree.Apply(&Txn{Type: jute.OpCreate, Request: &jute.CreateRequest{Path: "/after", ACL: open}}, 1<<40, nil); res.Err != jute.OK {
		t.Fatal(res.Err)
	}
}

// TestSortChildren: a snapshot writes each directory's children in byte
// order of name, once each, whether the directory is sorted directly or as
// keyed entries (sortByKeyFrom children and more), including names that
// share their first 8 bytes, are shorter than 8 bytes, or are repeated.
func TestSortChildren(t *testing.T) {
	shared := func(n int) []string {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("c-000000%04d", (i*7919)%n) // one 8-byte prefix
		}
		return names
	}
	mixed := func(n int) []string {
		names := []string{"a", "a\x01", "ab", "abcdefgh", "abcdefghi", "abcdefgg", "b", "\u00e9t\u00e9", "Z"}
		for i := len(names); i < n; i++ {
			names = append(names, "n"+strconv.Itoa(n-i))
		}
		return names
	}
	tests := []struct {
		name    string
		names   []string
		repeats int // how many of the first names appear twice
	}{
		{"small", mixed(10), 0},
		{"small with repeats", mixed(10), 3},
		{"keyed", mixed(sortByKeyFrom * 3), 0},
		{"keyed with repeats", mixed(sortByKeyFrom * 3), 20},
		{"keyed shared prefix", shared(sortByKeyFrom * 4), 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kids []*node
			for _, name := range tt.names {
				kids = append(kids, namedNode(name))
			}
			kids = append(kids, kids[:tt.repeats]...)
			wk := &snapWalker{}
			got := wk.sortChildren(kids)
			want := slices.Clone(tt.names)
			slices.Sort(want)
			want = slices.Compact(want)
			if len(got) != len(want) {
				t.Fatalf("got %d children, want %d", len(got), len(want))
			}
			for i, n := range got {
				if n.name() != want[i] {
					t.Fatalf("child %d is %q, want %q", i, n.name(), want[i])
				}
			}
		})
	}
}

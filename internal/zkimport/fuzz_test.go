package zkimport

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F, pattern string) {
	files, err := filepath.Glob(filepath.Join(testdata, pattern))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzReadSnapshot: any input gives a db or an error, never a panic, and
// allocation follows the bytes actually present.
func FuzzReadSnapshot(f *testing.F) {
	addSeeds(f, "snapshot.*")
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := readSnapshot(bytes.NewReader(b), nil)
		if err == nil && d.nodes["/"] == nil {
			t.Fatal("snapshot without a root accepted")
		}
		if err == nil {
			finalNodes(d)
		}
	})
}

// FuzzReplayLog replays arbitrary log bytes over the real snapshot.
func FuzzReplayLog(f *testing.F) {
	addSeeds(f, "log.*")
	base, err := os.ReadFile(filepath.Join(testdata, "snapshot.52"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := readSnapshot(bytes.NewReader(base), nil)
		if err != nil {
			t.Fatal(err)
		}
		replayLog(d, bytes.NewReader(b), "fuzz", 0, nil)
		nodes, _ := finalNodes(d)
		for _, n := range nodes {
			if n.Path != "/" {
				if pp, _ := parentOf(n.Path); d.nodes[pp] == nil {
					t.Fatalf("%s has no parent", n.Path)
				}
			}
		}
	})
}

// FuzzReadBackup: any input gives a backup or an error, never a panic;
// an accepted backup writes back to a stream that reads as the same
// tree.
func FuzzReadBackup(f *testing.F) {
	addSeeds(f, "snapshot.*")
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ReadBackup(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if _, err := WriteSnapshot(&out, st.Tree, st.Sessions); err != nil {
			t.Fatal(err)
		}
		back, err := ReadBackup(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("a written backup is refused: %v", err)
		}
		if back.Tree.Digest() != st.Tree.Digest() {
			t.Fatal("the tree changed in a write and read")
		}
	})
}

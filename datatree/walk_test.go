package datatree

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestWalkCopiesTree walks trees into a Loader: the copy writes the same
// snapshot as the original, every parent comes before its children, and
// an error from the callback stops the walk.
func TestWalkCopiesTree(t *testing.T) {
	cfg := Config{ExtendedTypesEnabled: true}
	for _, tc := range []struct {
		name string
		txns int
	}{
		{"fresh", 0},
		{"random", 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built := New(cfg)
			applyRandom(built, 42, 0, tc.txns)
			l := NewLoader(cfg)
			seen := map[string]bool{}
			err := built.Walk(func(n StoredNode) error {
				if n.Path != "/" {
					parent := n.Path[:strings.LastIndexByte(n.Path, '/')]
					if parent == "" {
						parent = "/"
					}
					if !seen[parent] {
						t.Errorf("%s walked before its parent", n.Path)
					}
				}
				seen[n.Path] = true
				return l.Add(n)
			})
			if err != nil {
				t.Fatal(err)
			}
			copied, err := l.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != built.NodeCount() {
				t.Errorf("walked %d nodes, the tree has %d", len(seen), built.NodeCount())
			}
			if copied.Digest() != built.Digest() || !bytes.Equal(snapshotBytes(t, copied), snapshotBytes(t, built)) {
				t.Error("the walked copy differs from the original")
			}
		})
	}
	stop := errors.New("stop")
	calls := 0
	err := New(cfg).Walk(func(StoredNode) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Walk after an error: %v after %d calls, want stop after 1", err, calls)
	}
}

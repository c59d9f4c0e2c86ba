package datatree

import (
	"bytes"
	"testing"
)

// TestNodeDataAndName checks that a node's data keeps the difference
// between a null buffer and an empty one, and that its data and name read
// back as they were set.
func TestNodeDataAndName(t *testing.T) {
	var n node
	if n.data() != nil || n.name() != "" {
		t.Fatalf("zero node: data %v, name %q", n.data(), n.name())
	}
	n.setData(nil)
	if n.data() != nil {
		t.Fatal("null data reads back non-nil")
	}
	big := make([]byte, 0, 4096)
	n.setData(big[:0])
	if d := n.data(); d == nil || len(d) != 0 || cap(d) != 0 {
		t.Fatalf("empty data reads back as %v (cap %d), want empty, non-nil, of no array", d, cap(d))
	}
	want := []byte("some data")
	n.setData(want)
	if d := n.data(); !bytes.Equal(d, want) || cap(d) != len(want) {
		t.Fatalf("data %q (cap %d), want %q", d, cap(d), want)
	}
	n.setName("n123")
	if n.name() != "n123" {
		t.Fatalf("name %q, want n123", n.name())
	}
	c := n // a snapshot's saved copy (cow.go) reads the same
	n.setData(nil)
	if !bytes.Equal(c.data(), want) || c.name() != "n123" {
		t.Fatalf("copy reads %q %q", c.data(), c.name())
	}
}

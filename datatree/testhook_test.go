//go:build testhooks

package datatree

import (
	"bytes"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// TestDivergeForTest checks that a diverged node keeps its stats and the
// digest stays exact but differs from an undiverged twin's.
func TestDivergeForTest(t *testing.T) {
	a, b := newHarness(t, Config{}), newHarness(t, Config{})
	for _, h := range []*harness{a, b} {
		h.mustCreate("/x")
	}
	before := a.stat("/x")
	if err := a.tree.DivergeForTest("/x", []byte("other")); err != nil {
		t.Fatal(err)
	}
	checkDigest(t, a.tree, "after DivergeForTest")
	if a.tree.Digest() == b.tree.Digest() {
		t.Error("diverged tree has its twin's digest")
	}
	data, st, _ := a.tree.GetData("/x", nil, nil)
	if !bytes.Equal(data, []byte("other")) {
		t.Errorf("data %q, want %q", data, "other")
	}
	before.DataLength = st.DataLength
	if st != before {
		t.Errorf("stat changed: %+v, was %+v", st, before)
	}
	if a.tree.lastZxid != b.tree.lastZxid {
		t.Errorf("lastZxid %d, twin's %d", a.tree.lastZxid, b.tree.lastZxid)
	}
	if err := a.tree.DivergeForTest("/missing", nil); err == nil {
		t.Error("DivergeForTest of a missing node: no error")
	}
}

// TestCorruptForTest checks that a corrupted node makes the incremental
// digest disagree with a recomputation, and that later writes keep them
// apart.
func TestCorruptForTest(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate("/x")
	if err := h.tree.CorruptForTest("/x", []byte("flipped")); err != nil {
		t.Fatal(err)
	}
	if h.tree.Digest() == h.tree.ComputeDigest() {
		t.Fatal("corruption left Digest() equal to ComputeDigest()")
	}
	h.apply(jute.OpSetData, &jute.SetDataRequest{Path: "/x", Data: []byte("y"), Version: -1})
	h.mustCreate("/z")
	if h.tree.Digest() == h.tree.ComputeDigest() {
		t.Error("writes after the corruption hid it")
	}
	if err := h.tree.CorruptForTest("/missing", nil); err == nil {
		t.Error("CorruptForTest of a missing node: no error")
	}
}

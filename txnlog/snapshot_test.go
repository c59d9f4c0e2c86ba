package txnlog

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/session"
)

// readAnnotatedHex reads a hex file in which "#" starts a comment.
func readAnnotatedHex(t *testing.T, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

func goldenSessions() *session.Table {
	tab := session.NewTable()
	tab.Add(0x0100000000000001, 30000)
	tab.SetOwner(0x0100000000000001, 2)
	return tab
}

var goldenHeader = SnapshotHeader{LastZxid: 0x500000007, AppliedIndex: 42,
	Ensemble: EnsembleID{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff},
	Digest:   0x0123456789abcdef, HasDigest: true}

func TestSnapshotHeadGolden(t *testing.T) {
	want := readAnnotatedHex(t, "testdata/snapshot_head.hex")
	got, err := SnapshotHead(goldenHeader, goldenSessions())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("snapshot head\n got %x\nwant %x", got, want)
	}
	h, tableLen, err := ReadSnapshotHeader(bytes.NewReader(want))
	if err != nil || h != goldenHeader || tableLen != uint64(len(want)-SnapshotHeaderSize) {
		t.Fatalf("ReadSnapshotHeader = %+v, %d, %v; want %+v, %d", h, tableLen, err, goldenHeader, len(want)-SnapshotHeaderSize)
	}
}

// A version 2 header (no ensemble id, no digest) is still read.
func TestReadSnapshotHeaderV2(t *testing.T) {
	v2 := readAnnotatedHex(t, "testdata/snapshot_head_v2.hex")
	h, tableLen, err := ReadSnapshotHeader(bytes.NewReader(v2))
	want := SnapshotHeader{LastZxid: goldenHeader.LastZxid, AppliedIndex: goldenHeader.AppliedIndex}
	if err != nil || h != want || tableLen != uint64(len(v2)-snapshotHeaderSizePlain) {
		t.Fatalf("ReadSnapshotHeader(v2) = %+v, %d, %v; want %+v", h, tableLen, err, want)
	}
}

// testSnapshot returns a whole FSM snapshot: the golden head and a tree
// with one node beside the system nodes.
func testSnapshot(t testing.TB) ([]byte, *datatree.Tree) {
	t.Helper()
	tree := datatree.New(datatree.Config{})
	res := tree.Apply(&datatree.Txn{Type: jute.OpCreate, Time: 5,
		Request: &jute.CreateRequest{Path: "/a", Data: []byte("x"), ACL: jute.OpenACLUnsafe}}, 0x500000007, nil)
	if res.Err != jute.OK {
		t.Fatalf("create: %v", res.Err)
	}
	head, err := SnapshotHead(goldenHeader, goldenSessions())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.Write(head)
	if err := tree.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), tree
}

func TestReadSnapshotRoundTrip(t *testing.T) {
	stream, tree := testSnapshot(t)
	st, err := ReadSnapshot(bytes.NewReader(stream), datatree.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if st.SnapshotHeader != goldenHeader {
		t.Errorf("header %+v, want %+v", st.SnapshotHeader, goldenHeader)
	}
	info, ok := st.Sessions.Get(0x0100000000000001)
	if st.Sessions.Len() != 1 || !ok || info.Timeout != 30000 || st.Sessions.Owner(0x0100000000000001) != 2 {
		t.Errorf("sessions %+v, want the one golden session", st.Sessions.All())
	}
	var want, got bytes.Buffer
	if err := tree.WriteSnapshot(&want); err != nil {
		t.Fatal(err)
	}
	if err := st.Tree.WriteSnapshot(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Error("the restored tree writes different bytes")
	}
}

func TestReadSnapshotRejects(t *testing.T) {
	stream, _ := testSnapshot(t)
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(stream)) }
	tests := []struct {
		name   string
		stream []byte
	}{
		{"empty", nil},
		{"cut header", stream[:SnapshotHeaderSize-1]},
		{"wrong magic", edit(func(b []byte) []byte { b[0] = 'z'; return b })},
		{"version 1", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 1); return b })},
		{"version 4", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 4); return b })},
		{"cut version 3 header", stream[:snapshotHeaderSizePlain+3]},
		{"huge table", edit(func(b []byte) []byte { binary.BigEndian.PutUint64(b[52:], 1<<40); return b })},
		{"table longer than its length", edit(func(b []byte) []byte { binary.BigEndian.PutUint64(b[52:], 20); return b })},
		{"table shorter than its length", edit(func(b []byte) []byte { binary.BigEndian.PutUint64(b[52:], 40); return b })},
		{"cut tree", stream[:len(stream)-3]},
		{"damaged tree", edit(func(b []byte) []byte { b[len(b)-10] ^= 1; return b })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadSnapshot(bytes.NewReader(tt.stream), datatree.Config{}); !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("ReadSnapshot: %v, want an error wrapping ErrBadSnapshot", err)
			}
		})
	}
}

// FuzzReadSnapshot: any input is read or refused, never a panic.
func FuzzReadSnapshot(f *testing.F) {
	stream, _ := testSnapshot(f)
	f.Add(stream)
	f.Add(stream[:SnapshotHeaderSize])
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ReadSnapshot(bytes.NewReader(b), datatree.Config{})
		if (st == nil) == (err == nil) {
			t.Fatalf("ReadSnapshot gave state %v and error %v", st != nil, err)
		}
	})
}

package zkimport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/adler32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
)

// treeBytes is the tree's own snapshot stream: equal bytes, equal trees
// (every node, stat and ACL).
func treeBytes(t testing.TB, tree *datatree.Tree) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tree.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBackupRoundTrip reads each snapshot ZooKeeper 3.8 wrote, writes it
// in ZooKeeper's format and reads that back: the same tree, sessions and
// zxid, the same bytes on a second write, and the import's reader (the
// one that follows FileSnap) accepts it.
func TestBackupRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdata, "snapshot.*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no snapshots in %s: %v", testdata, err)
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := ReadBackup(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			n, err := WriteSnapshot(&out, orig.Tree, orig.Sessions)
			if err != nil || n != int64(out.Len()) {
				t.Fatalf("WriteSnapshot: %d bytes, %v; buffer has %d", n, err, out.Len())
			}
			if _, err := readSnapshot(bytes.NewReader(out.Bytes()), nil); err != nil {
				t.Fatalf("the import's reader refuses the written snapshot: %v", err)
			}
			back, err := ReadBackup(bytes.NewReader(out.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(treeBytes(t, back.Tree), treeBytes(t, orig.Tree)) {
				t.Error("the tree read back differs")
			}
			if back.LastZxid != orig.LastZxid {
				t.Errorf("last zxid %#x, want %#x", back.LastZxid, orig.LastZxid)
			}
			if !slices.Equal(back.Sessions.All(), orig.Sessions.All()) {
				t.Errorf("sessions %v, want %v", back.Sessions.All(), orig.Sessions.All())
			}
			var again bytes.Buffer
			if _, err := WriteSnapshot(&again, back.Tree, back.Sessions); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Bytes(), out.Bytes()) {
				t.Error("a second write of the same state gives other bytes")
			}
		})
	}
}

// TestBackupRefusesDamage: every truncation of a written snapshot, and a
// flipped byte anywhere in it, is refused with ErrBadSnapshot.
func TestBackupRefusesDamage(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdata, "snapshot.*"))
	if len(files) == 0 {
		t.Fatal("no snapshots in testdata")
	}
	raw, err := os.ReadFile(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReadBackup(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var good bytes.Buffer
	if _, err := WriteSnapshot(&good, st.Tree, st.Sessions); err != nil {
		t.Fatal(err)
	}
	b := good.Bytes()
	refused := func(what string, in []byte) {
		t.Helper()
		_, err := ReadBackup(bytes.NewReader(in))
		if !errors.Is(err, ErrBadSnapshot) && !errors.Is(err, datatree.ErrBadSnapshot) {
			t.Fatalf("%s: got %v, want a bad-snapshot error", what, err)
		}
	}
	for _, tc := range []struct {
		name string
		step int
	}{{"truncated", 7}, {"flipped", 5}} {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < len(b); i += tc.step {
				switch tc.name {
				case "truncated":
					refused("truncated", b[:i])
				default:
					bad := slices.Clone(b)
					bad[i] ^= 0x41
					refused("flipped", bad)
				}
			}
		})
	}
}

// sealed appends fields to b, then ZooKeeper's seal over all of b.
func sealed(b []byte, fields ...[]byte) []byte {
	for _, f := range fields {
		b = append(b, f...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(adler32.Checksum(b)))
	return append(b, 0, 0, 0, 1, '/')
}

// TestBackupTrailer reads what ZooKeeper writes after a snapshot's seal:
// 3.9's last processed zxid (with or without the digest before it) is the
// backup's zxid when it is the larger, a trailer with a bad seal is
// refused, and other trailing bytes are ignored as before.
func TestBackupTrailer(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdata, "snapshot.*"))
	raw, err := os.ReadFile(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReadBackup(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := WriteSnapshot(&out, st.Tree, st.Sessions); err != nil {
		t.Fatal(err)
	}
	base := out.Bytes()
	u64 := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	digest := [][]byte{u64(7), {0, 0, 0, 2}, u64(0xdead)}
	high := uint64(st.LastZxid) + 0x100
	withDigest := sealed(slices.Clone(base), digest...)
	badSeal := sealed(slices.Clone(base), u64(high))
	badSeal[len(badSeal)-6] ^= 1
	cases := []struct {
		name string
		in   []byte
		want int64 // -1: refused
	}{
		{"none", base, st.LastZxid},
		{"last zxid", sealed(slices.Clone(base), u64(high)), int64(high)},
		{"digest and last zxid", sealed(withDigest, u64(high)), int64(high)},
		{"digest only", withDigest, st.LastZxid},
		{"lower last zxid", sealed(slices.Clone(base), u64(1)), st.LastZxid},
		{"bad seal", badSeal, -1},
		{"other bytes", append(slices.Clone(base), 1, 2, 3), st.LastZxid},
	}
	for _, tc := range cases {
		got, err := ReadBackup(bytes.NewReader(tc.in))
		switch {
		case tc.want == -1 && !errors.Is(err, ErrBadSnapshot):
			t.Errorf("%s: %v, want ErrBadSnapshot", tc.name, err)
		case tc.want != -1 && (err != nil || got.LastZxid != tc.want):
			t.Errorf("%s: %+v %v, want zxid %#x", tc.name, got, err, tc.want)
		}
	}
}

package replication

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/hashicorp/raft"
)

var testConf = raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: "1", Address: "127.0.0.1:1"}}}

func openTestStore(t *testing.T, base string) *snapshotStore {
	t.Helper()
	s, err := newSnapshotStore(base, 2, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeSnapshot creates a snapshot at index/term holding data, written in
// two pieces, and returns its ID.
func writeSnapshot(t *testing.T, s raft.SnapshotStore, index, term uint64, data []byte) string {
	t.Helper()
	_, trans := raft.NewInmemTransport("127.0.0.1:1") // FileSnapshotStore encodes the peers with it
	sink, err := s.Create(1, index, term, testConf, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	half := len(data) / 2
	for _, p := range [][]byte{data[:half], data[half:]} {
		if _, err := sink.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	return sink.ID()
}

func readSnapshot(t *testing.T, s raft.SnapshotStore, id string) (*raft.SnapshotMeta, []byte) {
	t.Helper()
	meta, rc, err := s.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return meta, b
}

func testData(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

func TestSnapshotStoreRoundTrip(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	data := testData(200 << 10)
	id := writeSnapshot(t, s, 42, 3, data)
	list, err := s.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v; want one snapshot", list, err)
	}
	m := list[0]
	if m.ID != id || m.Index != 42 || m.Term != 3 || m.Size != int64(len(data)) || m.ConfigurationIndex != 1 ||
		len(m.Configuration.Servers) != 1 || m.Configuration.Servers[0].Address != "127.0.0.1:1" {
		t.Errorf("listed meta = %+v", m)
	}
	meta, got := readSnapshot(t, s, id)
	if meta.Index != 42 || !bytes.Equal(got, data) {
		t.Errorf("Open gave index %d and %d bytes (equal %v), want 42 and the %d bytes written",
			meta.Index, len(got), bytes.Equal(got, data), len(data))
	}
}

// A snapshot written by hashicorp/raft's FileSnapshotStore, which records a
// CRC-64 and no CRC-32C (development builds before this store, and
// zkserverd import before it wrote through replication.Seed), is refused,
// and listed after the store's own.
func TestSnapshotStoreRefusesFileSnapshotStore(t *testing.T) {
	base := t.TempDir()
	old, err := raft.NewFileSnapshotStore(base, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	data := testData(70 << 10)
	oldID := writeSnapshot(t, old, 10, 1, data)
	s := openTestStore(t, base)
	if _, _, err := s.Open(oldID); !errors.Is(err, errSnapshotChecksum) {
		t.Errorf("Open of a CRC-64 snapshot: %v, want a checksum error", err)
	}
	newID := writeSnapshot(t, s, 20, 1, data[:100])
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].ID != newID || list[1].ID != oldID {
		t.Fatalf("List = %v, %v; want the new snapshot, then the old one", list, err)
	}
	if _, got := readSnapshot(t, s, newID); !bytes.Equal(got, data[:100]) {
		t.Error("the store's own snapshot read back different bytes")
	}
}

// corrupt flips one byte of the file at off.
func corrupt(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotStoreRefusesDamage(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"flipped byte", func(t *testing.T, dir string) { corrupt(t, filepath.Join(dir, snapStateFile), 1000) }},
		{"truncated", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, snapStateFile), 512); err != nil {
				t.Fatal(err)
			}
		}},
		{"appended", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, snapStateFile), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte{0}); err != nil {
				t.Fatal(err)
			}
		}},
		{"no checksum", func(t *testing.T, dir string) {
			meta := filepath.Join(dir, snapMetaFile)
			b, err := os.ReadFile(meta)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(meta, []byte(strings.Replace(string(b), `"CRC32C"`, `"X"`, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openTestStore(t, t.TempDir())
			id := writeSnapshot(t, s, 5, 1, testData(4096))
			tc.damage(t, filepath.Join(s.dir, id))
			if _, _, err := s.Open(id); !errors.Is(err, errSnapshotChecksum) {
				t.Errorf("Open = %v, want a checksum error", err)
			}
		})
	}
}

func TestSnapshotStoreRetainsTwo(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	var ids []string
	for i := range uint64(4) {
		ids = append(ids, writeSnapshot(t, s, 100+i, 2, testData(100)))
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].ID != ids[3] || list[1].ID != ids[2] {
		t.Fatalf("List = %v, %v; want the two newest, newest first", list, err)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil || len(entries) != 2 {
		t.Errorf("%d directories left (%v), want 2", len(entries), err)
	}
}

func TestSnapshotStoreUnfinished(t *testing.T) {
	base := t.TempDir()
	s := openTestStore(t, base)
	sink, err := s.Create(1, 7, 1, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(testData(10)); err != nil {
		t.Fatal(err)
	}
	crashed, err := s.Create(1, 8, 1, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Cancel(); err != nil {
		t.Fatal(err)
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Fatalf("List during an unfinished snapshot = %v, %v; want none", list, err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, sink.ID()+snapTmpSuffix)); !os.IsNotExist(err) {
		t.Errorf("a cancelled snapshot left its directory: %v", err)
	}
	// The second sink is never finished, as after a crash; reopening the
	// store removes its directory.
	openTestStore(t, base)
	if _, err := os.Stat(filepath.Join(s.dir, crashed.ID()+snapTmpSuffix)); !os.IsNotExist(err) {
		t.Errorf("an unfinished snapshot's directory survived reopening: %v", err)
	}
	if _, err := s.Create(0, 9, 1, testConf, 1, nil); err == nil {
		t.Error("Create accepted snapshot version 0")
	}
}

func TestSnapshotStoreSkipsUnreadableMeta(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	good := writeSnapshot(t, s, 1, 1, testData(10))
	bad := writeSnapshot(t, s, 2, 1, testData(10))
	if err := os.WriteFile(filepath.Join(s.dir, bad, snapMetaFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].ID != good {
		t.Errorf("List = %v, %v; want only %s", list, err, good)
	}
}

// BenchmarkSnapshotStore writes a 16 MiB snapshot in 64 KiB pieces, as the
// FSM does, and opens it (the checksum pass before a restore), with this
// store writing with O_DIRECT (where the file system allows it) and through
// the page cache, and with hashicorp/raft's FileSnapshotStore. The time is
// wall time; the direct writes wait for the disk, and their gain is CPU
// (run one at a time under time(1) to see it).
func BenchmarkSnapshotStore(b *testing.B) {
	data := testData(16 << 20)
	stores := []struct {
		name string
		open func(base string) (raft.SnapshotStore, error)
	}{
		{"crc32c-direct", func(base string) (raft.SnapshotStore, error) {
			return newSnapshotStore(base, 2, slog.New(slog.DiscardHandler))
		}},
		{"crc32c-pagecache", func(base string) (raft.SnapshotStore, error) {
			s, err := newSnapshotStore(base, 2, slog.New(slog.DiscardHandler))
			if s != nil {
				s.direct = 0
			}
			return s, err
		}},
		{"FileSnapshotStore", func(base string) (raft.SnapshotStore, error) {
			return raft.NewFileSnapshotStore(base, 2, io.Discard)
		}},
	}
	_, trans := raft.NewInmemTransport("127.0.0.1:1")
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s, err := st.open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			for i := 0; b.Loop(); i++ {
				sink, err := s.Create(1, uint64(i+1), 1, testConf, 1, trans)
				if err != nil {
					b.Fatal(err)
				}
				for off := 0; off < len(data); off += 64 << 10 {
					if _, err := sink.Write(data[off : off+64<<10]); err != nil {
						b.Fatal(err)
					}
				}
				if err := sink.Close(); err != nil {
					b.Fatal(err)
				}
				_, rc, err := s.Open(sink.ID())
				if err != nil {
					b.Fatal(err)
				}
				rc.Close()
			}
		})
	}
}

// A snapshot larger than the writeback step is handed to the disk step by
// step while it is written, and reads back intact.
func TestSnapshotStorePacedWriteback(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	s.writeback, s.direct = 16<<10, 0
	sink, err := s.Create(1, 3, 1, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := testData(300 << 10)
	for off := 0; off < len(data); off += 10 << 10 {
		if _, err := sink.Write(data[off:min(off+10<<10, len(data))]); err != nil {
			t.Fatal(err)
		}
	}
	k := sink.(*snapshotSink)
	if runtime.GOOS == "linux" && (!k.paced || k.prev == 0 || k.started <= k.prev) {
		t.Errorf("after %d bytes in steps of %d: paced %v, last steps at %d and %d", k.size, s.writeback, k.paced, k.prev, k.started)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if _, got := readSnapshot(t, s, sink.ID()); !bytes.Equal(got, data) {
		t.Error("a paced snapshot read back different bytes")
	}
}

// Where the system refuses paced writeback (here: a pipe), the sink stops
// pacing and goes on writing.
func TestSnapshotSinkWritebackRefused(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	s := openTestStore(t, t.TempDir())
	s.writeback = 1 << 10
	k := &snapshotSink{store: s, file: w, paced: true}
	data := testData(8 << 10)
	if n, err := k.Write(data); err != nil || n != len(data) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if k.paced {
		t.Error("still pacing after the system refused")
	}
	got := make([]byte, len(data))
	if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the pipe got other bytes (%v)", err)
	}
}

// directSupported reports whether dir's file system accepts O_DIRECT.
func directSupported(t *testing.T, dir string) bool {
	t.Helper()
	f, err := openDirect(filepath.Join(dir, "probe"))
	if err != nil {
		t.Logf("no O_DIRECT here: %v", err)
		return false
	}
	f.Close()
	return os.Remove(filepath.Join(dir, "probe")) == nil
}

// writeInPieces writes data to sink in pieces of the given size.
func writeInPieces(t *testing.T, sink raft.SnapshotSink, data []byte, piece int) {
	t.Helper()
	for off := 0; off < len(data); off += piece {
		if n, err := sink.Write(data[off:min(off+piece, len(data))]); err != nil || n != min(piece, len(data)-off) {
			t.Fatalf("Write at %d = %d, %v", off, n, err)
		}
	}
}

// Where the file system allows it, a snapshot is written with O_DIRECT
// in whole aligned chunks and its unaligned tail after; either way it
// reads back intact, with its checksum.
func TestSnapshotStoreDirectWrites(t *testing.T) {
	for _, size := range []int{0, 100, 64 << 10, 300<<10 + 123} {
		dir := t.TempDir()
		s := openTestStore(t, dir)
		s.direct = 64 << 10
		sink, err := s.Create(1, 3, 1, testConf, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		k := sink.(*snapshotSink)
		if direct := directSupported(t, dir); direct != (k.buf != nil) {
			t.Fatalf("size %d: O_DIRECT available %v, sink buffers for it %v", size, direct, k.buf != nil)
		}
		if k.buf != nil && (uintptr(unsafe.Pointer(unsafe.SliceData(k.buf)))%directAlign != 0 || cap(k.buf) != s.direct) {
			t.Fatalf("direct buffer of capacity %d is not aligned to %d", cap(k.buf), directAlign)
		}
		data := testData(size)
		writeInPieces(t, sink, data, 10<<10+7)
		if k.buf != nil && len(k.buf) != size%s.direct {
			t.Errorf("size %d: %d bytes buffered, want the %d past the last whole chunk", size, len(k.buf), size%s.direct)
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
		if _, got := readSnapshot(t, s, sink.ID()); !bytes.Equal(got, data) {
			t.Errorf("size %d: a direct snapshot read back different bytes", size)
		}
	}
}

// A direct write the file system refuses (here: a chunk that is not a
// multiple of the block size) turns O_DIRECT off; the snapshot goes on
// through the page cache, paced, and reads back intact.
func TestSnapshotStoreDirectRefused(t *testing.T) {
	dir := t.TempDir()
	if !directSupported(t, dir) {
		t.Skip("this file system refuses O_DIRECT at open: TestSnapshotStoreDirectWrites covers that path")
	}
	s := openTestStore(t, dir)
	s.direct, s.writeback = 1000, 16<<10
	sink, err := s.Create(1, 3, 1, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := testData(100 << 10)
	writeInPieces(t, sink, data, 3000)
	if k := sink.(*snapshotSink); k.buf != nil || !k.paced {
		t.Errorf("after a refused direct write: direct buffer %v, paced %v", k.buf != nil, k.paced)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if _, got := readSnapshot(t, s, sink.ID()); !bytes.Equal(got, data) {
		t.Error("a snapshot written after a refused direct write read back different bytes")
	}
}

package replication

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
)

// countingFile counts the Syncs that reach the real file.
type countingFile struct {
	types.WritableFile
	syncs *int
}

func (f countingFile) Sync() error {
	*f.syncs++
	return f.WritableFile.Sync()
}

// countingFS is vfs with every Sync that reaches a file counted in syncs.
func countingFS(vfs types.VFS, syncs *int) types.VFS {
	return wrapFS{vfs, func(w types.WritableFile) types.WritableFile { return countingFile{w, syncs} }}
}

// TestNoSyncFSNeverSyncs: with forceSync=no the WAL's files are written but
// never fsynced, whether created or reopened.
func TestNoSyncFSNeverSyncs(t *testing.T) {
	dir := t.TempDir()
	syncs := 0
	fs := noSyncFS(countingFS(walfs.New(), &syncs))
	w, err := fs.Create(dir, "seg", 4096)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte("entry"), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, err = fs.OpenWriter(dir, "seg")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := w.ReadAt(buf, 0); err != nil || string(buf) != "entry" {
		t.Fatalf("read back %q, %v", buf, err)
	}
	if syncs != 0 {
		t.Fatalf("%d fsyncs reached the file", syncs)
	}
	// The counting wrapper itself must see syncs when not wrapped.
	plain := countingFS(walfs.New(), &syncs)
	w2, err := plain.Create(dir, "seg2", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	w2.Sync()
	if syncs != 1 {
		t.Fatalf("control: %d syncs counted, want 1", syncs)
	}
}

// writeRecord is one WriteAt that reached the file under zeroFS.
type writeRecord struct {
	off, n int64
	zeros  bool
}

// recordingFile records the writes that reach the file.
type recordingFile struct {
	types.WritableFile
	writes *[]writeRecord
}

func (f recordingFile) WriteAt(p []byte, off int64) (int, error) {
	*f.writes = append(*f.writes, writeRecord{off, int64(len(p)), !slices.ContainsFunc(p, func(b byte) bool { return b != 0 })})
	return f.WritableFile.WriteAt(p, off)
}

// Stat lets zeroFS learn a reopened file's size, as it does from raft-wal's.
func (f recordingFile) Stat() (os.FileInfo, error) {
	return f.WritableFile.(interface{ Stat() (os.FileInfo, error) }).Stat()
}

// recordingFS is vfs with every write that reaches a file recorded in writes.
func recordingFS(vfs types.VFS, writes *[]writeRecord) types.VFS {
	return wrapFS{vfs, func(w types.WritableFile) types.WritableFile { return recordingFile{w, writes} }}
}

// checkZeroedAhead checks the writes zeroFS made for data written at
// increasing offsets from start: every data write lands on bytes zeroed
// before it, zeros (the log writes no all-zero entries here) never cover
// data already written, and nothing is
// written past the file's size.
func checkZeroedAhead(t *testing.T, writes []writeRecord, start, size int64) {
	t.Helper()
	zeroed, written := start, start
	for _, w := range writes {
		switch {
		case w.off+w.n > size:
			t.Fatalf("write [%d, %d) past the file's size %d", w.off, w.off+w.n, size)
		case w.zeros:
			if w.off != zeroed || w.off < written {
				t.Fatalf("zeros at [%d, %d): zeroed to %d, data written to %d", w.off, w.off+w.n, zeroed, written)
			}
			zeroed = w.off + w.n
		default:
			if w.off+w.n > zeroed && zeroed < size {
				t.Fatalf("data at [%d, %d) past the zeroed %d", w.off, w.off+w.n, zeroed)
			}
			written = w.off + w.n
		}
	}
	if zeroed == start {
		t.Fatal("nothing was zeroed ahead")
	}
}

// TestZeroFSZeroesAhead: zeroFS zeroes a segment a chunk ahead of the
// log's writes, within the preallocated size, both in a new file and in a
// reopened one, where it starts at the first write and leaves the bytes
// before it alone.
func TestZeroFSZeroesAhead(t *testing.T) {
	dir := t.TempDir()
	const size = 4*zeroChunk + 1000
	var writes []writeRecord
	fs := zeroFS{VFS: recordingFS(walfs.New(), &writes)}
	w, err := fs.Create(dir, "seg", size)
	if err != nil {
		t.Fatal(err)
	}
	entry := bytes.Repeat([]byte{0xab}, 3000)
	off := int64(0)
	for off+int64(len(entry)) <= 2*zeroChunk {
		if _, err := w.WriteAt(entry, off); err != nil {
			t.Fatal(err)
		}
		off += int64(len(entry))
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkZeroedAhead(t, writes, 0, size)

	writes = nil
	w, err = fs.OpenWriter(dir, "seg")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for off+int64(len(entry)) <= size {
		if _, err := w.WriteAt(entry, off); err != nil {
			t.Fatal(err)
		}
		off += int64(len(entry))
	}
	checkZeroedAhead(t, writes, writes[0].off, size)
	if writes[0].off != 2*zeroChunk/int64(len(entry))*int64(len(entry)) {
		t.Fatalf("reopened file zeroed from %d", writes[0].off)
	}
	got := make([]byte, off)
	if _, err := w.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < off; i += int64(len(entry)) {
		if !bytes.Equal(got[i:i+int64(len(entry))], entry) {
			t.Fatalf("entry at %d was overwritten", i)
		}
	}
}

// TestZeroFSSync: the first Sync of a segment is the wrapped file's own (it
// also syncs the directory), later ones are fdatasyncs that keep the data,
// and a sync failure is returned.
func TestZeroFSSync(t *testing.T) {
	dir := t.TempDir()
	syncs := 0
	fs := zeroFS{VFS: countingFS(walfs.New(), &syncs)}
	w, err := fs.Create(dir, "counted", 8192)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if syncs != 3 {
		t.Fatalf("%d syncs reached a file that is not raft-wal's, want 3", syncs)
	}
	w.Close()

	real, err := zeroFS{VFS: walfs.New()}.Create(dir, "real", 8192)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := real.WriteAt([]byte{byte('a' + i)}, int64(i)); err != nil {
			t.Fatal(err)
		}
		if err := real.Sync(); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
	}
	if !real.(*zeroFile).synced.Load() {
		t.Fatal("first sync not recorded")
	}
	real.Close()
	got, err := os.ReadFile(filepath.Join(dir, "real"))
	if err != nil || string(got[:3]) != "abc" {
		t.Fatalf("read back %q, %v", got[:3], err)
	}
	if err := real.Sync(); err == nil {
		t.Fatal("fdatasync of a closed file succeeded")
	}
}

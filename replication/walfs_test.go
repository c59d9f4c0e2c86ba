package replication

import (
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

type countingFS struct {
	types.VFS
	syncs *int
}

func (f countingFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.VFS.Create(dir, name, size)
	return countingFile{w, f.syncs}, err
}

func (f countingFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	return countingFile{w, f.syncs}, err
}

// TestNoSyncFSNeverSyncs: with forceSync=no the WAL's files are written but
// never fsynced, whether created or reopened.
func TestNoSyncFSNeverSyncs(t *testing.T) {
	dir := t.TempDir()
	syncs := 0
	fs := noSyncFS{countingFS{walfs.New(), &syncs}}
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
	plain := countingFS{walfs.New(), &syncs}
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

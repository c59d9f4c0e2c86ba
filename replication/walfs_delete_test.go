package replication

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// TestShrinkFile: a file is truncated to nothing and kept; a missing one is
// an error that says so.
func TestShrinkFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		size int64
	}{
		{"empty", 0},
		{"under a step", shrinkStep / 3},
		{"steps and a part", 3*shrinkStep + 12345},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, make([]byte, tc.size), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := shrinkFile(path); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil || fi.Size() != 0 {
				t.Fatalf("after shrinking: %v, err %v; want an empty file", fi, err)
			}
		})
	}
	if err := shrinkFile(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("missing file: err %v, want not-exist", err)
	}
}

// blockingDeleteFS records deletions, each after it is let through.
type blockingDeleteFS struct {
	types.VFS
	release chan struct{}
	mu      sync.Mutex
	deleted []string
	sizes   []int64 // the file's size when its deletion began
}

func (f *blockingDeleteFS) Delete(dir, name string) error {
	path := filepath.Join(dir, name)
	fi, err := os.Stat(path)
	<-f.release
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, name)
	if err == nil {
		f.sizes = append(f.sizes, fi.Size())
	}
	return os.Remove(path)
}

// TestSegmentDeleterDeletesInTheBackground: the WAL's Delete returns while
// the file is still there; the deleter then shrinks and deletes the files in
// order, and wait returns once all are gone.
func TestSegmentDeleterDeletesInTheBackground(t *testing.T) {
	dir := t.TempDir()
	names := []string{"00000000000000000001-0000000000000001.wal", "00000000000000000100-0000000000000002.wal"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), make([]byte, 2*shrinkStep+1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inner := &blockingDeleteFS{release: make(chan struct{})}
	d := &segmentDeleter{VFS: inner, log: slog.New(slog.DiscardHandler)}
	returned := make(chan error, len(names))
	go func() {
		for _, n := range names {
			returned <- d.Delete(dir, n)
		}
	}()
	for range names {
		select {
		case err := <-returned:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Delete waited for the file to be deleted")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, names[1])); err != nil {
		t.Fatalf("the second file went before the deleter was let through: %v", err)
	}
	close(inner.release)
	if err := d.wait(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Fatalf("%s still there after wait: %v", n, err)
		}
	}
	if len(inner.deleted) != 2 || inner.deleted[0] != names[0] || inner.deleted[1] != names[1] {
		t.Fatalf("deleted %v, want %v", inner.deleted, names)
	}
	for i, sz := range inner.sizes {
		if sz != 0 {
			t.Fatalf("%s was %d bytes when deleted, want shrunk to 0", names[i], sz)
		}
	}
}

// TestWALCompactionDeletesThroughTheDeleter: with raft-wal behind the deleter,
// as openWAL builds it, the segments a head compaction frees are gone once
// the deleter is done, and the rest of the log still reads.
func TestWALCompactionDeletesThroughTheDeleter(t *testing.T) {
	dir := t.TempDir()
	d := &segmentDeleter{VFS: walfs.New(), log: slog.New(slog.DiscardHandler)}
	bolt := &metadb.BoltMetaDB{}
	store, err := wal.Open(dir, wal.WithMetaStore(bolt), wal.WithSegmentSize(64<<10),
		wal.WithSegmentFiler(segment.NewFiler(dir, d)))
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	data := bytes.Repeat([]byte{7}, 4<<10)
	const last = 200 // ~800 KiB: a dozen segments of 64 KiB
	for i := uint64(1); i <= last; i++ {
		if err := store.StoreLog(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	before := segmentFiles(t, dir)
	if len(before) < 8 {
		t.Fatalf("%d segment files for %d entries of 4 KiB; want many", len(before), last)
	}
	if err := store.DeleteRange(1, last-10); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(); err != nil {
		t.Fatal(err)
	}
	after := segmentFiles(t, dir)
	if len(after) > 2 {
		t.Fatalf("%d segment files left after compacting to the last 10 entries: %v", len(after), after)
	}
	reopened, err := wal.Open(dir, wal.WithMetaStore(bolt), wal.WithSegmentSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	var l raft.Log
	if err := reopened.GetLog(last, &l); err != nil || !bytes.Equal(l.Data, data) {
		t.Fatalf("entry %d after compaction: %v", last, err)
	}
	if err := reopened.GetLog(1, &l); err == nil {
		t.Fatal("entry 1 still readable after compaction")
	}
}

func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".wal") {
			names = append(names, e.Name())
		}
	}
	return names
}

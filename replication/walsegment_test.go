package replication

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWALSegmentSize: the wal store reserves segments of the configured
// size (wal.segmentSizeBytes), raft-wal's 64 MiB when none is set.
func TestWALSegmentSize(t *testing.T) {
	tests := []struct {
		name string
		size int
		want int64 // bytes of the first segment file
	}{
		{"default", 0, 64 << 20},
		{"1 MiB", 1 << 20, 1 << 20},
		{"4 MiB", 4 << 20, 4 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			n := openNodeWith(t, Config{DataDir: dir, LogStore: "wal", WALSegmentSize: tt.size})
			await(t, n.Submit(createTxn("/a")))
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			segs, err := filepath.Glob(filepath.Join(dir, "raft", "wal", "*.wal"))
			if err != nil || len(segs) == 0 {
				t.Fatalf("no segment files in %s (%v)", filepath.Join(dir, "raft", "wal"), err)
			}
			info, err := os.Stat(segs[0])
			if err != nil {
				t.Fatal(err)
			}
			if info.Size() != tt.want {
				t.Fatalf("segment %s has %d bytes, want %d", filepath.Base(segs[0]), info.Size(), tt.want)
			}
		})
	}
}

package replication

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// lastSegment returns the path of the WAL's newest segment file in dir.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "raft", "wal", "*.wal"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment files: %v", err)
	}
	slices.Sort(segs)
	return segs[len(segs)-1]
}

// commitFrameAt returns the offset of the last commit frame in a segment:
// the 8-byte frame holding the last non-zero byte (zeroFS zeroes the file
// ahead of the log). Its type byte is 3 (raft-wal's FrameCommit).
func commitFrameAt(t *testing.T, seg []byte) int {
	t.Helper()
	end := len(bytes.TrimRight(seg, "\x00"))
	if end == 0 {
		t.Fatal("empty segment")
	}
	at := (end - 1) &^ 7
	if seg[at] != 3 {
		t.Fatalf("byte %d is %d, not a commit frame", at, seg[at])
	}
	return at
}

// TestTornLogTailRecovers: a last log record torn by a power loss (its
// commit frame missing, its bytes damaged, or the file cut inside it) is
// dropped when the WAL opens; every entry before it is kept, and the
// member appends after it and keeps that over another restart.
func TestTornLogTailRecovers(t *testing.T) {
	cases := []struct {
		name string
		tear func(t *testing.T, path string, seg []byte, commit int)
	}{
		{"commit frame missing", func(t *testing.T, path string, seg []byte, commit int) {
			clear(seg[commit : commit+8])
			writeFile(t, path, seg)
		}},
		{"last record damaged", func(t *testing.T, path string, seg []byte, commit int) {
			seg[commit-12] ^= 0xff // inside the last entry's payload
			writeFile(t, path, seg)
		}},
		{"file cut inside the last record", func(t *testing.T, path string, seg []byte, commit int) {
			if err := os.Truncate(path, int64(commit-5)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	const writes = 10
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := openNodeWith(t, Config{DataDir: dir, LogStore: "wal"})
			for i := range writes {
				if o := await(t, n.Submit(createTxn(fmt.Sprintf("/t%d", i)))); o.Err != nil || o.Result.Err != jute.OK {
					t.Fatalf("write %d: %+v", i, o)
				}
			}
			n.Close()
			path := lastSegment(t, dir)
			seg, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.tear(t, path, seg, commitFrameAt(t, seg))

			n = openNodeWith(t, Config{DataDir: dir})
			for i := range writes - 1 {
				if !hasNode(n, fmt.Sprintf("/t%d", i)) {
					t.Fatalf("complete entry /t%d lost", i)
				}
			}
			if hasNode(n, fmt.Sprintf("/t%d", writes-1)) {
				t.Fatal("the torn last record was applied")
			}
			if o := await(t, n.Submit(createTxn("/new"))); o.Err != nil || o.Result.Err != jute.OK {
				t.Fatalf("write after recovery: %+v", o)
			}
			n.Close()
			n = openNodeWith(t, Config{DataDir: dir})
			defer n.Close()
			if !hasNode(n, "/new") || !hasNode(n, "/t0") || hasNode(n, fmt.Sprintf("/t%d", writes-1)) {
				t.Fatal("state after a second restart differs")
			}
		})
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshotDirs returns the snapshot directories under a data directory,
// oldest first.
func snapshotDirs(t *testing.T, dir string) []string {
	t.Helper()
	dirs, err := SnapshotDirs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range slices.Backward(dirs) {
		out = append(out, d.Path)
	}
	return out
}

// TestDamagedSnapshotAtStart: a newest snapshot that fails its checksum, or
// whose metadata does not read, is set aside when the snapshot before it
// and the log replace it, and every write is there; when the log no longer
// reaches back to that snapshot, the member refuses to start with an
// error naming the damaged file.
func TestDamagedSnapshotAtStart(t *testing.T) {
	cases := []struct {
		store   string
		between int    // writes between the two snapshots (TrailingLogs is 16)
		file    string // the file damaged
		wantErr bool
	}{
		{"wal", 3, snapStateFile, false},
		{"boltdb", 3, snapStateFile, false},
		{"boltdb", 3, snapMetaFile, false},
		{"wal", 40, snapStateFile, true},
		{"boltdb", 40, snapStateFile, true},
		{"boltdb", 40, snapMetaFile, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d between/%s", tc.store, tc.between, tc.file), func(t *testing.T) {
			dir := t.TempDir()
			n := openNodeWith(t, Config{DataDir: dir, LogStore: tc.store})
			var paths []string
			write := func(count int) {
				for range count {
					p := fmt.Sprintf("/s%d", len(paths))
					if o := await(t, n.Submit(createTxn(p))); o.Err != nil || o.Result.Err != jute.OK {
						t.Fatalf("write %s: %+v", p, o)
					}
					paths = append(paths, p)
				}
			}
			write(5)
			if err := n.Snapshot(); err != nil {
				t.Fatal(err)
			}
			write(tc.between)
			if err := n.Snapshot(); err != nil {
				t.Fatal(err)
			}
			write(5)
			n.Close()
			snaps := snapshotDirs(t, dir)
			if len(snaps) != 2 {
				t.Fatalf("%d snapshots, want 2", len(snaps))
			}
			damaged := filepath.Join(snaps[1], tc.file)
			if tc.file == snapMetaFile {
				if err := os.Truncate(damaged, 20); err != nil { // a torn write
					t.Fatal(err)
				}
			} else {
				corrupt(t, damaged, 40)
			}

			n, err := Open(Config{DataDir: dir, ForceSync: true, TrailingLogs: 16})
			if tc.wantErr {
				if err == nil {
					n.Close()
					t.Fatal("started over a damaged snapshot the log cannot replace")
				}
				if !strings.Contains(err.Error(), damaged) {
					t.Fatalf("error %q does not name %s", err, damaged)
				}
				return
			}
			if err != nil {
				t.Fatalf("did not start from the snapshot before the damaged one: %v", err)
			}
			n.Close()
			n = openNodeWith(t, Config{DataDir: dir})
			defer n.Close()
			for _, p := range paths {
				if !hasNode(n, p) {
					t.Fatalf("write %s lost", p)
				}
			}
			if _, err := os.Stat(snaps[1] + damagedSuffix); err != nil {
				t.Fatalf("damaged snapshot not kept aside: %v", err)
			}
			if err := n.Snapshot(); err != nil {
				t.Fatalf("snapshot after the restart: %v", err)
			}
		})
	}
}

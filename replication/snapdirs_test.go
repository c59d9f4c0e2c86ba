package replication

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSnapshotDirs: only directories named exactly term-index-milliseconds
// are listed, newest first; unfinished (.tmp) and damaged (.damaged)
// snapshots, names with other text, files and a missing directory are not.
func TestSnapshotDirs(t *testing.T) {
	if dirs, err := SnapshotDirs(filepath.Join(t.TempDir(), "none")); err != nil || len(dirs) != 0 {
		t.Fatalf("a missing data directory lists %v, %v; want nothing", dirs, err)
	}
	dataDir := t.TempDir()
	base := filepath.Join(dataDir, "raft", snapshotsDir)
	for _, name := range []string{
		"2-10-1700000000000",
		"2-9-1700000009000",
		"3-11-1700000001000" + snapTmpSuffix,
		"9-99-1700000002000" + damagedSuffix,
		"9-98-1700000003000x",
		"9-97-1700000003000-old",
		"+9-96-1700000003000",
		"9--1700000003000",
		"9-95",
		"3-11-1700000000500",
		"3-11-1700000000400",
		"1-1-99999999999999999999", // milliseconds beyond an int64
	} {
		if err := os.MkdirAll(filepath.Join(base, name), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(base, "4-12-1700000004000"), nil) // a file, not a directory
	dirs, err := SnapshotDirs(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range dirs {
		ids = append(ids, d.ID)
		if d.Path != filepath.Join(base, d.ID) {
			t.Errorf("%s: path %s", d.ID, d.Path)
		}
	}
	want := []string{"3-11-1700000000500", "3-11-1700000000400", "2-10-1700000000000", "2-9-1700000009000"}
	if !slices.Equal(ids, want) {
		t.Fatalf("listed %v, want %v", ids, want)
	}
	if d := dirs[0]; d.Term != 3 || d.Index != 11 || d.Taken.UnixMilli() != 1700000000500 {
		t.Fatalf("first %+v, want term 3, index 11, taken at 1700000000500", d)
	}
}

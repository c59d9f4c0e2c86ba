package replication

// The snapshot directories of a data directory: the one scan of them,
// used by the snapshot store (snapstore.go), the check at start
// (snapcheck.go) and the AdminServer's last_snapshot (server/ops).

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SnapshotDir is the directory of one snapshot in a member's snapshot
// store, named term-index-milliseconds as hashicorp/raft's
// FileSnapshotStore names it (snapstore.go).
type SnapshotDir struct {
	// Path is the directory; ID is its name, raft's id of the snapshot.
	Path, ID    string
	Term, Index uint64
	// Taken is when the snapshot was begun, as its name records it.
	Taken time.Time
}

// SnapshotDirs lists the snapshot directories under a member's data
// directory (Config.DataDir: a server's dataDir with version-2 appended),
// newest first: by term, then index, then time. Only directories named
// exactly term-index-milliseconds are listed; an unfinished snapshot
// (".tmp"), one set aside as damaged (".damaged", snapcheck.go) and any
// other name are not. Whether a listed snapshot is complete and intact is
// for the caller to check. A data directory without snapshots lists none.
func SnapshotDirs(dataDir string) ([]SnapshotDir, error) {
	return scanSnapshots(filepath.Join(dataDir, "raft", snapshotsDir))
}

// scanSnapshots is SnapshotDirs over a snapshot store's own directory.
func scanSnapshots(dir string) ([]SnapshotDir, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replication: list snapshots: %w", err)
	}
	var out []SnapshotDir
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d, ok := parseSnapshotID(e.Name())
		if !ok {
			continue
		}
		d.Path = filepath.Join(dir, d.ID)
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b SnapshotDir) int {
		return cmp.Or(cmp.Compare(b.Term, a.Term), cmp.Compare(b.Index, a.Index),
			b.Taken.Compare(a.Taken), strings.Compare(b.ID, a.ID))
	})
	return out, nil
}

// parseSnapshotID reads a snapshot directory's name: three decimal numbers
// joined by "-" and nothing else (no sign, no suffix).
func parseSnapshotID(name string) (SnapshotDir, bool) {
	parts := strings.Split(name, "-")
	if len(parts) != 3 {
		return SnapshotDir{}, false
	}
	var nums [3]uint64
	for i, p := range parts {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return SnapshotDir{}, false
		}
		bits := 64
		if i == 2 {
			bits = 63 // milliseconds: an int64
		}
		v, err := strconv.ParseUint(p, 10, bits)
		if err != nil {
			return SnapshotDir{}, false
		}
		nums[i] = v
	}
	return SnapshotDir{ID: name, Term: nums[0], Index: nums[1], Taken: time.UnixMilli(int64(nums[2]))}, true
}

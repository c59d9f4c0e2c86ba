package bench

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// DefaultSnapMatch matches the base names of snapshot files: ZooKeeper's
// snapshot.<zxid> and the state.bin of a raft snapshot directory
// (zkserverd's version-2/raft/snapshots/<term>-<index>-<ms>/).
const DefaultSnapMatch = `^(snapshot\.[0-9a-f]+|state\.bin)$`

// SnapFile is one snapshot file written while a snapshot watcher polled:
// when it was first seen, when it last grew, and its largest size. Its
// write time is Last-First, to the poll interval. Only growth counts: a
// server may free an old snapshot by truncating it a little at a time
// (zkserverd does, 1 MiB per step), which is no write.
type SnapFile struct {
	Path    string    `json:"path"`
	Bytes   int64     `json:"bytes"`
	First   time.Time `json:"first_seen"`
	Last    time.Time `json:"last_change"`
	Seconds float64   `json:"seconds"`
}

// snapWatch polls directories for snapshot files being written. It is
// used by one goroutine.
type snapWatch struct {
	dirs  []string
	match *regexp.Regexp
	seen  map[string]*SnapFile
	grew  map[string]bool  // seen growing, or under a ".tmp" directory
	old   map[string]int64 // files present at the first poll, by size
	polls int
}

func newSnapWatch(dirs []string, match *regexp.Regexp) *snapWatch {
	return &snapWatch{dirs: dirs, match: match, seen: map[string]*SnapFile{}, grew: map[string]bool{}, old: map[string]int64{}}
}

// snapKey names a file across the rename of a directory that ends in
// ".tmp" while it is written (raft's file snapshot store does that).
func snapKey(path string) string {
	parts := strings.Split(path, string(filepath.Separator))
	for i, p := range parts {
		parts[i] = strings.TrimSuffix(p, ".tmp")
	}
	return strings.Join(parts, string(filepath.Separator))
}

// poll records the snapshot files' sizes at now.
func (w *snapWatch) poll(now time.Time) {
	first := w.polls == 0
	w.polls++
	for _, d := range w.dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !w.match.MatchString(e.Name()) {
				return nil // a directory renamed under the walk is seen next poll
			}
			info, err := e.Info()
			if err != nil {
				return nil
			}
			key := snapKey(p)
			w.note(key, info.Size(), now, first)
			if !first && key != p {
				w.grew[key] = true // being written: raft renames the directory when done
			}
			return nil
		})
	}
}

// note records one file's size.
func (w *snapWatch) note(key string, size int64, now time.Time, first bool) {
	if first {
		w.old[key] = size
		return
	}
	if s, ok := w.seen[key]; ok {
		if size > s.Bytes {
			s.Bytes, s.Last = size, now
			w.grew[key] = true
		}
		return
	}
	if was, ok := w.old[key]; ok && was == size {
		return
	}
	w.seen[key] = &SnapFile{Path: key, Bytes: size, First: now, Last: now}
}

// files returns the snapshot files written since the first poll, oldest
// first: those seen growing or in a ".tmp" directory (a file first seen
// complete was there before, missed by a walk that raced a rename), and
// seen holding bytes at least once.
func (w *snapWatch) files() []SnapFile {
	out := make([]SnapFile, 0, len(w.seen))
	for key, s := range w.seen {
		if !w.grew[key] || s.Bytes == 0 {
			continue // not written since the first poll, or never seen with content (raft dropped it before a poll saw it written)
		}
		f := *s
		f.Seconds = f.Last.Sub(f.First).Seconds()
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].First.Before(out[j].First) })
	return out
}

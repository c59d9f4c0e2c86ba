package replication

// Damaged snapshots at start.
//
// raft restores the newest snapshot that opens and replays the log after
// it. A snapshot that fails its checksum (snapstore.go) is skipped by raft,
// which then restores the one before; but the log may no longer hold the
// entries between the two (compaction removed them after the newer
// snapshot), and raft would then fail at its first apply, or start from an
// empty state if no snapshot opens at all. checkAtOpen decides before raft
// starts: an older intact snapshot, or the empty state, is used only if the
// log holds every entry after it up to the damaged snapshot; the damaged
// snapshot is then renamed with damagedSuffix, kept for inspection and
// never listed again. Otherwise the member refuses to start with an error
// naming the damaged file.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// damagedSuffix marks a snapshot directory that failed its checks at start.
const damagedSuffix = ".damaged"

// snapCandidate is a snapshot directory as found at start: its metadata if
// it reads, else the term and index its name carries, and the fault found.
type snapCandidate struct {
	id          string
	term, index uint64
	file        string // the damaged file, when damaged
	err         error  // nil: intact
}

// checkAtOpen checks the snapshots, newest first, until an intact one,
// against the log in logs: see the top of this file.
func (s *snapshotStore) checkAtOpen(logs raft.LogStore) error {
	cands, err := s.candidates()
	if err != nil {
		return err
	}
	var damaged []*snapCandidate
	base := uint64(0) // the index of the intact snapshot raft will restore
	for _, c := range cands {
		if c.err == nil {
			c.err = s.verifyAtOpen(c)
		}
		if c.err == nil {
			base = c.index
			break
		}
		s.log.Error("snapshot damaged", "file", c.file, "err", c.err)
		damaged = append(damaged, c)
	}
	if len(damaged) == 0 {
		return nil
	}
	first, last, err := logRange(logs)
	if err != nil {
		return err
	}
	newest := damaged[0]
	if first == 0 || first > base+1 || last < newest.index {
		return fmt.Errorf("replication: snapshot file %s is damaged (%w), and no intact earlier snapshot with the log can "+
			"replace it (the log holds entries %d to %d, the newest intact snapshot ends at %d): the member does not "+
			"start; restore its data directory from a backup or, in an ensemble whose other members form a quorum, "+
			"empty it so that it copies the leader's state", newest.file, newest.err, first, last, base)
	}
	for _, c := range damaged {
		from := filepath.Join(s.dir, c.id)
		if err := os.Rename(from, from+damagedSuffix); err != nil {
			return fmt.Errorf("replication: set damaged snapshot %s aside: %w", c.id, err)
		}
		s.log.Warn("damaged snapshot set aside; starting from the snapshot before it and the log",
			"file", c.file, "kept_as", from+damagedSuffix, "from_index", base, "log_first", first, "log_last", last)
	}
	return syncDir(s.dir)
}

// logRange returns the first and last index of logs (0, 0 when empty).
func logRange(logs raft.LogStore) (first, last uint64, err error) {
	if first, err = logs.FirstIndex(); err != nil {
		return 0, 0, fmt.Errorf("replication: read log: %w", err)
	}
	if last, err = logs.LastIndex(); err != nil {
		return 0, 0, fmt.Errorf("replication: read log: %w", err)
	}
	return first, last, nil
}

// candidates lists the snapshot directories, newest first (scanSnapshots,
// snapdirs.go: directories whose names are not snapshot IDs are not
// listed). One whose metadata does not read is damaged; its term and index
// come from its name.
func (s *snapshotStore) candidates() ([]*snapCandidate, error) {
	dirs, err := scanSnapshots(s.dir)
	if err != nil {
		return nil, err
	}
	var out []*snapCandidate
	for _, d := range dirs {
		c := &snapCandidate{id: d.ID, term: d.Term, index: d.Index}
		m, err := s.readMeta(d.ID)
		switch {
		case err != nil:
			c.file, c.err = filepath.Join(d.Path, snapMetaFile), err
		case m.Version < raft.SnapshotVersionMin || m.Version > raft.SnapshotVersionMax:
			continue // not ours to judge; all() skips it too
		default:
			c.term, c.index = m.Term, m.Index
		}
		out = append(out, c)
	}
	return out, nil
}

// verifyAtOpen checks c's state.bin against its metadata, setting c.file.
func (s *snapshotStore) verifyAtOpen(c *snapCandidate) error {
	c.file = filepath.Join(s.dir, c.id, snapStateFile)
	m, err := s.readMeta(c.id)
	if err != nil {
		c.file = filepath.Join(s.dir, c.id, snapMetaFile)
		return err
	}
	f, err := os.Open(c.file)
	if err != nil {
		return err
	}
	defer f.Close()
	adviseSequential(f)
	if err := verifySnapshot(f, m); err != nil {
		if !errors.Is(err, errSnapshotChecksum) {
			return fmt.Errorf("read: %w", err)
		}
		return err
	}
	return nil
}

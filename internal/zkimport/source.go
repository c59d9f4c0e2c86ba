package zkimport

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// zkFile is one snapshot.<zxid> or log.<zxid> file.
type zkFile struct {
	path string
	zxid int64
	size int64
}

// versionDir returns dir/version-2 when it exists, else dir itself, so
// either ZooKeeper's dataDir or its version-2 directory may be given.
func versionDir(dir string) string {
	v2 := filepath.Join(dir, "version-2")
	if fi, err := os.Stat(v2); err == nil && fi.IsDir() {
		return v2
	}
	return dir
}

// listFiles returns the files named prefix.<hex zxid>[.suffix] in dir,
// sorted by zxid.
func listFiles(dir, prefix string) ([]zkFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("zkimport: read %s: %w", dir, err)
	}
	var out []zkFile
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix+".")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		hex, _, _ := strings.Cut(rest, ".")
		z, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("zkimport: stat %s: %w", e.Name(), err)
		}
		out = append(out, zkFile{path: filepath.Join(dir, e.Name()), zxid: int64(z), size: info.Size()})
	}
	slices.SortFunc(out, func(a, b zkFile) int { return cmpZxid(a.zxid, b.zxid) })
	return out, nil
}

// cmpZxid orders zxids as ZooKeeper's unsigned hex file names do.
func cmpZxid(a, b int64) int {
	switch {
	case uint64(a) < uint64(b):
		return -1
	case uint64(a) > uint64(b):
		return 1
	}
	return 0
}

// openSnapshot opens a snapshot file, decompressing a ".gz" one.
func openSnapshot(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("zkimport: %w", err)
	}
	switch {
	case strings.HasSuffix(path, ".snappy"):
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s: snappy-compressed snapshots are not supported; "+
			"let ZooKeeper write an uncompressed one (zookeeper.snapshot.compression.method=none)", ErrBadSnapshot, path)
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrBadSnapshot, path, err)
		}
		return zr, f.Close, nil
	}
	return f, f.Close, nil
}

// loadResult is the replayed ZooKeeper state and how it was obtained.
type loadResult struct {
	db       *db
	snapshot string // "" when started from an empty tree
	snapZxid int64
	logs     []string
	txns     int
	skipped  []string // snapshots found invalid, with the reason
}

// load restores ZooKeeper's state as FileTxnSnapLog.restore does: the
// newest snapshot that reads back intact, then every logged transaction
// after its zxid.
func load(snapDir, logDir string, p *progress) (*loadResult, error) {
	snaps, err := listFiles(snapDir, "snapshot")
	if err != nil {
		return nil, err
	}
	logs, err := listFiles(logDir, "log")
	if err != nil {
		return nil, err
	}
	res := &loadResult{}
	if err := res.readNewestSnapshot(snaps, p); err != nil {
		return nil, err
	}
	if err := res.replay(logs, p); err != nil {
		return nil, err
	}
	return res, nil
}

func (res *loadResult) readNewestSnapshot(snaps []zkFile, p *progress) error {
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		p.phase("reading "+filepath.Base(s.path), humanBytes(s.size), s.size)
		d, err := readSnapshotFile(s.path, p)
		if err != nil {
			res.skipped = append(res.skipped, fmt.Sprintf("%s: %v", filepath.Base(s.path), err))
			continue
		}
		d.lastZxid = s.zxid
		res.db, res.snapshot, res.snapZxid = d, s.path, s.zxid
		return nil
	}
	if len(snaps) > 0 {
		return fmt.Errorf("%w: no valid snapshot in %s: %s", ErrBadSnapshot, filepath.Dir(snaps[0].path), strings.Join(res.skipped, "; "))
	}
	res.db = emptyZooKeeperDB()
	return nil
}

func readSnapshotFile(path string, p *progress) (*db, error) {
	r, closeFn, err := openSnapshot(path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	d, err := readSnapshot(r, p.add)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return d, nil
}

// emptyZooKeeperDB is a new ZooKeeper server's tree, for a data directory
// that has logs but no snapshot.
func emptyZooKeeperDB() *db {
	d := newDB()
	d.put(&Node{Path: "/", Data: []byte{}, ACL: jute.OpenACLUnsafe})
	d.put(&Node{Path: "/zookeeper", Data: []byte{}, ACL: jute.OpenACLUnsafe})
	d.put(&Node{Path: "/zookeeper/quota", Data: []byte{}, ACL: jute.OpenACLUnsafe})
	d.put(&Node{Path: "/zookeeper/config", Data: []byte{}, ACL: jute.ReadACLUnsafe, Stat: Stat{Aversion: -1}})
	return d
}

// logsFrom picks the log files that may hold transactions after zxid: the
// last one starting at or before it and every later one
// (FileTxnLog.getLogFiles).
func logsFrom(logs []zkFile, zxid int64) []zkFile {
	start := 0
	for i, l := range logs {
		if cmpZxid(l.zxid, zxid) <= 0 {
			start = i
		}
	}
	return logs[start:]
}

func (res *loadResult) replay(logs []zkFile, p *progress) error {
	for _, l := range logsFrom(logs, res.snapZxid) {
		p.phase("replaying "+filepath.Base(l.path), humanBytes(l.size), l.size)
		n, err := replayFile(res.db, l.path, res.snapZxid, p)
		if err != nil {
			return err
		}
		res.logs = append(res.logs, l.path)
		res.txns += n
	}
	return nil
}

// replayFile applies the transactions of one log file with a zxid above
// after and returns how many it applied.
func replayFile(d *db, path string, after int64, p *progress) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("zkimport: %w", err)
	}
	defer f.Close()
	return replayLog(d, f, filepath.Base(path), after, p.add)
}

// replayLog applies the transactions of one log stream above zxid after.
// An empty stream (a log file created but never written) holds nothing.
func replayLog(d *db, r io.Reader, name string, after int64, onIO func(int64)) (int, error) {
	lr, err := newLogReader(r, name, onIO)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil
		}
		return 0, err
	}
	applied := 0
	for {
		body, err := lr.next()
		if errors.Is(err, io.EOF) {
			return applied, nil
		}
		if err != nil {
			return applied, err
		}
		if len(body) >= 20 && cmpZxid(int64(binaryZxid(body)), after) <= 0 {
			continue
		}
		if _, err := d.applyTxn(body); err != nil {
			return applied, fmt.Errorf("%s: %w", name, err)
		}
		applied++
	}
}

// binaryZxid extracts the zxid from a TxnHeader (clientId 8, cxid 4).
func binaryZxid(body []byte) uint64 {
	var z uint64
	for _, b := range body[12:20] {
		z = z<<8 | uint64(b)
	}
	return z
}

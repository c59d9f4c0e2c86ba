package zkimport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/session"
)

// ErrTargetNotEmpty is returned when the zkserverd data directory (or log
// directory) to write already holds files.
var ErrTargetNotEmpty = errors.New("zkimport: target directory is not empty")

// Options says what to import and where.
type Options struct {
	// From is ZooKeeper's dataDir (snapshots), either the directory named
	// in zoo.cfg or its version-2 subdirectory. FromLog is its dataLogDir
	// (transaction logs); it defaults to From.
	From, FromLog string
	// To is the zkserverd data directory to create (it must be missing or
	// empty); ToLog its data log directory, defaulting to To.
	To, ToLog string
	// Progress receives plain-text progress lines (nil: none).
	Progress io.Writer
	// Logger receives warnings such as skipped damaged snapshots (nil: none).
	Logger *slog.Logger

	// progressMin is the smallest phase (bytes or znodes) that gets
	// percentage lines; 0 means defaultProgressMin. Tests lower it.
	progressMin int64
}

// defaultProgressMin keeps small imports to one line per phase.
const defaultProgressMin = 1 << 20

// Summary describes a finished import.
type Summary struct {
	Snapshot          string // the ZooKeeper snapshot used ("" if none)
	SnapshotZxid      int64
	LogFiles          int   // log files read
	Txns              int   // transactions replayed after the snapshot
	Nodes             int   // znodes written, system nodes included
	EphemeralsDropped int   // ephemeral znodes of the dropped sessions
	SessionsDropped   int   // ZooKeeper sessions open at the end
	LastZxid          int64 // the zxid zkserverd continues after
	BytesRead         int64 // ZooKeeper bytes read
	BytesWritten      int64 // size of the FSM snapshot written
}

// Raft identity of a standalone zkserverd (replication.Open): server id 1,
// raft ID "1", in-memory transport address "1".
const (
	raftID   = raft.ServerID("1")
	raftAddr = raft.ServerAddress("1")
	// snapIndex and snapTerm place the imported state at the start of the
	// raft history; the server's first election moves to a later term.
	snapIndex = 1
	snapTerm  = 1
)

// Import reads the ZooKeeper data in opts.From/FromLog and writes a
// zkserverd data directory to opts.To/ToLog.
func Import(opts Options) (*Summary, error) {
	if opts.From == "" || opts.To == "" {
		return nil, errors.New("zkimport: source and target directories are required")
	}
	if opts.FromLog == "" {
		opts.FromLog = opts.From
	}
	if opts.ToLog == "" {
		opts.ToLog = opts.To
	}
	if opts.progressMin == 0 {
		opts.progressMin = defaultProgressMin
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for _, dir := range []string{opts.To, opts.ToLog} {
		if err := checkEmpty(dir); err != nil {
			return nil, err
		}
	}
	p := &progress{w: opts.Progress, minTotal: opts.progressMin}
	res, err := load(versionDir(opts.From), versionDir(opts.FromLog), p)
	if err != nil {
		return nil, err
	}
	for _, s := range res.skipped {
		logger.Warn("skipped a damaged ZooKeeper snapshot", "snapshot", s)
	}
	sum := &Summary{
		Snapshot: res.snapshot, SnapshotZxid: res.snapZxid, LogFiles: len(res.logs), Txns: res.txns,
		SessionsDropped: len(res.db.sessions), LastZxid: res.db.lastZxid, BytesRead: p.bytes,
	}
	nodes, dropped := finalNodes(res.db)
	sum.Nodes, sum.EphemeralsDropped = len(nodes), dropped
	p.phase("writing the zkserverd snapshot", fmt.Sprintf("%d znodes", len(nodes)), int64(len(nodes)))
	written, err := writeTarget(opts.To, opts.ToLog, sum.LastZxid, nodes, func() { p.add(1) })
	if err != nil {
		return nil, err
	}
	sum.BytesWritten = written
	return sum, nil
}

// checkEmpty accepts a missing or empty directory.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("zkimport: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s", ErrTargetNotEmpty, dir)
	}
	return nil
}

// writeTarget writes the raft snapshot and the raft stable store, the
// layout replication.Open uses: <to>/version-2/raft/ for snapshots and
// <toLog>/version-2/raft/raft.db for the log and stable store.
func writeTarget(to, toLog string, lastZxid int64, nodes []*Node, onNode func()) (int64, error) {
	snapDir := filepath.Join(to, "version-2", "raft")
	logDir := filepath.Join(toLog, "version-2", "raft")
	for _, d := range []string{snapDir, logDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return 0, fmt.Errorf("zkimport: create %s: %w", d, err)
		}
	}
	n, err := writeRaftSnapshot(snapDir, lastZxid, nodes, onNode)
	if err != nil {
		return n, err
	}
	return n, writeStableStore(filepath.Join(logDir, "raft.db"))
}

// writeRaftSnapshot stores the FSM state as raft snapshot (index 1, term
// 1) whose configuration is the standalone server as the only voter. The
// tree stream is read back by datatree.ReadSnapshot while it is written, so
// a tree zkserverd would refuse is never left behind.
func writeRaftSnapshot(dir string, lastZxid int64, nodes []*Node, onNode func()) (int64, error) {
	store, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		return 0, fmt.Errorf("zkimport: snapshot store: %w", err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raftID, Address: raftAddr}}}
	// The (deprecated) peer list in the snapshot metadata is encoded by a
	// transport; the standalone server uses an in-memory one.
	_, trans := raft.NewInmemTransport(raftAddr)
	defer trans.Close()
	sink, err := store.Create(raft.SnapshotVersionMax, snapIndex, snapTerm, conf, snapIndex, trans)
	if err != nil {
		return 0, fmt.Errorf("zkimport: create snapshot: %w", err)
	}
	var table bytes.Buffer
	if _, err := session.NewTable().WriteTo(&table); err != nil {
		sink.Cancel()
		return 0, fmt.Errorf("zkimport: session table: %w", err)
	}
	head := append(fsmHeader(lastZxid, table.Len()), table.Bytes()...)
	if _, err := sink.Write(head); err != nil {
		sink.Cancel()
		return 0, fmt.Errorf("zkimport: write snapshot: %w", err)
	}
	n, err := writeVerifiedTree(sink, nodes, onNode)
	if err != nil {
		sink.Cancel()
		return 0, err
	}
	if err := sink.Close(); err != nil {
		return 0, fmt.Errorf("zkimport: finish snapshot: %w", err)
	}
	return int64(len(head)) + n, nil
}

// writeVerifiedTree writes the tree stream to w and, at the same time,
// through datatree.ReadSnapshot.
func writeVerifiedTree(w io.Writer, nodes []*Node, onNode func()) (int64, error) {
	pr, pw := io.Pipe()
	verified := make(chan error, 1)
	go func() {
		_, err := datatree.ReadSnapshot(bufio.NewReaderSize(pr, 64<<10), datatree.Config{ExtendedTypesEnabled: true})
		pr.CloseWithError(err)
		verified <- err
	}()
	n, werr := writeTree(io.MultiWriter(w, pw), nodes, onNode)
	pw.CloseWithError(werr)
	if verr := <-verified; verr != nil {
		return n, fmt.Errorf("zkimport: the converted tree does not read back: %w", verr)
	}
	return n, werr
}

// writeStableStore creates the raft log and stable store with the current
// term of the snapshot, so raft treats the directory as existing state
// (raft.HasExistingState) and restores the snapshot instead of
// bootstrapping an empty tree.
func writeStableStore(path string) error {
	store, err := raftboltdb.New(raftboltdb.Options{Path: path})
	if err != nil {
		return fmt.Errorf("zkimport: open %s: %w", path, err)
	}
	// "CurrentTerm" is hashicorp/raft's stable-store key for the term.
	if err := store.SetUint64([]byte("CurrentTerm"), snapTerm); err != nil {
		store.Close()
		return fmt.Errorf("zkimport: write term: %w", err)
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("zkimport: close %s: %w", path, err)
	}
	return nil
}

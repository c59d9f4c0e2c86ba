package zkimport

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
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
		removeTarget(opts.To, opts.ToLog, logger)
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

// removeTarget removes what a failed import wrote: the version-2
// directories of the target, which held nothing before (checkEmpty).
func removeTarget(to, toLog string, logger *slog.Logger) {
	for _, dir := range []string{to, toLog} {
		if err := os.RemoveAll(filepath.Join(dir, "version-2")); err != nil {
			logger.Warn("could not remove a partly written directory", "dir", dir, "err", err)
		}
	}
}

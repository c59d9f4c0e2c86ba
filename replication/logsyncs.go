package replication

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// defaultFsyncWarningThreshold is ZooKeeper's fsync.warningthresholdms
// default.
const defaultFsyncWarningThreshold = time.Second

// logSyncs times the fsyncs of the WAL's segment files. Every duration goes
// to observe (the server's fsynctime summary); one longer than threshold is
// counted in slow (mntr's fsync_threshold_exceed_count) and logged, as
// ZooKeeper's transaction log does. The fields other than slow are set
// before the log opens and only read after.
type logSyncs struct {
	threshold time.Duration
	observe   func(time.Duration) // may be nil
	log       *slog.Logger
	slow      atomic.Int64
}

// timed runs sync, the fsync of the file called name, and records how long
// it took. A nil logSyncs only runs sync.
func (s *logSyncs) timed(name string, sync func() error) error {
	if s == nil {
		return sync()
	}
	start := time.Now()
	err := sync()
	took := time.Since(start)
	if s.observe != nil {
		s.observe(took)
	}
	if took > s.threshold {
		s.slow.Add(1)
		s.log.Warn("log fsync took longer than fsync.warningthresholdms; writes waited for it",
			"file", name, "took", took, "threshold", s.threshold)
	}
	return err
}

// SlowLogSyncs counts the log fsyncs that took longer than
// Config.FsyncWarningThreshold (ZooKeeper's fsync_threshold_exceed_count).
// Only the wal log store's fsyncs are timed; with boltdb it stays 0.
func (n *Node) SlowLogSyncs() int64 { return n.syncs.slow.Load() }

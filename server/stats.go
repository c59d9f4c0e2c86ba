package server

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// latencyStats accumulates request latencies in milliseconds, as the
// srvr/mntr latency lines show them. Guarded by mu.
type latencyStats struct {
	mu    sync.Mutex
	min   int64
	max   int64
	sum   int64
	count int64
}

func newLatencyStats() *latencyStats { return &latencyStats{min: math.MaxInt64} }

func (l *latencyStats) add(d time.Duration) {
	ms := d.Milliseconds()
	l.mu.Lock()
	if ms < l.min {
		l.min = ms
	}
	if ms > l.max {
		l.max = ms
	}
	l.sum += ms
	l.count++
	l.mu.Unlock()
}

// snapshot returns min, avg, max and count; min is 0 before any sample.
func (l *latencyStats) snapshot() (min int64, avg float64, max int64, count int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return 0, 0, 0, 0
	}
	return l.min, float64(l.sum) / float64(l.count), l.max, l.count
}

// summaryValues renders mntr's five summary keys for name (zk_avg_<name>,
// zk_min_<name>, zk_max_<name>, zk_cnt_<name>, zk_sum_<name>).
func (l *latencyStats) summaryValues(name string) []keyValue {
	l.mu.Lock()
	min, max, sum, count := l.min, l.max, l.sum, l.count
	l.mu.Unlock()
	avg := 0.0
	if count == 0 {
		min = 0
	} else {
		avg = float64(sum) / float64(count)
	}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []keyValue{
		{"avg_" + name, javaDouble(avg)}, {"min_" + name, i(min)}, {"max_" + name, i(max)},
		{"cnt_" + name, i(count)}, {"sum_" + name, i(sum)},
	}
}

func (l *latencyStats) reset() {
	l.mu.Lock()
	l.min, l.max, l.sum, l.count = math.MaxInt64, 0, 0, 0
	l.mu.Unlock()
}

// serverStats are the server-wide counters of srvr, stat and mntr.
type serverStats struct {
	latency         *latencyStats
	readLatency     *latencyStats // mntr zk_*_readlatency
	updateLatency   *latencyStats // mntr zk_*_updatelatency
	fsyncTime       *latencyStats // mntr zk_*_fsynctime: the log's fsyncs
	packetsReceived atomic.Int64
	packetsSent     atomic.Int64
	outstanding     atomic.Int64
	authFailed      atomic.Int64
	lastRespSize    atomic.Int64
	minRespSize     atomic.Int64
	maxRespSize     atomic.Int64
	slowDisconnects atomic.Int64
	connPanics      atomic.Int64 // panics contained to one connection (contain.go)
}

func newServerStats() *serverStats {
	s := &serverStats{latency: newLatencyStats(), readLatency: newLatencyStats(), updateLatency: newLatencyStats(),
		fsyncTime: newLatencyStats()}
	s.minRespSize.Store(-1)
	return s
}

func (s *serverStats) reset() {
	s.latency.reset()
	s.readLatency.reset()
	s.updateLatency.reset()
	s.fsyncTime.reset()
	s.packetsReceived.Store(0)
	s.packetsSent.Store(0)
	s.lastRespSize.Store(0)
	s.minRespSize.Store(-1)
	s.maxRespSize.Store(0)
}

func (s *serverStats) responseSize(n int64) {
	s.lastRespSize.Store(n)
	for {
		cur := s.minRespSize.Load()
		if cur != -1 && cur <= n || s.minRespSize.CompareAndSwap(cur, n) {
			break
		}
	}
	for {
		cur := s.maxRespSize.Load()
		if cur >= n || s.maxRespSize.CompareAndSwap(cur, n) {
			break
		}
	}
}

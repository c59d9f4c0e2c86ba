package server

import (
	"math"
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

// LatencyStats are request latencies in milliseconds since the last stat
// reset; all zero before the first sample.
type LatencyStats struct {
	Min, Max, Sum, Count int64
}

// Avg is the mean latency (0 before the first sample).
func (l LatencyStats) Avg() float64 {
	if l.Count == 0 {
		return 0
	}
	return float64(l.Sum) / float64(l.Count)
}

// get reads the accumulated latencies.
func (l *latencyStats) get() LatencyStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return LatencyStats{}
	}
	return LatencyStats{Min: l.min, Max: l.max, Sum: l.sum, Count: l.count}
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

// Stats are the server-wide counters of srvr, stat and mntr, read at one
// moment (each counter on its own: they need not be consistent).
type Stats struct {
	Latency          LatencyStats // every request
	ReadLatency      LatencyStats // mntr zk_*_readlatency
	UpdateLatency    LatencyStats // mntr zk_*_updatelatency
	FsyncTime        LatencyStats // mntr zk_*_fsynctime: the log's fsyncs
	PacketsReceived  int64
	PacketsSent      int64
	Outstanding      int64 // requests received and not yet answered
	AuthFailed       int64
	LastResponseSize int64
	MinResponseSize  int64 // -1 before the first reply
	MaxResponseSize  int64
	SlowDisconnects  int64 // connections dropped for not reading notifications
	ConnectionPanics int64 // panics contained to one connection (contain.go)
	// Memory is the memory limit and its refusals (memlimit.go).
	Memory MemoryStats
}

// get reads the counters.
func (s *serverStats) get() Stats {
	return Stats{
		Latency:          s.latency.get(),
		ReadLatency:      s.readLatency.get(),
		UpdateLatency:    s.updateLatency.get(),
		FsyncTime:        s.fsyncTime.get(),
		PacketsReceived:  s.packetsReceived.Load(),
		PacketsSent:      s.packetsSent.Load(),
		Outstanding:      s.outstanding.Load(),
		AuthFailed:       s.authFailed.Load(),
		LastResponseSize: s.lastRespSize.Load(),
		MinResponseSize:  s.minRespSize.Load(),
		MaxResponseSize:  s.maxRespSize.Load(),
		SlowDisconnects:  s.slowDisconnects.Load(),
		ConnectionPanics: s.connPanics.Load(),
	}
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

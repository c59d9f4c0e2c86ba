package server

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// A memory limit that degrades instead of dying (docs/operations.md,
// "Memory").
//
// ZooKeeper has no such limit: its tree grows until the JVM throws
// OutOfMemoryError. zkserverd refuses the writes that would grow the tree
// while the process's live heap is near its memory limit, and keeps
// serving everything else, so that clients can read and delete their way
// back under it:
//
//   - the limit is memory.limitBytes, or else the Go runtime's soft limit
//     (GOMEMLIMIT, or the one cmd/zkserverd derives from the cgroup);
//     without either nothing is refused;
//   - the measure is the live heap the last garbage collection marked
//     (runtime/metrics /gc/heap/live:bytes): the tree, the session table,
//     the watches, the log cache and the connections' buffers, all of it.
//     It is sampled every memorySampleInterval by one goroutine, never per
//     request; the request path reads one atomic;
//   - refusals start when the live heap reaches refuseShare of the limit
//     and stop when it falls below resumeShare (hysteresis, so that the
//     state does not flap with every collection). While refusing, or while
//     the heap holds more than the refusal threshold, the sampler forces a
//     collection when none ran for forceGCAfter and a transaction was
//     applied since the last one it forced, so that memory freed by
//     deletes on an idle server is seen, and an idle full server does not
//     collect again and again for nothing;
//   - refused are the writes that grow the tree: create (every kind),
//     setData with more data than the node has, and a multi holding one of
//     those. Reads, delete, check, setACL, sync, shrinking or same-size
//     setData, and new sessions (a client must be able to connect to
//     delete) go on as ever. Watches are not refused either: reads set
//     them, and a reconnecting client restores them with setWatches.
//
// The decision is made on the member that receives the request, before
// the log, as ZooKeeper's request throttling decides (RequestThrottler):
// a refused write is never proposed, spends no zxid, and every member
// applies the same log. Its answer is ZooKeeper's ThrottledOp (-127), the
// code of a request that was "throttled and not executed at all" and that
// a client should retry with back-off; the reply carries the last zxid
// applied, as ZooKeeper's FinalRequestProcessor sends it.
// docs/compatibility.md says why not QuotaExceeded.

// The refusal thresholds, as shares of the limit, and the sampling.
const (
	refuseShare          = 0.80
	resumeShare          = 0.75
	memorySampleInterval = time.Second
	forceGCAfter         = 3 * time.Second
	// refusalLogEvery bounds the refusal log lines to one per interval;
	// the line counts the refusals since the last one.
	refusalLogEvery = 10 * time.Second
)

// Names of the runtime/metrics samples the guard reads.
const (
	metricLiveHeap  = "/gc/heap/live:bytes"
	metricHeapBytes = "/memory/classes/heap/objects:bytes"
	metricGCCycles  = "/gc/cycles/total:gc-cycles"
)

// MemoryStats describes the memory limit and the refusals near it, for
// mntr and /metrics.
type MemoryStats struct {
	// LimitBytes is the limit refusals are measured against; 0: none.
	LimitBytes int64
	// LiveHeapBytes is the live heap at the last sample (0 without a
	// limit: nothing is sampled).
	LiveHeapBytes int64
	// Refusing is true while growing writes are refused.
	Refusing bool
	// RefusedWrites counts the writes refused since the start.
	RefusedWrites int64
}

// memoryGuard decides whether growing writes are refused. The sampler
// goroutine (run) writes the atomics; connections' reader goroutines read
// refusing and count refusals.
type memoryGuard struct {
	log *slog.Logger
	// applied returns the zxid of the last transaction applied.
	applied  func() int64
	limit    int64 // 0: no refusals
	refuseAt int64
	resumeAt int64

	live     atomic.Int64
	refusing atomic.Bool
	refused  atomic.Int64
	// logged is the refusal count at the last refusal log line, lastLog
	// its time (unix nanoseconds).
	logged  atomic.Int64
	lastLog atomic.Int64

	// The sampler's own state (run's goroutine only).
	samples   []metrics.Sample
	gcCycles  uint64
	lastCycle time.Time // when gcCycles last changed, or a collection was forced
	forced    int64     // applied() at the last forced collection; -1 before any
}

// newMemoryGuard returns the guard for limit bytes (memory.limitBytes;
// 0 takes the Go runtime's soft limit, and no soft limit means no
// refusals); applied returns the zxid of the last transaction applied.
func newMemoryGuard(limit int64, applied func() int64, logger *slog.Logger) *memoryGuard {
	if limit <= 0 {
		if soft := debug.SetMemoryLimit(-1); soft != math.MaxInt64 {
			limit = soft
		} else {
			limit = 0
		}
	}
	return &memoryGuard{
		log:      logger,
		applied:  applied,
		forced:   -1,
		limit:    limit,
		refuseAt: int64(float64(limit) * refuseShare),
		resumeAt: int64(float64(limit) * resumeShare),
		samples: []metrics.Sample{
			{Name: metricLiveHeap}, {Name: metricHeapBytes}, {Name: metricGCCycles},
		},
	}
}

// logStart says what the guard refuses at, once at start.
func (g *memoryGuard) logStart() {
	if g.limit == 0 {
		g.log.Info("no memory limit: writes are never refused for memory")
		return
	}
	g.log.Info("memory limit for writes", "limit_bytes", g.limit,
		"refuse_at_live_heap_bytes", g.refuseAt, "resume_below_bytes", g.resumeAt)
}

// run samples the heap every memorySampleInterval until ctx ends.
func (g *memoryGuard) run(ctx context.Context) {
	if g.limit == 0 {
		return
	}
	g.sample(time.Now()) // a restart on a full tree refuses from the start
	t := time.NewTicker(memorySampleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			g.sample(now)
		}
	}
}

// read takes the runtime's figures: the live heap at the last
// collection, the heap's objects now (live and not yet swept), and the
// number of collections completed.
func (g *memoryGuard) read() (live, objects int64, cycles uint64) {
	metrics.Read(g.samples)
	value := func(s metrics.Sample) uint64 {
		if s.Value.Kind() != metrics.KindUint64 {
			return 0 // not supported by this runtime
		}
		return s.Value.Uint64()
	}
	return int64(value(g.samples[0])), int64(value(g.samples[1])), value(g.samples[2])
}

// sample measures the heap and updates the refusal state; it forces a
// collection when the measure may be stale near the threshold.
func (g *memoryGuard) sample(now time.Time) {
	live, objects, cycles := g.read()
	if cycles != g.gcCycles || g.lastCycle.IsZero() {
		g.gcCycles, g.lastCycle = cycles, now
	}
	if (g.refusing.Load() || objects >= g.refuseAt) && now.Sub(g.lastCycle) >= forceGCAfter {
		// No collection for a while: the live figure predates whatever
		// was deleted since. One collection settles it, if anything was
		// applied since the last one forced.
		if zxid := g.applied(); zxid != g.forced {
			runtime.GC()
			live, _, cycles = g.read()
			g.gcCycles, g.lastCycle, g.forced = cycles, now, zxid
		}
	}
	g.update(live)
}

// update sets the refusal state for a live heap of live bytes.
func (g *memoryGuard) update(live int64) {
	g.live.Store(live)
	switch was := g.refusing.Load(); {
	case !was && live >= g.refuseAt:
		g.refusing.Store(true)
		g.log.Warn("memory limit near: refusing writes that grow the tree (ThrottledOp) until the live heap is below the resume threshold",
			"live_heap_bytes", live, "limit_bytes", g.limit, "resume_below_bytes", g.resumeAt)
	case was && live < g.resumeAt:
		g.refusing.Store(false)
		g.log.Info("memory back under the limit: accepting writes again",
			"live_heap_bytes", live, "limit_bytes", g.limit, "refused_writes", g.refused.Load())
	}
}

// noteRefusal counts a refused write and logs, at most once per
// refusalLogEvery, how many were refused since the last line.
func (g *memoryGuard) noteRefusal(op jute.OpCode, path string, now time.Time) {
	n := g.refused.Add(1)
	last := g.lastLog.Load()
	if now.UnixNano()-last < int64(refusalLogEvery) || !g.lastLog.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	since := n - g.logged.Swap(n)
	g.log.Warn("write refused: memory limit near (ThrottledOp)", "op", op, "path", path,
		"refused_since_last_line", since, "live_heap_bytes", g.live.Load(), "limit_bytes", g.limit)
}

// stats reads the guard's figures.
func (g *memoryGuard) stats() MemoryStats {
	return MemoryStats{LimitBytes: g.limit, LiveHeapBytes: g.live.Load(),
		Refusing: g.refusing.Load(), RefusedWrites: g.refused.Load()}
}

// refuseForMemory answers a write that would grow the tree with
// ThrottledOp while the server is near its memory limit, and reports
// whether it did. Called by the reader goroutine before the write is
// queued (conn_dispatch.go): the refusal never reaches the log.
func (c *conn) refuseForMemory(h jute.RequestHeader, req jute.Record, now time.Time) bool {
	g := c.s.memory
	if !g.refusing.Load() {
		return false
	}
	path, grows := c.growsTree(h.Type, req)
	if !grows {
		return false
	}
	g.noteRefusal(h.Type, path, now)
	c.enqueue(&pending{kind: kindReply, xid: h.Xid, op: h.Type, received: now,
		frame: errorFrame(h.Xid, c.s.node.LastZxid(), jute.ThrottledOp, nil)})
	return true
}

// growsTree reports whether a write of op would make the tree larger if
// it succeeded, and the path of the (first) op that would: a create, a
// setData with more data than the node has now in the local tree, a multi
// holding one of those. A setData of a node the local tree does not hold
// (yet: its create may still be on its way) is let through.
func (c *conn) growsTree(op jute.OpCode, req jute.Record) (string, bool) {
	switch r := req.(type) {
	case *jute.CreateRequest:
		return r.Path, true
	case *jute.CreateTTLRequest:
		return r.Path, true
	case *jute.SetDataRequest:
		st, code := c.s.node.Tree().Exists(r.Path, nil)
		return r.Path, code == jute.OK && len(r.Data) > int(st.DataLength)
	case *jute.MultiRequest:
		if op != jute.OpMulti {
			return "", false
		}
		for _, o := range r.Ops {
			if path, grows := c.growsTree(o.Type, o.Request); grows {
				return path, true
			}
		}
	}
	return "", false
}

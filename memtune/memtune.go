// Package memtune sizes the Go garbage collector's heap target for a
// server whose heap is mostly one long-lived structure, the znode tree.
//
// A Tuner lets the heap grow by
//
//	max(Floor, live × Percent/100)
//
// over the live heap between collections: a small heap keeps a generous
// absolute headroom (with Go's own setting, GOGC=100, a server with a
// small tree would collect every few MiB of requests) and a large one a
// proportional one. It re-targets after every collection by setting GOGC
// (runtime/debug.SetGCPercent). Percent trades a busy server's memory for
// CPU, since each collection marks the whole tree: in a create workload
// with 1 KiB values the server used about a tenth more CPU per create at
// 35% than at 100% (Go's default), for a heap of 1.35 instead of 2 times
// the live heap. A quiet server gives the difference back (IdleAfter).
//
// With IdleAfter set, a Tuner also gives freed memory back to the operating
// system once the process has been quiet (allocated less than 1/64 of the
// live heap) for that long: a collection followed by a full scavenge
// (runtime/debug.FreeOSMemory), at most once per quiet spell.
//
// The collector setting is process-wide, so a process should run one
// Tuner, started once the server is serving (restoring a large snapshot
// is faster with the default setting). An explicit GOGC environment
// variable disables it.
package memtune

import (
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Options configure a Tuner. Zero fields take the defaults.
type Options struct {
	// Percent is the growth allowed over a large live heap between
	// collections, in percent (GOGC). Default 100.
	Percent int
	// Floor is the smallest growth allowed, in bytes. Default 64 MiB.
	Floor uint64
	// IdleAfter is how long the process must stay quiet before free
	// memory is returned to the OS; 0 disables it.
	IdleAfter time.Duration
	// Interval is how often the runtime's statistics are read. Default
	// 100 ms.
	Interval time.Duration
	// Logger receives a debug line for each change (nil: none).
	Logger *slog.Logger
}

// Defaults for Options.
const (
	DefaultPercent  = 100
	DefaultFloor    = 64 << 20
	DefaultInterval = 100 * time.Millisecond
)

// minLive is the live heap Percent assumes at least: the runtime's own
// smallest heap target, which also stands in before the first collection.
const minLive = 4 << 20

// Tuner adjusts the collector until Stop.
type Tuner struct {
	opts Options
	env  env
	stop chan struct{}
	done chan struct{}
}

// stats are the runtime figures a Tuner reads.
type stats struct {
	cycles uint64 // completed collections
	live   uint64 // live heap after the last collection
	allocs uint64 // bytes allocated since the process started
	spare  uint64 // heap memory not live: free, or dead objects not swept
}

// env is what a Tuner does to the process; tests replace it.
type env struct {
	read  func() stats
	setGC func(percent int)
	free  func()
	ticks func(d time.Duration) (<-chan time.Time, func())
	// handled, if set, is called after each tick (tests wait on it).
	handled func()
}

// Start starts a Tuner, or returns nil when the GOGC environment variable
// is set (the operator's choice wins). A nil *Tuner's Stop does nothing.
func Start(opts Options) *Tuner {
	if os.Getenv("GOGC") != "" {
		if opts.Logger != nil {
			opts.Logger.Info("GOGC is set: heap tuning off", "GOGC", os.Getenv("GOGC"))
		}
		return nil
	}
	return start(opts, processEnv())
}

func start(opts Options, e env) *Tuner {
	if opts.Percent <= 0 {
		opts.Percent = DefaultPercent
	}
	if opts.Floor == 0 {
		opts.Floor = DefaultFloor
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	t := &Tuner{opts: opts, env: e, stop: make(chan struct{}), done: make(chan struct{})}
	go t.run()
	return t
}

// Stop ends the tuning and restores GOGC=100.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	close(t.stop)
	<-t.done
	t.env.setGC(100)
}

// run re-targets after each collection and watches for quiet spells.
func (t *Tuner) run() {
	defer close(t.done)
	tick, stopTicks := t.env.ticks(t.opts.Interval)
	defer stopTicks()
	st := tunerState{percent: -1}
	t.adjust(&st, t.env.read())
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick:
			s := t.env.read()
			if s.cycles != st.cycles {
				t.adjust(&st, s)
			}
			t.idle(&st, s, now)
			if t.env.handled != nil {
				t.env.handled()
			}
		}
	}
}

// tunerState is what run remembers between ticks.
type tunerState struct {
	cycles    uint64
	percent   int
	quietFrom time.Time // start of the current quiet spell (zero: none)
	allocsAt  uint64    // allocs at quietFrom
	released  bool      // memory was returned in this quiet spell
}

// adjust sets GOGC for the live heap of the last collection.
func (t *Tuner) adjust(st *tunerState, s stats) {
	st.cycles = s.cycles
	p := Percent(s.live, t.opts.Floor, t.opts.Percent)
	if p == st.percent {
		return
	}
	t.env.setGC(p)
	st.percent = p
	if t.opts.Logger != nil {
		t.opts.Logger.Debug("heap target", "live_bytes", s.live, "gogc", p)
	}
}

// idle returns free memory to the OS once the process has allocated less
// than 1/64 of the live heap for IdleAfter, once per quiet spell.
func (t *Tuner) idle(st *tunerState, s stats, now time.Time) {
	if t.opts.IdleAfter <= 0 {
		return
	}
	quota := max(s.live/64, 1<<20)
	if st.quietFrom.IsZero() || s.allocs-st.allocsAt > quota {
		st.quietFrom, st.allocsAt, st.released = now, s.allocs, false
		return
	}
	if st.released || now.Sub(st.quietFrom) < t.opts.IdleAfter || s.spare < max(s.live/16, 8<<20) {
		return
	}
	st.released = true
	t.env.free()
	if t.opts.Logger != nil {
		t.opts.Logger.Debug("returned free memory to the OS", "spare_bytes", s.spare, "live_bytes", s.live)
	}
}

// Percent returns the GOGC that lets a heap with live bytes grow by
// max(floor, live×percent/100): percent for a large heap, more for a small
// one. A live heap under 4 MiB (or not measured yet) counts as 4 MiB.
func Percent(live, floor uint64, percent int) int {
	live = max(live, minLive)
	if live/100*uint64(percent) >= floor {
		return percent
	}
	return int(floor / (live / 100))
}

// processEnv acts on this process.
func processEnv() env {
	samples := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	return env{
		read: func() stats {
			metrics.Read(samples)
			v := func(i int) uint64 {
				if samples[i].Value.Kind() != metrics.KindUint64 {
					return 0
				}
				return samples[i].Value.Uint64()
			}
			s := stats{cycles: v(0), live: v(1), allocs: v(2)}
			s.spare = v(3) + v(4) - min(v(4), s.live)
			return s
		},
		setGC: func(p int) { debug.SetGCPercent(p) },
		free:  debug.FreeOSMemory,
		ticks: func(d time.Duration) (<-chan time.Time, func()) {
			tk := time.NewTicker(d)
			return tk.C, tk.Stop
		},
	}
}

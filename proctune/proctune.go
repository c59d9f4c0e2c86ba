// Package proctune matches the Go scheduler's processor count (GOMAXPROCS)
// to the server's load.
//
// A request with few others in flight is a chain of hand-offs between
// goroutines (connection reader, raft's loops, the state machine, the
// connection's completer), each readying the next. While a processor (P)
// is idle, the runtime answers every such hand-off by waking an idle OS
// thread to look for more work, which mostly finds none and sleeps again.
// On a virtual machine each of those wake-ups is an interrupt to a halted
// virtual CPU. With one P the hand-offs stay on one thread. Measured on a
// 2-vCPU virtual machine against the same server on two Ps
// (docs/perf/journal.md, 2026-11-24): with one session writing, one
// write in flight, 25% less CPU and 15% less time per write; with 8
// sessions connecting and closing in a loop, 36% less CPU per cycle and
// 30-45% more cycles. With many requests in flight the second P is worth
// it: 512 reads in flight were served 10-17% faster on two.
//
// Every Window a Tuner reads the time requests have spent in the server
// (Options.RequestTime) and the process's CPU time. The first, divided by
// the window, is the average number of requests in flight (Little's law;
// unlike a sampled count it also sees bursts shorter than the window). The
// Tuner uses Max processors while that average is at least Busy, or while
// one P is nearly saturated (the process used 0.9 of a core or more); it
// goes back to one processor once the load has stayed under Busy/4, and
// the CPU under 0.6 core per processor, for Hold. A load that needs Max
// again within Hold of going down doubles Hold (up to 32 times), so a load
// at the border does not flap.
//
// GOMAXPROCS is process-wide, so a process should run one Tuner. An
// explicit GOMAXPROCS environment variable disables it, as does a machine
// (or CPU quota) of one core.
package proctune

import (
	"log/slog"
	"os"
	"runtime"
	"time"
)

// Options configure a Tuner. Zero fields take the defaults.
type Options struct {
	// RequestTime reports the time all answered requests have spent in
	// the server so far (the sum of their latencies), and any other work
	// that waited for the server, such as queued watch notifications.
	// Required.
	RequestTime func() time.Duration
	// Max is the processor count under load. Default: GOMAXPROCS at Start
	// (the machine's cores, or the container's CPU quota). Setting
	// GOMAXPROCS stops the runtime from following later quota changes;
	// the Tuner does not follow them either.
	Max int
	// Busy is the average number of requests in flight at which the Tuner
	// uses Max processors. Default 16.
	Busy float64
	// Window is how often the Tuner decides. Default 100 ms.
	Window time.Duration
	// Hold is how long the load must stay low before the Tuner goes back
	// to one processor. Default 500 ms.
	Hold time.Duration
	// Logger receives a debug line for each change (nil: none).
	Logger *slog.Logger
}

// Defaults for Options.
const (
	DefaultBusy   = 16
	DefaultWindow = 100 * time.Millisecond
	DefaultHold   = 500 * time.Millisecond
)

const (
	// saturated is the CPU, in cores, at which one P counts as saturated.
	saturated = 0.9
	// quietPerProc is the CPU per processor, in cores, under which the
	// load may go back to one P.
	quietPerProc = 0.6
	// maxHoldFactor bounds the growth of Hold.
	maxHoldFactor = 32
)

// Tuner adjusts GOMAXPROCS until Stop.
type Tuner struct {
	opts Options
	env  env
	stop chan struct{}
	done chan struct{}
}

// env is what a Tuner reads and does; tests replace it.
type env struct {
	cpu      func() time.Duration // the process's CPU time so far (0: unknown)
	setProcs func(n int)
	ticks    func(d time.Duration) (<-chan time.Time, func())
	// handled, if set, is called after each tick (tests wait on it).
	handled func()
}

// Start starts a Tuner at Max processors, or returns nil when the
// GOMAXPROCS environment variable is set or Max is 1. A nil *Tuner's Stop
// does nothing.
func Start(opts Options) *Tuner {
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		if opts.Logger != nil {
			opts.Logger.Info("GOMAXPROCS is set: processor tuning off", "GOMAXPROCS", v)
		}
		return nil
	}
	if opts.Max <= 0 {
		opts.Max = runtime.GOMAXPROCS(0)
	}
	if opts.Max <= 1 || opts.RequestTime == nil {
		return nil
	}
	return start(opts, processEnv())
}

func start(opts Options, e env) *Tuner {
	if opts.Busy <= 0 {
		opts.Busy = DefaultBusy
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Hold <= 0 {
		opts.Hold = DefaultHold
	}
	t := &Tuner{opts: opts, env: e, stop: make(chan struct{}), done: make(chan struct{})}
	go t.run()
	return t
}

// Stop ends the tuning and restores Max processors.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	close(t.stop)
	<-t.done
	t.env.setProcs(t.opts.Max)
}

// run decides once per window.
func (t *Tuner) run() {
	defer close(t.done)
	tick, stopTicks := t.env.ticks(t.opts.Window)
	defer stopTicks()
	st := state{procs: t.opts.Max, hold: t.opts.Hold}
	var last sample
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick:
			cur := sample{at: now, requests: t.opts.RequestTime(), cpu: t.env.cpu()}
			if !last.at.IsZero() {
				wall := cur.at.Sub(last.at)
				t.apply(&st, now, perWall(cur.requests-last.requests, wall), perWall(cur.cpu-last.cpu, wall))
			}
			last = cur
			if t.env.handled != nil {
				t.env.handled()
			}
		}
	}
}

// sample is what run reads at a tick.
type sample struct {
	at       time.Time
	requests time.Duration // Options.RequestTime
	cpu      time.Duration // the process's CPU time
}

// apply decides for one window and sets GOMAXPROCS when that changes.
func (t *Tuner) apply(st *state, now time.Time, load, cpu float64) {
	n := t.opts.decide(st, now, load, cpu)
	if n == st.procs {
		return
	}
	t.env.setProcs(n)
	if t.opts.Logger != nil {
		t.opts.Logger.Debug("processors", "gomaxprocs", n, "in_flight", load, "cpu_cores", cpu, "hold", st.hold)
	}
	st.procs = n
}

// perWall is a time spent (by requests, or on CPU) over a wall-clock
// interval: the average requests in flight, or the cores used.
func perWall(d, wall time.Duration) float64 {
	if wall <= 0 || d <= 0 {
		return 0
	}
	return d.Seconds() / wall.Seconds()
}

// state is what the Tuner remembers between windows.
type state struct {
	procs     int
	quietFrom time.Time     // start of the current quiet spell on Max (zero: none)
	downAt    time.Time     // when the Tuner last went down to one P
	hold      time.Duration // the current Hold (grows when the load flaps)
}

// decide returns the processor count for the next window, given the last
// window's average requests in flight and CPU use in cores.
func (o Options) decide(st *state, now time.Time, load, cpu float64) int {
	if st.procs == 1 {
		if load < o.Busy && cpu < saturated {
			return 1
		}
		if !st.downAt.IsZero() && now.Sub(st.downAt) < st.hold {
			st.hold = min(2*st.hold, maxHoldFactor*o.Hold)
		} else {
			st.hold = o.Hold
		}
		st.quietFrom = time.Time{}
		return o.Max
	}
	if load >= o.Busy/4 || cpu >= quietPerProc*float64(st.procs) {
		st.quietFrom = time.Time{}
		return st.procs
	}
	if st.quietFrom.IsZero() {
		st.quietFrom = now
	}
	if now.Sub(st.quietFrom) < st.hold {
		return st.procs
	}
	st.downAt = now
	return 1
}

// processEnv acts on this process.
func processEnv() env {
	return env{
		cpu:      processCPU,
		setProcs: func(n int) { runtime.GOMAXPROCS(n) },
		ticks: func(d time.Duration) (<-chan time.Time, func()) {
			tk := time.NewTicker(d)
			return tk.C, tk.Stop
		},
	}
}

package proctune

import (
	"sync"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	opts := Options{Max: 4, Busy: 16, Hold: time.Second}
	t0 := time.Unix(1000, 0)
	type window struct {
		after     time.Duration // since t0
		load, cpu float64
		want      int
	}
	tests := []struct {
		name    string
		windows []window
	}{
		{"quiet load goes down after Hold", []window{
			{0, 1, 0.3, 4}, // quiet spell starts
			{500 * time.Millisecond, 1, 0.3, 4},
			{time.Second, 1, 0.3, 1},
			{2 * time.Second, 2, 0.5, 1}, // stays down
		}},
		{"in-flight load keeps Max", []window{
			{0, 16, 0.3, 4},
			{2 * time.Second, 200, 0.3, 4},
		}},
		{"a busy window restarts the quiet spell", []window{
			{0, 1, 0.3, 4},
			{900 * time.Millisecond, 5, 0.3, 4}, // 5 >= Busy/4
			{1500 * time.Millisecond, 1, 0.3, 4},
			{2400 * time.Millisecond, 1, 0.3, 4},
			{2500 * time.Millisecond, 1, 0.3, 1},
		}},
		{"CPU over 0.6 core per processor keeps Max", []window{
			{0, 1, 2.5, 4},
			{5 * time.Second, 1, 2.5, 4},
		}},
		{"load or a saturated processor goes back up", []window{
			{0, 1, 0.3, 4},
			{10 * time.Second, 1, 0.3, 1},
			{20 * time.Second, 16, 0.3, 4}, // load
			{21 * time.Second, 1, 0.3, 4},
			{30 * time.Second, 1, 0.3, 1},
			{40 * time.Second, 1, 0.95, 4}, // one processor saturated
		}},
		{"flapping doubles Hold", []window{
			{0, 1, 0.3, 4},
			{time.Second, 1, 0.3, 1},
			{1200 * time.Millisecond, 1, 0.95, 4}, // up within Hold: Hold is 2 s
			{1300 * time.Millisecond, 1, 0.3, 4},
			{2300 * time.Millisecond, 1, 0.3, 4},
			{3300 * time.Millisecond, 1, 0.3, 1},
			{3400 * time.Millisecond, 1, 0.95, 4}, // again: Hold is 4 s
			{3500 * time.Millisecond, 1, 0.3, 4},
			{7400 * time.Millisecond, 1, 0.3, 4},
			{7500 * time.Millisecond, 1, 0.3, 1},
			{20 * time.Second, 1, 0.95, 4}, // long after: Hold back to 1 s
			{20100 * time.Millisecond, 1, 0.3, 4},
			{21100 * time.Millisecond, 1, 0.3, 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := state{procs: opts.Max, hold: opts.Hold}
			for i, w := range tt.windows {
				got := opts.decide(&st, t0.Add(w.after), w.load, w.cpu)
				if got != w.want {
					t.Fatalf("window %d (%v, load %.1f, cpu %.2f): %d processors, want %d", i, w.after, w.load, w.cpu, got, w.want)
				}
				st.procs = got
			}
		})
	}
}

func TestHoldIsBounded(t *testing.T) {
	opts := Options{Max: 2, Busy: 16, Hold: time.Second}
	st := state{procs: 2, hold: opts.Hold}
	now := time.Unix(1000, 0)
	for range 20 {
		// Quiet for the whole Hold, then busy right after going down.
		st.procs = opts.decide(&st, now, 0, 0)
		now = now.Add(st.hold)
		st.procs = opts.decide(&st, now, 0, 0)
		if st.procs != 1 {
			t.Fatalf("did not go down after Hold %v", st.hold)
		}
		now = now.Add(time.Millisecond)
		st.procs = opts.decide(&st, now, 100, 0)
	}
	if st.hold != maxHoldFactor*opts.Hold {
		t.Errorf("Hold grew to %v, want the bound %v", st.hold, maxHoldFactor*opts.Hold)
	}
}

// fakeEnv drives a Tuner: the test delivers ticks and sets the process's
// CPU time and the servers' request time.
type fakeEnv struct {
	mu       sync.Mutex
	cpu      time.Duration
	requests time.Duration
	procs    []int
	tick     chan time.Time
	done     chan struct{}
}

func newFakeEnv() *fakeEnv {
	return &fakeEnv{tick: make(chan time.Time), done: make(chan struct{})}
}

func (f *fakeEnv) env() env {
	return env{
		cpu: func() time.Duration { f.mu.Lock(); defer f.mu.Unlock(); return f.cpu },
		setProcs: func(n int) {
			f.mu.Lock()
			f.procs = append(f.procs, n)
			f.mu.Unlock()
		},
		ticks:   func(time.Duration) (<-chan time.Time, func()) { return f.tick, func() {} },
		handled: func() { f.done <- struct{}{} },
	}
}

func (f *fakeEnv) requestTime() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// spend adds request time and CPU time, then delivers a tick at now and
// waits until the Tuner handled it.
func (f *fakeEnv) spend(now time.Time, requests, cpu time.Duration) {
	f.mu.Lock()
	f.requests += requests
	f.cpu += cpu
	f.mu.Unlock()
	f.tick <- now
	<-f.done
}

func (f *fakeEnv) settings() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.procs...)
}

func TestTunerFollowsRequestTime(t *testing.T) {
	f := newFakeEnv()
	tu := start(Options{Max: 2, RequestTime: f.requestTime, Window: 100 * time.Millisecond, Hold: 300 * time.Millisecond}, f.env())
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	f.spend(at(0), 0, 0) // first reading: nothing decided
	// 100 ms windows with 0.1 s of request time: one request in flight on
	// average, 0.2 core.
	for ms := 100; ms <= 400; ms += 100 {
		f.spend(at(ms), 100*time.Millisecond, 20*time.Millisecond)
	}
	if got := f.settings(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("settings after a quiet 400 ms: %v, want [1]", got)
	}
	// 3.2 s of request time in 100 ms: 32 requests in flight.
	f.spend(at(500), 3200*time.Millisecond, 20*time.Millisecond)
	tu.Stop()
	want := []int{1, 2, 2} // down, up, restored by Stop
	if got := f.settings(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("settings %v, want %v", got, want)
	}
}

func TestStartIsOffWhenGOMAXPROCSIsSet(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	if tu := Start(Options{Max: 2, RequestTime: func() time.Duration { return 0 }}); tu != nil {
		tu.Stop()
		t.Fatal("Start returned a Tuner with GOMAXPROCS set")
	}
}

func TestStartIsOffOnOneProcessor(t *testing.T) {
	if tu := Start(Options{Max: 1, RequestTime: func() time.Duration { return 0 }}); tu != nil {
		tu.Stop()
		t.Fatal("Start returned a Tuner for one processor")
	}
	var tu *Tuner
	tu.Stop() // a nil Tuner's Stop does nothing
}

func TestPerWall(t *testing.T) {
	tests := []struct {
		d, wall time.Duration
		want    float64
	}{
		{time.Second, time.Second, 1},
		{3 * time.Second, 100 * time.Millisecond, 30},
		{50 * time.Millisecond, 100 * time.Millisecond, 0.5},
		{time.Second, 0, 0},            // no interval
		{-time.Second, time.Second, 0}, // a counter that went back
	}
	for _, tt := range tests {
		if got := perWall(tt.d, tt.wall); got != tt.want {
			t.Errorf("perWall(%v, %v) = %v, want %v", tt.d, tt.wall, got, tt.want)
		}
	}
}

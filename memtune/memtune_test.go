package memtune

import (
	"sync"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		live, floor uint64
		percent     int
		want        int
	}{
		{0, 64 * mib, 35, 1600},         // not measured yet: as 4 MiB
		{1 * mib, 64 * mib, 35, 1600},   // tiny: as 4 MiB
		{16 * mib, 64 * mib, 35, 400},   // floor dominates
		{100 * mib, 64 * mib, 35, 64},   // floor still dominates
		{150 * mib, 64 * mib, 35, 42},   // 64 MiB is 42.7% of 150 MiB
		{200 * mib, 64 * mib, 35, 35},   // proportional from here on
		{4096 * mib, 64 * mib, 35, 35},  // large
		{300 * mib, 16 * mib, 20, 20},   // other settings
		{300 * mib, 600 * mib, 50, 200}, // big floor
		{1 << 40, 64 * mib, 10, 10},     // huge heap
		{10 * mib, 1 << 20, 100, 100},   // floor below percent
	}
	for _, tt := range tests {
		if got := Percent(tt.live, tt.floor, tt.percent); got != tt.want {
			t.Errorf("Percent(%d MiB, %d MiB, %d) = %d, want %d", tt.live/mib, tt.floor/mib, tt.percent, got, tt.want)
		}
	}
}

// fakeEnv records what a Tuner does; the test drives its clock.
type fakeEnv struct {
	mu    sync.Mutex
	s     stats
	gc    []int
	frees int
	tick  chan time.Time
	done  chan struct{}
}

func newFakeEnv(s stats) *fakeEnv {
	return &fakeEnv{s: s, tick: make(chan time.Time), done: make(chan struct{})}
}

func (f *fakeEnv) env() env {
	return env{
		read: func() stats { f.mu.Lock(); defer f.mu.Unlock(); return f.s },
		setGC: func(p int) {
			f.mu.Lock()
			f.gc = append(f.gc, p)
			f.mu.Unlock()
		},
		free:    func() { f.mu.Lock(); f.frees++; f.mu.Unlock() },
		ticks:   func(time.Duration) (<-chan time.Time, func()) { return f.tick, func() {} },
		handled: func() { f.done <- struct{}{} },
	}
}

func (f *fakeEnv) set(fn func(*stats)) { f.mu.Lock(); fn(&f.s); f.mu.Unlock() }

// at delivers a tick at now and waits until the Tuner handled it.
func (f *fakeEnv) at(now time.Time) {
	f.tick <- now
	<-f.done
}

func (f *fakeEnv) result() ([]int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.gc...), f.frees
}

func TestTunerRetargetsAfterEachCollection(t *testing.T) {
	const mib = 1 << 20
	f := newFakeEnv(stats{cycles: 3, live: 16 * mib})
	tu := start(Options{Percent: 35}, f.env())
	t0 := time.Unix(1000, 0)
	f.at(t0)
	f.set(func(s *stats) { s.cycles, s.live = 4, 400*mib })
	f.at(t0.Add(time.Second))
	f.set(func(s *stats) { s.live = 800 * mib }) // no new cycle: not read
	f.at(t0.Add(2 * time.Second))
	f.set(func(s *stats) { s.cycles, s.live = 5, 420*mib }) // same percent
	f.at(t0.Add(3 * time.Second))
	f.set(func(s *stats) { s.cycles, s.live = 6, 50*mib })
	f.at(t0.Add(4 * time.Second))
	tu.Stop()
	gc, frees := f.result()
	want := []int{400, 35, 128, 100}
	if len(gc) != len(want) {
		t.Fatalf("GOGC settings %v, want %v", gc, want)
	}
	for i := range want {
		if gc[i] != want[i] {
			t.Fatalf("GOGC settings %v, want %v", gc, want)
		}
	}
	if frees != 0 {
		t.Errorf("%d frees without IdleAfter", frees)
	}
}

func TestTunerReturnsMemoryWhenIdle(t *testing.T) {
	const mib = 1 << 20
	f := newFakeEnv(stats{cycles: 1, live: 640 * mib, allocs: 1000 * mib, spare: 200 * mib})
	tu := start(Options{IdleAfter: 2 * time.Second}, f.env())
	defer tu.Stop()
	t0 := time.Unix(1000, 0)
	frees := func() int { _, n := f.result(); return n }
	alloc := func(n uint64) { f.set(func(s *stats) { s.allocs += n }) }

	f.at(t0) // quiet spell starts
	alloc(5 * mib)
	f.at(t0.Add(time.Second)) // under 1/64 of live (10 MiB)
	f.at(t0.Add(1900 * time.Millisecond))
	if frees() != 0 {
		t.Fatal("freed before IdleAfter")
	}
	f.at(t0.Add(2 * time.Second))
	if frees() != 1 {
		t.Fatalf("frees = %d after a 2 s quiet spell", frees())
	}
	f.at(t0.Add(5 * time.Second))
	if frees() != 1 {
		t.Fatal("freed twice in one quiet spell")
	}
	alloc(20 * mib) // busy again: a new spell starts
	f.at(t0.Add(6 * time.Second))
	f.at(t0.Add(7 * time.Second))
	if frees() != 1 {
		t.Fatal("freed while busy")
	}
	f.set(func(s *stats) { s.spare = 10 * mib }) // little to return
	f.at(t0.Add(9 * time.Second))
	if frees() != 1 {
		t.Fatal("freed with little spare memory")
	}
	f.set(func(s *stats) { s.spare = 100 * mib })
	f.at(t0.Add(10 * time.Second))
	if frees() != 2 {
		t.Fatalf("frees = %d after the second quiet spell", frees())
	}
}

func TestStartRespectsGOGC(t *testing.T) {
	t.Setenv("GOGC", "80")
	if tu := Start(Options{}); tu != nil {
		tu.Stop()
		t.Fatal("tuner started although GOGC is set")
	}
	var none *Tuner
	none.Stop()
}

// TestStartProcess runs a real Tuner briefly: it must start and stop
// cleanly and leave GOGC at 100.
func TestStartProcess(t *testing.T) {
	t.Setenv("GOGC", "")
	tu := Start(Options{IdleAfter: time.Hour})
	if tu == nil {
		t.Fatal("no tuner")
	}
	tu.Stop()
}

package session

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"
)

// fakeClock is a manual Clock. Its tickers use unbuffered channels, so
// Advance returns only after Run has received every tick it caused.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*fakeTicker
	created chan struct{}
}

type fakeTicker struct {
	c      chan time.Time
	period time.Duration
	next   time.Time
	clock  *fakeClock
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), created: make(chan struct{}, 16)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) NewTicker(d time.Duration) Ticker {
	f.mu.Lock()
	defer f.mu.Unlock()
	tk := &fakeTicker{c: make(chan time.Time), period: d, next: f.now.Add(d), clock: f}
	f.tickers = append(f.tickers, tk)
	f.created <- struct{}{}
	return tk
}

func (tk *fakeTicker) C() <-chan time.Time { return tk.c }

func (tk *fakeTicker) Stop() {
	f := tk.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range f.tickers {
		if o == tk {
			f.tickers = append(f.tickers[:i], f.tickers[i+1:]...)
			return
		}
	}
}

// Advance moves time forward by d, stopping at every tick on the way and
// delivering it. Each tick is followed by a duplicate at the same instant
// (harmless: expiry is a function of the time) that acts as a barrier, and
// a last duplicate at the final time ends the call.
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	f.mu.Unlock()
	for {
		f.mu.Lock()
		var due *fakeTicker
		for _, tk := range f.tickers {
			if !tk.next.After(end) && (due == nil || tk.next.Before(due.next)) {
				due = tk
			}
		}
		if due == nil {
			f.now = end
			tickers := append([]*fakeTicker(nil), f.tickers...)
			f.mu.Unlock()
			for _, tk := range tickers {
				tk.c <- end
			}
			return
		}
		at := due.next
		f.now = at
		due.next = at.Add(due.period)
		f.mu.Unlock()
		// The second send is received only after the first tick has been
		// processed, so the clock does not move under Run's feet.
		due.c <- at
		due.c <- at
	}
}

// expiryLog records expire callbacks with the fake time they happened at.
type expiryLog struct {
	mu    sync.Mutex
	clock *fakeClock
	calls [][]int64
	at    map[int64][]time.Time
}

func (l *expiryLog) expire(ids []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, ids)
	now := l.clock.Now()
	for _, id := range ids {
		l.at[id] = append(l.at[id], now)
	}
}

func (l *expiryLog) times(id int64) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at[id]...)
}

// startTracker runs a Tracker on a fake clock and stops it at test end.
func startTracker(t *testing.T, tick time.Duration) (*Tracker, *fakeClock, *expiryLog) {
	t.Helper()
	clk := newFakeClock()
	log := &expiryLog{clock: clk, at: make(map[int64][]time.Time)}
	tr := NewTracker(clk, tick, log.expire)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Run(ctx)
	}()
	<-clk.created
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return tr, clk, log
}

func TestTrackerExpiryWindow(t *testing.T) {
	const tick = 2 * time.Second
	tests := []struct {
		name    string
		offset  time.Duration // time after the tracker's origin of the Add
		timeout time.Duration
	}{
		{"on a boundary", 0, 4 * time.Second},
		{"just after a boundary", time.Millisecond, 4 * time.Second},
		{"mid tick", 700 * time.Millisecond, 4 * time.Second},
		{"just before a boundary", tick - time.Millisecond, 4 * time.Second},
		{"timeout not a tick multiple", 300 * time.Millisecond, 5500 * time.Millisecond},
		{"timeout below a tick", 100 * time.Millisecond, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, clk, log := startTracker(t, tick)
			clk.Advance(tt.offset)
			added := clk.Now()
			tr.Add(42, tt.timeout)
			exp, ok := tr.Expiry(42)
			if !ok {
				t.Fatal("Expiry(42) not found")
			}
			if d := exp.Sub(added); d <= tt.timeout || d > tt.timeout+tick {
				t.Fatalf("Expiry is %v after add, want in (%v, %v]", d, tt.timeout, tt.timeout+tick)
			}
			// Step 100ms at a time so the observed expiry time is precise.
			for i := 0; i < 200 && len(log.times(42)) == 0; i++ {
				clk.Advance(100 * time.Millisecond)
			}
			got := log.times(42)
			if len(got) != 1 {
				t.Fatalf("expired %d times, want 1", len(got))
			}
			if d := got[0].Sub(added); d <= tt.timeout || d > tt.timeout+tick {
				t.Fatalf("expired %v after add, want in (%v, %v]", d, tt.timeout, tt.timeout+tick)
			}
			if !got[0].Equal(exp) {
				t.Fatalf("expired at %v, Expiry said %v", got[0], exp)
			}
		})
	}
}

func TestTrackerTouchPostpones(t *testing.T) {
	const tick, timeout = time.Second, 3 * time.Second
	tr, clk, log := startTracker(t, tick)
	tr.Add(1, timeout)
	tr.Add(2, timeout)
	// Touch session 1 every 1.5s for 10s; session 2 is left alone.
	for range 7 {
		clk.Advance(1500 * time.Millisecond)
		if !tr.Touch(1) {
			t.Fatal("Touch(1) = false for a tracked session")
		}
	}
	if got := log.times(1); len(got) != 0 {
		t.Fatalf("session 1 expired at %v despite touches", got)
	}
	if got := log.times(2); len(got) != 1 {
		t.Fatalf("session 2 expired %d times, want 1", len(got))
	}
	last := clk.Now()
	clk.Advance(timeout + tick)
	got := log.times(1)
	if len(got) != 1 {
		t.Fatalf("session 1 expired %d times after touches stopped, want 1", len(got))
	}
	if d := got[0].Sub(last); d <= timeout || d > timeout+tick {
		t.Fatalf("session 1 expired %v after last touch", d)
	}
	if tr.Touch(99) {
		t.Fatal("Touch(99) = true for an unknown session")
	}
}

func TestTrackerReportOnceAndRemove(t *testing.T) {
	const tick, timeout = time.Second, 2 * time.Second
	tr, clk, log := startTracker(t, tick)
	tr.Add(5, timeout)
	tr.Add(6, timeout)
	tr.Add(7, 10*timeout)
	clk.Advance(timeout + tick)
	log.mu.Lock()
	calls := append([][]int64(nil), log.calls...)
	log.mu.Unlock()
	if want := [][]int64{{5, 6}}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("expire calls = %v, want %v (one sorted batch)", calls, want)
	}
	// Still tracked until removed, but not reported again.
	if _, ok := tr.Expiry(5); !ok {
		t.Fatal("expired session 5 no longer tracked before Remove")
	}
	if tr.Len() != 3 {
		t.Fatalf("Len = %d, want 3", tr.Len())
	}
	clk.Advance(5 * tick)
	if n := len(log.times(5)); n != 1 {
		t.Fatalf("session 5 reported %d times, want 1", n)
	}
	// A touch re-arms an expired session.
	if !tr.Touch(6) {
		t.Fatal("Touch(6) = false for an expired but tracked session")
	}
	clk.Advance(timeout + tick)
	if n := len(log.times(6)); n != 2 {
		t.Fatalf("session 6 reported %d times after re-arm, want 2", n)
	}
	tr.Remove(5)
	tr.Remove(7) // pending: must never be reported
	tr.Remove(1234)
	if _, ok := tr.Expiry(5); ok {
		t.Fatal("Expiry(5) found after Remove")
	}
	if tr.Touch(7) {
		t.Fatal("Touch(7) = true after Remove")
	}
	clk.Advance(30 * tick)
	if n := len(log.times(7)); n != 0 {
		t.Fatalf("removed session 7 reported %d times", n)
	}
	if tr.Len() != 1 {
		t.Fatalf("Len = %d, want 1 (session 6)", tr.Len())
	}
}

func TestTrackerBuckets(t *testing.T) {
	const tick = time.Second
	tr, clk, _ := startTracker(t, tick)
	origin := clk.Now()
	tr.Add(3, 2*tick)
	tr.Add(1, 2*tick)
	tr.Add(2, 4*tick)
	want := map[time.Time][]int64{
		origin.Add(3 * tick): {1, 3},
		origin.Add(5 * tick): {2},
	}
	if got := tr.Buckets(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Buckets = %v, want %v", got, want)
	}
	// Moving session 2 leaves its old bucket behind, empty, as ZooKeeper does.
	clk.Advance(1500 * time.Millisecond)
	tr.Touch(2)
	want = map[time.Time][]int64{
		origin.Add(3 * tick): {1, 3},
		origin.Add(5 * tick): {},
		origin.Add(6 * tick): {2},
	}
	if got := tr.Buckets(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Buckets after touch = %v, want %v", got, want)
	}
	clk.Advance(5 * tick) // now origin+6.5s: every bucket has passed
	if got := tr.Buckets(); len(got) != 0 {
		t.Fatalf("Buckets after expiry = %v, want none", got)
	}
}

func TestTrackerAddBeforeRunRealigns(t *testing.T) {
	const tick, timeout = time.Second, 3 * time.Second
	clk := newFakeClock()
	log := &expiryLog{clock: clk, at: make(map[int64][]time.Time)}
	tr := NewTracker(clk, tick, log.expire)
	tr.Add(9, timeout)
	added := clk.Now()
	clk.Advance(400 * time.Millisecond) // Run starts off the old grid
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Run(ctx)
	}()
	<-clk.created
	for i := 0; i < 100 && len(log.times(9)) == 0; i++ {
		clk.Advance(100 * time.Millisecond)
	}
	got := log.times(9)
	if len(got) != 1 {
		t.Fatalf("expired %d times, want 1", len(got))
	}
	if d := got[0].Sub(added); d <= timeout || d > timeout+tick {
		t.Fatalf("expired %v after add, want in (%v, %v]", d, timeout, timeout+tick)
	}
	cancel()
	<-done
}

func TestTrackerConcurrentUse(t *testing.T) {
	tr, clk, _ := startTracker(t, 10*time.Millisecond)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range int64(200) {
				id := int64(w)*1000 + i
				tr.Add(id, 50*time.Millisecond)
				tr.Touch(id)
				_, _ = tr.Expiry(id)
				_ = tr.Buckets()
				if i%2 == 0 {
					tr.Remove(id)
				}
			}
		}()
	}
	for range 20 {
		clk.Advance(5 * time.Millisecond)
	}
	wg.Wait()
	clk.Advance(time.Second)
	if n := tr.Len(); n != 400 {
		t.Fatalf("Len = %d, want 400 (expired sessions stay until Remove)", n)
	}
	if b := tr.Buckets(); len(b) != 0 {
		t.Fatalf("Buckets = %v, want none after every session expired", b)
	}
}

func TestRealClockTicks(t *testing.T) {
	tk := RealClock{}.NewTicker(time.Millisecond)
	defer tk.Stop()
	select {
	case <-tk.C():
	case <-time.After(5 * time.Second):
		t.Fatal("RealClock ticker did not tick")
	}
	if (RealClock{}).Now().IsZero() {
		t.Fatal("RealClock.Now is zero")
	}
}

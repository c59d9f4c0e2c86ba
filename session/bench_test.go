package session

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// stepClock is a fake Clock whose Now moves forward by step on every call,
// like a busy server's clock between touches. It never ticks.
type stepClock struct {
	base  time.Time
	step  time.Duration
	calls atomic.Int64
}

func (c *stepClock) Now() time.Time {
	return c.base.Add(time.Duration(c.calls.Add(1)) * c.step)
}

func (c *stepClock) NewTicker(time.Duration) Ticker { return stoppedTicker{} }

type stoppedTicker struct{}

func (stoppedTicker) C() <-chan time.Time { return nil }
func (stoppedTicker) Stop()               {}

// BenchmarkTrackerTouch touches existing sessions of a Tracker holding
// many (2 s ticks, 30 s timeouts), as the leader does on every request:
//   - static: the clock stands still, so a touch keeps the session in its
//     bucket (the common case of many requests within one tick);
//   - moving: the clock advances 100 µs per call, so with 1,000 sessions a
//     session is touched every 0.1 s and changes bucket on one touch in 20,
//     and with 100,000 it is touched every 10 s and changes bucket on every
//     touch (the worst case: a map delete and insert each time).
func BenchmarkTrackerTouch(b *testing.B) {
	const tick, timeout = 2 * time.Second, 30 * time.Second
	for _, sessions := range []int{1000, 100_000} {
		for _, mode := range []struct {
			name string
			step time.Duration
		}{{"static", 0}, {"moving", 100 * time.Microsecond}} {
			b.Run(fmt.Sprintf("sessions=%d/%s", sessions, mode.name), func(b *testing.B) {
				clock := &stepClock{base: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), step: mode.step}
				tr := NewTracker(clock, tick, func([]int64) { b.Error("expiry in a tracker that never runs") })
				for i := range sessions {
					tr.Add(int64(i+1), timeout)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if !tr.Touch(int64(i%sessions + 1)) {
						b.Fatalf("Touch(%d) of a tracked session returned false", i%sessions+1)
					}
					i++
				}
				b.StopTimer()
				checkTouched(b, tr, clock, sessions, timeout)
			})
		}
	}
}

// checkTouched checks that the tracker still holds every session and that
// one more touch moves the session's expiry to after now+timeout.
func checkTouched(b *testing.B, tr *Tracker, clock *stepClock, sessions int, timeout time.Duration) {
	b.Helper()
	if tr.Len() != sessions {
		b.Fatalf("tracker holds %d sessions, want %d", tr.Len(), sessions)
	}
	id := int64(sessions)
	tr.Touch(id)
	now := clock.base.Add(time.Duration(clock.calls.Load()) * clock.step)
	exp, ok := tr.Expiry(id)
	if !ok || !exp.After(now.Add(timeout)) {
		b.Fatalf("expiry of session %d is %v (%v), want after %v", id, exp, ok, now.Add(timeout))
	}
}

// BenchmarkTableGet looks sessions up in a table of 100,000, as every
// request's session check does; parallel runs it from all CPUs at once
// (the table is read by many connection goroutines).
func BenchmarkTableGet(b *testing.B) {
	const sessions = 100_000
	tb := NewTable()
	for i := range sessions {
		tb.Add(int64(i+1), int32(4000+i%26000))
	}
	want := func(id int64) int32 { return int32(4000 + (id-1)%26000) }
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			id := int64(i%sessions + 1)
			info, ok := tb.Get(id)
			if !ok || info.ID != id || info.Timeout != want(id) {
				b.Fatalf("Get(%d) = %+v, %v", id, info, ok)
			}
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var seq atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := seq.Add(7919)
			for pb.Next() {
				id := i%sessions + 1
				if info, ok := tb.Get(id); !ok || info.Timeout != want(id) {
					b.Errorf("Get(%d) = %+v, %v", id, info, ok)
					return
				}
				i++
			}
		})
	})
	b.Run("missing", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := tb.Get(sessions + 1); ok {
				b.Fatal("Get of an unknown session succeeded")
			}
		}
	})
}

package session

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// Clock is the time source of a Tracker; tests substitute a fake.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker delivers ticks on C until stopped, like time.Ticker.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// RealClock is the Clock of the time package.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// NewTicker returns a time.Ticker with period d.
func (RealClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// Tracker is the leader's session expiry clock (ZooKeeper's ExpiryQueue).
//
// Time is cut into buckets at origin + k×tick. A session touched at time
// T with timeout D is filed in the first bucket boundary strictly after
// T+D; Run, ticking on those same boundaries, reports the bucket once its
// boundary has passed. So a session expires between D and D+tick after its
// last touch, and sessions expire in batches, one per tick.
//
// A reported session stays tracked (Expiry still answers) until Remove,
// which the caller does when the resulting closeSession is applied; it is
// not reported again unless a Touch or Add re-arms it first.
type Tracker struct {
	clock  Clock
	tick   time.Duration
	expire func(ids []int64)

	// mu guards every field below it. Never held while expire runs.
	mu sync.Mutex
	// origin is bucket 0's boundary; Run resets it to its ticker's start so
	// that ticks and boundaries coincide.
	origin time.Time
	// entries holds every tracked session.
	entries map[int64]*entry
	// buckets maps a bucket index to the sessions filed in it. As in
	// ZooKeeper, a bucket emptied by touches stays until its time passes.
	buckets map[int64]map[int64]struct{}
}

// entry is one tracked session.
type entry struct {
	timeout  time.Duration
	deadline time.Time // last touch + timeout
	bucket   int64     // index of the bucket the session is (or was last) in
	expired  bool      // reported; no longer in any bucket
}

// NewTracker returns a Tracker whose buckets are tick wide and which
// passes expired session ids, sorted, to expire (called from Run's
// goroutine, never with the Tracker's lock held, so it may call Remove).
// tick must be positive.
func NewTracker(clock Clock, tick time.Duration, expire func(ids []int64)) *Tracker {
	if tick <= 0 {
		tick = time.Millisecond
	}
	return &Tracker{
		clock:   clock,
		tick:    tick,
		expire:  expire,
		origin:  clock.Now(),
		entries: make(map[int64]*entry),
		buckets: make(map[int64]map[int64]struct{}),
	}
}

// Add starts tracking session id with a full timeout from now. For a
// session already tracked it sets the new timeout and touches it.
func (t *Tracker) Add(id int64, timeout time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[id]
	if !ok {
		e = &entry{expired: true} // not in any bucket yet
		t.entries[id] = e
	}
	e.timeout = timeout
	t.touchLocked(id, e, t.clock.Now())
}

// Touch gives session id a full timeout from now and reports whether the
// session is tracked. Touching a session that was already reported
// expired (but not yet removed) re-arms it.
func (t *Tracker) Touch(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[id]
	if !ok {
		return false
	}
	t.touchLocked(id, e, t.clock.Now())
	return true
}

// Remove stops tracking session id.
func (t *Tracker) Remove(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[id]
	if !ok {
		return
	}
	if !e.expired {
		delete(t.buckets[e.bucket], id)
	}
	delete(t.entries, id)
}

// Len returns the number of tracked sessions, expired ones included.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Expiry returns the time at which session id expires (or expired, if it
// was reported and not yet removed).
func (t *Tracker) Expiry(id int64) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[id]
	if !ok {
		return time.Time{}, false
	}
	return t.boundaryLocked(e.bucket), true
}

// Buckets returns the pending buckets: expiry time → session ids, sorted.
// Like ZooKeeper's dump it includes buckets that touches have emptied
// (with an empty, non-nil slice) until their time passes. The times carry
// no monotonic clock reading.
func (t *Tracker) Buckets() map[time.Time][]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[time.Time][]int64, len(t.buckets))
	for k, set := range t.buckets {
		ids := slices.Sorted(maps.Keys(set))
		if ids == nil {
			ids = []int64{}
		}
		out[t.boundaryLocked(k)] = ids
	}
	return out
}

// Run ticks every tick until ctx is done, reporting through expire the
// sessions whose bucket boundary has passed. It re-aligns the buckets
// with its own ticker first, so call it once per leadership term.
func (t *Tracker) Run(ctx context.Context) {
	t.mu.Lock()
	// Take the origin before starting the ticker, so every tick lands on
	// or after the boundary it stands for.
	t.realignLocked(t.clock.Now())
	t.mu.Unlock()
	ticker := t.clock.NewTicker(t.tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			if ids := t.expireDue(t.clock.Now()); len(ids) > 0 {
				t.expire(ids)
			}
		}
	}
}

// expireDue removes every bucket whose boundary is at or before now,
// marks its sessions expired and returns their ids, sorted.
func (t *Tracker) expireDue(now time.Time) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.indexLocked(now)
	var ids []int64
	for k, set := range t.buckets {
		if k > last {
			continue
		}
		for id := range set {
			t.entries[id].expired = true
			ids = append(ids, id)
		}
		delete(t.buckets, k)
	}
	slices.Sort(ids)
	return ids
}

// touchLocked files e in the first boundary strictly after now+timeout.
func (t *Tracker) touchLocked(id int64, e *entry, now time.Time) {
	e.deadline = now.Add(e.timeout)
	k := t.indexLocked(e.deadline) + 1
	if !e.expired && k == e.bucket {
		return
	}
	if !e.expired {
		delete(t.buckets[e.bucket], id)
	}
	t.fileLocked(id, e, k)
}

// fileLocked puts e into bucket k.
func (t *Tracker) fileLocked(id int64, e *entry, k int64) {
	set := t.buckets[k]
	if set == nil {
		set = make(map[int64]struct{})
		t.buckets[k] = set
	}
	set[id] = struct{}{}
	e.bucket = k
	e.expired = false
}

// realignLocked moves the origin to now and refiles every pending session
// by its deadline under the new origin.
func (t *Tracker) realignLocked(now time.Time) {
	t.origin = now
	clear(t.buckets)
	for id, e := range t.entries {
		k := t.indexLocked(e.deadline) + 1
		if e.expired {
			e.bucket = k
			continue
		}
		t.fileLocked(id, e, k)
	}
}

// indexLocked returns the index of the last boundary at or before at.
func (t *Tracker) indexLocked(at time.Time) int64 {
	d := at.Sub(t.origin)
	k := int64(d / t.tick)
	if d%t.tick < 0 {
		k-- // floor, not truncation, for times before the origin
	}
	return k
}

// boundaryLocked returns bucket k's boundary without a monotonic reading.
func (t *Tracker) boundaryLocked(k int64) time.Time {
	return t.origin.Add(time.Duration(k) * t.tick).Round(0)
}

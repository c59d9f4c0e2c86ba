package server

import (
	"sync"
	"sync/atomic"
)

// admission bounds what the server holds for requests it has read and not
// yet answered, as ZooKeeper's throttling does:
//
//   - their number: while more than globalOutstandingLimit are in flight, a
//     connection that has requests of its own in flight stops reading until
//     the server is back under the limit or its own requests are answered.
//     A connection with nothing in flight still reads one request, so a
//     client that only pings is not starved and no connection waits on
//     itself.
//   - the bytes of large requests (above largeRequestThreshold): a reader
//     about to read one waits while it would bring those bytes over
//     largeRequestMaxBytes, unless none are in flight (a single request
//     never waits for ever). ZooKeeper closes such a connection instead.
//
// The counters are atomics; mu guards wake, which is closed and replaced
// to wake every waiting reader when a request completes while some wait.
type admission struct {
	maxCount  int64
	maxBytes  int64
	threshold int64 // a request larger than this is large; -1: none is

	count   *atomic.Int64 // the server's outstanding requests (serverStats)
	bytes   atomic.Int64  // bytes of large requests in flight
	waiting atomic.Int32  // readers waiting in wait

	mu   sync.Mutex
	wake chan struct{}
}

func newAdmission(maxCount, maxBytes, threshold int, count *atomic.Int64) *admission {
	return &admission{
		maxCount: int64(maxCount), maxBytes: int64(maxBytes), threshold: int64(threshold),
		count: count, wake: make(chan struct{}),
	}
}

// large returns the bytes a request frame of size n holds against the
// large-request bound (0 when it is not a large request).
func (a *admission) large(n int) int64 {
	if a.threshold < 0 || int64(n) <= a.threshold {
		return 0
	}
	return int64(n)
}

// blocked reports whether a connection with own requests in flight must
// wait before reading a frame holding size large bytes.
func (a *admission) blocked(own, size int64) bool {
	if own > 0 && a.count.Load() >= a.maxCount {
		return true
	}
	if size == 0 {
		return false
	}
	held := a.bytes.Load()
	return held > 0 && held+size > a.maxBytes
}

// pass reports whether a reader may go on, reserving size large bytes when
// it may: the check and the reservation are one step, so that readers
// passing together cannot overshoot largeRequestMaxBytes.
func (a *admission) pass(own, size int64) bool {
	for {
		if a.blocked(own, size) {
			return false
		}
		if size == 0 {
			return true
		}
		held := a.bytes.Load()
		if (held == 0 || held+size <= a.maxBytes) && a.bytes.CompareAndSwap(held, held+size) {
			return true
		}
	}
}

// wait holds the calling reader until it may read a frame holding size
// large bytes, which it then holds reserved (see admitted and release).
// own counts the connection's requests in flight; ownDone is signalled
// when they drop to zero. It returns false, reserving nothing, when stop
// is closed first.
func (a *admission) wait(own *atomic.Int64, ownDone, stop <-chan struct{}, size int64) bool {
	if a.pass(own.Load(), size) {
		return true
	}
	a.waiting.Add(1)
	defer a.waiting.Add(-1)
	for {
		a.mu.Lock()
		wake := a.wake
		a.mu.Unlock()
		// Checked after taking the channel: a completion after this point
		// closes the channel taken.
		if a.pass(own.Load(), size) {
			return true
		}
		select {
		case <-wake:
		case <-ownDone:
		case <-stop:
			return false
		}
	}
}

// admitted accounts a request read (its large bytes were reserved by wait).
func (a *admission) admitted() { a.count.Add(1) }

// done accounts a request answered (or dropped), releasing its large bytes.
func (a *admission) done(size int64) {
	n := a.count.Add(-1)
	if size > 0 {
		a.bytes.Add(-size)
	}
	if a.waiting.Load() > 0 && (size > 0 || n < a.maxCount) {
		a.wakeAll()
	}
}

// release gives back large bytes reserved for a frame that did not become
// a request (it ended the connection or was answered at once).
func (a *admission) release(size int64) {
	if size == 0 {
		return
	}
	a.bytes.Add(-size)
	if a.waiting.Load() > 0 {
		a.wakeAll()
	}
}

// wakeAll wakes every waiting reader to check again.
func (a *admission) wakeAll() {
	a.mu.Lock()
	close(a.wake)
	a.wake = make(chan struct{})
	a.mu.Unlock()
}

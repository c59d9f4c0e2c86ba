package replication

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// commitNudge makes an idle leader's followers learn its commit index
// promptly, with raft's public API only.
//
// hashicorp/raft tells a follower the leader's commit index only in the
// appends that carry entries, or, when none follow, in the append the
// leader sends every CommitTimeout (randomized up to twice that); its
// heartbeats carry none. So after the last write of a burst a follower
// would apply it, and answer its client if the client wrote through it,
// only up to 2 × CommitTimeout later. When the leader's collector has seen
// its entries committed and nothing else is queued, it asks for a nudge:
// one goroutine appends a barrier (raft.Barrier, a real log entry), and
// the append that carries the barrier to each follower carries the commit
// index of the writes before it. TestBarrierCarriesCommitToFollowers pins
// the raft behaviour this relies on.
//
// Any entry appended after a request does the same (raft builds its append
// after the commit), so a request is dropped when the leader's log has
// grown since it was made: under load no barrier is appended. An urgent
// request (a follower's client waits: its forwarded writes, its sync) is
// served at once. Otherwise only the followers' watchers and readers wait,
// and the nudge waits nudgeDelay first: a client writing on the leader
// usually sends its next write within that time, and that write tells the
// followers, where a barrier would have delayed it by an fsync.
//
// One barrier is out at a time; requests made meanwhile are served after
// it. want may be called from any goroutine; run is the nudging goroutine.
type commitNudge struct {
	wake chan struct{} // holds one token while a request waits to be looked at

	// mu guards the request waiting to be served: pending, whether it is
	// urgent or its delay is over (due), and the leader's last log index
	// when the latest request was made.
	mu      sync.Mutex
	pending bool
	due     bool
	last    uint64
	timer   *time.Timer // the pending request's delay, when running
	gen     uint64      // counts the timers started; a stopped one's expire is ignored

	// covered is this leader's applied index when the last barrier that
	// committed was appended: followers have been told that the entries
	// up to it are committed (read by the sync handler, forward.go).
	covered atomic.Uint64
}

// nudgeDelay is how long a request that only followers' watchers and
// readers wait for is held back.
const nudgeDelay = time.Millisecond

func newCommitNudge() *commitNudge { return &commitNudge{wake: make(chan struct{}, 1)} }

// want asks for a nudge of the commits made up to now; last is the
// leader's last log index now. It never blocks.
func (c *commitNudge) want(last uint64, urgent bool) {
	c.mu.Lock()
	c.pending = true
	c.last = max(c.last, last)
	if urgent {
		c.due = true
	} else if !c.due && c.timer == nil {
		c.gen++
		gen := c.gen
		c.timer = time.AfterFunc(nudgeDelay, func() { c.expire(gen) })
	}
	c.mu.Unlock()
	if urgent {
		c.signal()
	}
}

// wantUnless asks for an urgent nudge unless followers were told already
// that the entries up to index are committed.
func (c *commitNudge) wantUnless(index, last uint64) {
	if index > c.covered.Load() {
		c.want(last, true)
	}
}

// expire ends the delay of the timer numbered gen, unless it was stopped.
func (c *commitNudge) expire(gen uint64) {
	c.mu.Lock()
	if c.timer == nil || gen != c.gen {
		c.mu.Unlock()
		return
	}
	c.timer = nil
	c.due = c.pending
	c.mu.Unlock()
	c.signal()
}

func (c *commitNudge) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take removes the request that is due, if any, and returns the leader's
// last log index when it was made.
func (c *commitNudge) take() (last uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending || !c.due {
		return 0, false
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	last = c.last
	c.pending, c.due, c.last = false, false, 0
	return last, true
}

// stopTimer stops a pending delay (the member is closing).
func (c *commitNudge) stopTimer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// nudgedRaft is the part of *raft.Raft the nudge uses.
type nudgedRaft interface {
	State() raft.RaftState
	LastIndex() uint64
	AppliedIndex() uint64
	Barrier(timeout time.Duration) raft.Future
}

// run serves due requests while this member leads, until stop is closed
// (also while a barrier waits); enqueue bounds the wait for raft to take a
// barrier. A barrier that fails
// (leadership lost, shutdown) is dropped: the next leader's appends tell
// the followers.
func (c *commitNudge) run(r nudgedRaft, enqueue time.Duration, stop <-chan struct{}) {
	defer c.stopTimer()
	for {
		select {
		case <-stop:
			return
		case <-c.wake:
		}
		last, ok := c.take()
		if !ok || r.State() != raft.Leader || r.LastIndex() > last {
			continue
		}
		applied := r.AppliedIndex()
		err, stopped := awaitFuture(r.Barrier(enqueue), stop)
		if stopped {
			return
		}
		if err == nil && applied > c.covered.Load() {
			c.covered.Store(applied)
		}
	}
}

// awaitFuture waits for f, or until stop is closed: a member closing must
// not wait for a barrier that needs a quorum it may no longer reach (its
// Close shuts raft down, which then ends f, only after this goroutine
// returned).
func awaitFuture(f raft.Future, stop <-chan struct{}) (err error, stopped bool) {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err, false
	case <-stop:
		return nil, true
	}
}

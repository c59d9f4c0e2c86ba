package replication

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// commitNudge makes an idle leader's followers learn its commit index at
// once, with raft's public API only.
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
// index of the writes before it. Under load no nudge is needed: the next
// entries carry it. TestBarrierCarriesCommitToFollowers pins the raft
// behaviour this relies on.
//
// Nudges coalesce: one barrier is out at a time, and the requests made
// meanwhile make one more after it. want may be called from any goroutine;
// run is the nudging goroutine.
type commitNudge struct {
	req chan struct{} // holds one token while a nudge is wanted
	// covered is this leader's applied index when the last barrier that
	// committed was appended: followers have been told that the entries
	// up to it are committed (read by the sync handler, forward.go).
	covered atomic.Uint64
}

func newCommitNudge() *commitNudge { return &commitNudge{req: make(chan struct{}, 1)} }

// want asks for a nudge; it never blocks.
func (c *commitNudge) want() {
	select {
	case c.req <- struct{}{}:
	default:
	}
}

// wantUnless asks for a nudge unless followers were told already that the
// entries up to index are committed.
func (c *commitNudge) wantUnless(index uint64) {
	if index > c.covered.Load() {
		c.want()
	}
}

// run appends one barrier per request while this member leads, until stop
// is closed; enqueue bounds the wait for raft to take a barrier. A barrier
// that fails (leadership lost, shutdown) is dropped: the next leader's
// appends tell the followers.
func (c *commitNudge) run(r *raft.Raft, enqueue time.Duration, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-c.req:
		}
		if r.State() != raft.Leader {
			continue
		}
		applied := r.AppliedIndex()
		if r.Barrier(enqueue).Error() == nil && applied > c.covered.Load() {
			c.covered.Store(applied)
		}
	}
}

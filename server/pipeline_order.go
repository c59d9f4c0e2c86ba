package server

import (
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/txnlog"
)

// sessionOrder keeps a session's writes from being seen by its earlier
// reads, without holding the writes back from group commit.
//
// ZooKeeper answers a session's requests in order: a read sees every write
// the session sent before it and none it sent after. A read waits in the
// pipeline for the earlier writes' outcomes, which gives the first half.
// For the second half a write that arrives while reads of the connection
// are still queued is proposed at once but gated: the FSM, before applying
// it, waits until those reads have run (BeforeApply). The write's fsync
// overlaps with the reads instead of following them, as in ZooKeeper,
// where only the commit of such a write waits for the session's reads.
//
// A sync or reconfig in the pipeline is a barrier: it waits for the log to
// be applied up to some index, which could include a gated write waiting
// for a read queued behind the barrier. Writes arriving while a barrier is
// queued are therefore deferred: the completer proposes them when it
// reaches them.
//
// mu guards every field. The reader calls addRead, addBarrier and
// admitWrite; the completer calls readDone, barrierDone and
// deferredProposed; the FSM goroutine calls gate.
type sessionOrder struct {
	mu        sync.Mutex
	readsIn   uint64            // reads queued so far
	readsDone uint64            // reads run so far (in queue order)
	barriers  int               // syncs and reconfigs queued, not completed
	deferred  int               // writes the completer has yet to propose
	gates     map[uint64]uint64 // request id -> readsIn when the write arrived
	// waitFor and release are set while the FSM waits for readsDone to
	// reach waitFor; release is closed when it does.
	waitFor uint64
	release chan struct{}
}

func (o *sessionOrder) addRead() {
	o.mu.Lock()
	o.readsIn++
	o.mu.Unlock()
}

func (o *sessionOrder) readDone() {
	o.mu.Lock()
	o.readsDone++
	if o.release != nil && o.readsDone >= o.waitFor {
		close(o.release)
		o.release = nil
	}
	o.mu.Unlock()
}

func (o *sessionOrder) addBarrier() {
	o.mu.Lock()
	o.barriers++
	o.mu.Unlock()
}

func (o *sessionOrder) barrierDone() {
	o.mu.Lock()
	o.barriers--
	o.mu.Unlock()
}

func (o *sessionOrder) deferredProposed() {
	o.mu.Lock()
	o.deferred--
	o.mu.Unlock()
}

// admitWrite decides for an arriving write with request id id: propose it
// now (true; gated when reads are queued, in which case gated is true too)
// or defer it to the completer (false).
func (o *sessionOrder) admitWrite(id uint64) (now, gated bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.barriers > 0 || o.deferred > 0 {
		o.deferred++
		return false, false
	}
	if o.readsIn > o.readsDone {
		if o.gates == nil {
			o.gates = make(map[uint64]uint64)
		}
		o.gates[id] = o.readsIn
		return true, true
	}
	return true, false
}

// gate removes the gate of write id, if it has one (found), and returns a
// channel closed once the reads queued before the write have run, or nil
// when they have run already.
func (o *sessionOrder) gate(id uint64) (release <-chan struct{}, found bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	need, ok := o.gates[id]
	if !ok {
		return nil, false
	}
	delete(o.gates, id)
	if o.readsDone >= need {
		return nil, true
	}
	o.waitFor = need
	o.release = make(chan struct{})
	return o.release, true
}

// gateLimit bounds how long the FSM waits for a session's earlier reads
// before applying its write anyway. Reads run in microseconds; reaching it
// means something is wrong, and stalling every session would be worse than
// letting one read see a later write of its own session.
const gateLimit = 5 * time.Second

// BeforeApply holds a transaction of one of this member's connections until
// the reads the connection sent before it have run (see sessionOrder). It
// runs on the FSM goroutine, outside the tree lock.
func (o *observer) BeforeApply(txn *txnlog.Txn) {
	s := (*Server)(o)
	if s.gated.Load() == 0 || txn.Owner != s.serverID {
		return
	}
	c := s.sessionConn(txn.Tree.SessionID)
	if c == nil {
		return
	}
	release, found := c.order.gate(txn.RequestID)
	if !found {
		return
	}
	defer s.gated.Add(-1)
	if release == nil {
		return
	}
	timer := time.NewTimer(gateLimit)
	defer timer.Stop()
	select {
	case <-release:
	case <-c.done:
	case <-s.ctx.Done():
	case <-timer.C:
		c.log.Warn("write applied before the session's earlier reads ran", "waited", gateLimit)
	}
}

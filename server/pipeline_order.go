package server

import "slices"

// The write order of a pipeline.
//
// ZooKeeper answers a session's requests in order: a read sees every write
// the session sent before it and none it sent after. The completer gives
// the first half, as it runs a read only after the outcomes of the writes
// queued before it. The second half is decided when a write is proposed:
//
//   - with nothing but completed items before it, it is proposed at once;
//   - with at most earlyReadLimit reads still to run before it (and no
//     sync, reconfig or deferred write), it is proposed at once too, as
//     an early write: those reads run, at the latest, on the FSM goroutine
//     right before the write is applied (pipeline_early.go). The FSM does
//     not wait for the client there; it runs a few in-memory reads, and
//     waits at most for the one read the completer may be running;
//   - otherwise it is deferred, and the completer proposes it as soon as
//     the last blocker (read, sync, reconfig) queued before it completes
//     (blockerDone). Writes reach the log in arrival order: a write
//     arriving behind a deferred one is deferred too.
//
// A client that does not read its replies gets no early writes
// (earlyOutboxBytes): the FSM builds no replies for it that could not
// leave.
//
// A sync blocks later writes so that its reply's zxid stays below that of
// any write sent after it; a reconfig, because the completer proposes its
// configuration change itself, which later writes must follow.
//
// The reader calls addBlocker and admit (through put), the completer
// blockerDone. pl.mu is held while proposing, so that the reader's and
// the completer's proposals reach the log in arrival order.

// earlyReadLimit bounds the reads a write proposed early may have to run
// on the apply path.
const earlyReadLimit = 32

// earlyOutboxBytes is how much a connection's outbox may hold for its
// writes still to be proposed early.
const earlyOutboxBytes = 1 << 20

// addBlocker counts a blocker of kind put in the queue.
func (pl *pipeline) addBlocker(kind itemKind) {
	pl.mu.Lock()
	pl.blockersIn++
	if kind.hard() {
		pl.hardPending++
	}
	pl.mu.Unlock()
}

// admit proposes the write p now, early or not, or defers it.
func (pl *pipeline) admit(p *pending) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	waiting := pl.blockersIn - pl.blockersDone
	switch {
	case len(pl.deferred) > 0 || pl.hardPending > 0:
	case waiting == 0:
		pl.proposeLocked(p)
		return
	case waiting <= earlyReadLimit && pl.out.queued() <= earlyOutboxBytes:
		pl.reads.expectWrite(p)
		pl.proposeLocked(p)
		return
	}
	p.after = pl.blockersIn
	pl.deferred = append(pl.deferred, p)
}

// blockerDone counts a blocker of kind completed and proposes, in order,
// the deferred writes that no longer wait for any.
func (pl *pipeline) blockerDone(kind itemKind) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.blockersDone++
	if kind.hard() {
		pl.hardPending--
	}
	n := 0
	for n < len(pl.deferred) && pl.deferred[n].after <= pl.blockersDone {
		pl.proposeLocked(pl.deferred[n])
		n++
	}
	pl.deferred = slices.Delete(pl.deferred, 0, n)
}

// proposeLocked proposes write p, registered first with the outbox so
// that notifications of transactions applied after it wait for its reply.
func (pl *pipeline) proposeLocked(p *pending) {
	pl.out.expect(p.txn.RequestID, p.seq)
	p.outcome = pl.submit(p.txn)
	p.txn = nil
}

package server

import "slices"

// The write order of a pipeline.
//
// ZooKeeper answers a session's requests in order: a read sees every write
// the session sent before it and none it sent after. The completer gives
// the first half, as it runs a read only after the outcomes of the writes
// queued before it. The second half is decided when a write is proposed: a
// write is proposed when it arrives only if every blocker (read, sync,
// reconfig) queued before it has completed; otherwise it is deferred, and
// the completer proposes it as soon as the last of those blockers
// completes (blockerDone). Writes reach the log in arrival order: a write
// arriving behind a deferred one is deferred too.
//
// So a write never reaches the log before its session's earlier reads
// have run, and nothing on the apply path waits for a connection. The
// price is paid by the session alone: a write sent right behind a read
// waits for that read, and so for the writes before the read, instead of
// sharing their log entry.
//
// A sync is a blocker so that its reply's zxid stays below that of any
// write sent after it; a reconfig, because the completer proposes its
// configuration change itself, which later writes must follow.
//
// The reader calls addBlocker and admit (through put), the completer
// blockerDone. pl.mu is held while proposing, so that the reader's and
// the completer's proposals reach the log in arrival order.

// addBlocker counts a blocker put in the queue.
func (pl *pipeline) addBlocker() {
	pl.mu.Lock()
	pl.blockersIn++
	pl.mu.Unlock()
}

// admit proposes the write p now, or defers it when a blocker queued
// before it has not completed or an earlier write is still deferred.
func (pl *pipeline) admit(p *pending) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if len(pl.deferred) == 0 && pl.blockersDone == pl.blockersIn {
		pl.proposeLocked(p)
		return
	}
	p.after = pl.blockersIn
	pl.deferred = append(pl.deferred, p)
}

// blockerDone counts a blocker completed and proposes, in order, the
// deferred writes that no longer wait for any.
func (pl *pipeline) blockerDone() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.blockersDone++
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
	pl.out.expect(p.txn.RequestID)
	p.outcome = pl.submit(p.txn)
	p.txn = nil
}

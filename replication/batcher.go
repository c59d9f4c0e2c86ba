package replication

import "sync"

// proposalQueue is the batcher: proposals wait in it until one goroutine,
// the flusher, packs whatever is waiting into a log entry (group commit),
// and raft batches the entries it receives into one disk write. There is
// no batcher goroutine: the proposer that finds no flusher at work becomes
// the flusher and drains the queue, so an idle server hands a write to
// raft without a goroutine switch, and a busy one still batches.
//
// At most maxUnappliedEntries entries are out at a time (handed to raft,
// or forwarded to the leader, and not yet seen through by the collector).
// While that many are out, proposals wait in the queue, and the collector
// flushes them as one entry when an entry completes: under load an entry
// carries what arrived during the previous one's round instead of the one
// or two proposals that arrived during its encoding.
//
// mu guards every field; space is signalled when the queue shrinks.
type proposalQueue struct {
	mu        sync.Mutex
	space     *sync.Cond
	flush     func(batch []proposal) // Node.flush; set once, before the first proposal
	items     []proposal
	unapplied int // entries out (counted by flushers, uncounted by the collector)
	flushing  bool
	closed    bool
}

// maxQueued bounds the waiting proposals: beyond it proposers wait for the
// flusher (back-pressure instead of an unbounded queue).
const maxQueued = 4096

// maxUnappliedEntries bounds the entries out at a time. Each entry costs
// every member the same fixed work whatever it carries (raft's bookkeeping,
// a log frame, a message to each follower, an apply), so a small bound
// makes entries carry more writes; below 8, session churn through several
// members made proposals wait (docs/dev/perf-journal.md, "Replication
// constants").
const maxUnappliedEntries = 8

// enqueue adds ps and, unless another goroutine is flushing or the
// entries out are at their bound, flushes the queue. Proposals enter the
// log in enqueue order; proposals enqueued together share log entries as
// far as the batch limits allow. After Close it fails them.
func (n *Node) enqueue(ps ...proposal) {
	if n.queue.add(ps) {
		return
	}
	for _, p := range ps {
		n.fail(p, ErrClosed)
	}
}

// add queues ps and drains the queue; false once the queue is closed.
func (q *proposalQueue) add(ps []proposal) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) >= maxQueued && (q.flushing || q.unapplied >= maxUnappliedEntries) && !q.closed {
		q.space.Wait()
	}
	if q.closed {
		return false
	}
	q.items = append(q.items, ps...)
	q.drainLocked()
	return true
}

// drainLocked flushes waiting proposals, one entry at a time, while the
// bound on entries out allows; nothing if another goroutine is flushing.
// Called with mu held, which it releases while it flushes.
func (q *proposalQueue) drainLocked() {
	if q.flushing {
		return
	}
	q.flushing = true
	for len(q.items) > 0 && q.unapplied < maxUnappliedEntries && !q.closed {
		batch := q.takeBatch()
		q.unapplied++
		q.space.Broadcast()
		q.mu.Unlock()
		q.flush(batch)
		q.mu.Lock()
	}
	q.flushing = false
	q.space.Broadcast()
}

// done uncounts an entry the collector has seen through and flushes what
// waited for it. It reports whether the batcher is now idle: nothing
// waiting, out or being flushed.
func (q *proposalQueue) done() (idle bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.unapplied--
	q.drainLocked()
	return len(q.items) == 0 && q.unapplied == 0 && !q.flushing
}

// takeBatch removes the proposals of the next log entry (called with mu).
func (q *proposalQueue) takeBatch() []proposal {
	size, k := 0, 0
	for k < len(q.items) && k < maxBatchTxns && (k == 0 || size+q.items[k].size <= maxBatchBytes) {
		size += q.items[k].size
		k++
	}
	batch := append([]proposal(nil), q.items[:k]...)
	rest := copy(q.items, q.items[k:])
	clear(q.items[rest:])
	q.items = q.items[:rest]
	return batch
}

// flush appends one batch to the log (or forwards it) and hands its future
// to the collector; during a leadership hand-off it first waits for the
// hand-off's end (transfer.go).
func (n *Node) flush(batch []proposal) {
	var e inflightEntry
	n.handoff.enter(n.stop, func() { e = n.commitBatch(batch) })
	n.inflight <- e
}

// closeQueue refuses further proposals, waits for a flush in progress,
// fails the proposals still waiting and ends the collector's input.
func (n *Node) closeQueue() {
	for _, p := range n.queue.close() {
		n.fail(p, ErrClosed)
	}
	close(n.inflight)
}

// close refuses further proposals, waits for a flush in progress and
// returns the proposals still waiting.
func (q *proposalQueue) close() []proposal {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.space.Broadcast()
	for q.flushing {
		q.space.Wait()
	}
	left := q.items
	q.items = nil
	return left
}

// fail reports err to a proposal that will not be proposed.
func (n *Node) fail(p proposal, err error) {
	if p.done != nil {
		p.done(err, 0)
	}
	n.waiters.trigger(p.id, Outcome{Err: err})
}

package replication

import "sync"

// proposalQueue is the batcher: proposals wait in it until one goroutine,
// the flusher, packs whatever is waiting into a log entry (group commit),
// and raft batches the entries it receives into one disk write. There is
// no batcher goroutine: the proposer that finds no flusher at work becomes
// the flusher and drains the queue, so an idle server hands a write to
// raft without a goroutine switch, and a busy one still batches.
//
// mu guards every field; space is signalled when the queue shrinks.
type proposalQueue struct {
	mu       sync.Mutex
	space    *sync.Cond
	items    []proposal
	flushing bool
	closed   bool
}

// maxQueued bounds the waiting proposals: beyond it proposers wait for the
// flusher (back-pressure instead of an unbounded queue).
const maxQueued = 4096

// idle reports whether nothing is waiting and nobody is flushing.
func (q *proposalQueue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) == 0 && !q.flushing
}

// enqueue adds ps and, unless another goroutine is flushing, flushes the
// queue. Proposals enter the log in enqueue order; proposals enqueued
// together share log entries as far as the batch limits allow. After
// Close it fails them.
func (n *Node) enqueue(ps ...proposal) {
	q := &n.queue
	q.mu.Lock()
	for len(q.items) >= maxQueued && q.flushing && !q.closed {
		q.space.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		for _, p := range ps {
			n.fail(p, ErrClosed)
		}
		return
	}
	q.items = append(q.items, ps...)
	if q.flushing {
		q.mu.Unlock()
		return
	}
	q.flushing = true
	for len(q.items) > 0 {
		batch := q.takeBatch()
		q.space.Broadcast()
		q.mu.Unlock()
		n.flush(batch)
		q.mu.Lock()
	}
	q.flushing = false
	q.space.Broadcast()
	q.mu.Unlock()
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
// to the collector.
func (n *Node) flush(batch []proposal) {
	fut, entry := n.commitBatch(batch)
	n.inflight <- inflightEntry{future: fut, props: batch, entry: entry}
}

// closeQueue refuses further proposals, waits for a flush in progress and
// ends the collector's input.
func (n *Node) closeQueue() {
	q := &n.queue
	q.mu.Lock()
	q.closed = true
	q.space.Broadcast()
	for q.flushing {
		q.space.Wait()
	}
	q.mu.Unlock()
	close(n.inflight)
}

// fail reports err to a proposal that will not be proposed.
func (n *Node) fail(p proposal, err error) {
	if p.done != nil {
		p.done(err)
	}
	n.waiters.trigger(p.id, Outcome{Err: err})
}

package replication

// The write path from Submit to the commit: proposals, the log entry a
// batch becomes on the leader (or the batch a follower forwards), and the
// collector that sees each entry through.

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/txnlog"
)

// proposal is a transaction waiting for the batcher. A transaction
// forwarded by another member arrives encoded; a local one is encoded by
// commitBatch straight into the log entry, which spares a copy of its data.
// id names the local waiter (0: none, for forwarded transactions); done, if
// set, learns whether the entry holding it was committed.
type proposal struct {
	encoded []byte      // the encoding of a forwarded transaction, else nil
	txn     *txnlog.Txn // the local transaction; nil when forwarded
	size    int         // len(encoded), or txn's estimated encoded size
	id      uint64
	done    func(err error, index uint64) // index: the entry's, when committed
}

// appendTo appends the transaction's encoding to dst.
func (p *proposal) appendTo(dst []byte) []byte {
	if p.encoded != nil {
		return append(dst, p.encoded...)
	}
	return txnlog.EncodeTxn(dst, p.txn)
}

// future is what the collector waits on: a raft apply or a forwarded batch.
type future interface{ Error() error }

type inflightEntry struct {
	future future
	props  []proposal
	// forwarded: the entry, built on this leader, carries writes forwarded
	// by another member, whose clients wait for the commit (nudge.go).
	forwarded bool
	// term and marks: what the entry, built on this leader in term, marked
	// for the forecaster (forecast.go).
	term  uint64
	marks forecastMarks
}

// Submit hands a transaction to the batcher (batcher.go) and returns the
// channel its Outcome arrives on. Transactions submitted by one goroutine
// are applied in submission order. Submit may itself append the waiting
// transactions to the log, and blocks while the batcher's queue is full.
func (n *Node) Submit(t *txnlog.Txn) <-chan Outcome {
	if t.RequestID == 0 {
		t.RequestID = n.nextID.Add(1)
	}
	if t.Owner == 0 {
		t.Owner = n.cfg.ServerID
	}
	ch := n.waiters.register(t.RequestID)
	local := *t // the caller keeps t; the batcher encodes this copy
	n.enqueue(proposal{txn: &local, size: txnlog.SizeHint(&local), id: t.RequestID})
	return ch
}

// NewRequestID returns a fresh request id for a transaction the caller
// wants to know the id of before Submit (Submit assigns one otherwise).
func (n *Node) NewRequestID() uint64 { return n.nextID.Add(1) }

// commitBatch appends a batch to the log (leader) or forwards it
// (follower), and returns what the collector needs to see it through.
func (n *Node) commitBatch(batch []proposal) inflightEntry {
	if !n.clustered() || n.IsLeader() {
		term := n.raft.CurrentTerm()
		marks := n.forecast.screen(batch, n.fsm.tree.Load(), term, n.raft.LastIndex(), n.forecastBarrier)
		size := 0
		for _, p := range batch {
			size += p.size
		}
		now := time.Now().UnixMilli()
		flags := byte(0)
		if !n.clustered() {
			flags = txnlog.FlagStandalone
		}
		entry := txnlog.EntryHeader(make([]byte, 0, size+20), flags, now, len(batch))
		for i := range batch {
			entry = batch[i].appendTo(entry)
		}
		entry = txnlog.Seal(entry)
		n.entrySizes.record(len(entry))
		return inflightEntry{future: n.raft.Apply(entry, 0), props: batch, term: term, marks: marks,
			forwarded: carriesForwarded(batch)}
	}
	return inflightEntry{future: &fwdFuture{ch: n.fwd.call(fwdPropose, encodeBatch(batch))}, props: batch}
}

// carriesForwarded reports whether batch holds a transaction forwarded by
// another member.
func carriesForwarded(batch []proposal) bool {
	for _, p := range batch {
		if p.encoded != nil {
			return true
		}
	}
	return false
}

// enqueueForwarded puts transactions forwarded by another member into this
// leader's batcher. It returns a channel that reports whether all of them
// were committed and, for the reply once they were, a function giving the
// index of the entry that holds the last of them (8 bytes). The forwarding
// follower does not act on it: its proposers' waiters fire when its own
// FSM applies the entry, once raft has told it of the commit.
func (n *Node) enqueueForwarded(txns [][]byte) (<-chan error, func() []byte) {
	ch := make(chan error, 1)
	if len(txns) == 0 {
		ch <- nil
		return ch, nil
	}
	var mu sync.Mutex
	remaining, first, last := len(txns), error(nil), uint64(0)
	done := func(err error, index uint64) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && first == nil {
			first = err
		}
		last = max(last, index)
		if remaining--; remaining == 0 {
			ch <- first
		}
	}
	props := make([]proposal, len(txns))
	for i, t := range txns {
		props[i] = proposal{encoded: t, size: len(t), done: done}
	}
	n.enqueue(props...)
	position := func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return n.entryAt(last).encode(nil)
	}
	return ch, position
}

// collectLoop waits for each entry's future in order and fails the
// proposals of entries that were not committed. The proposals of committed
// entries hear from the FSM, which triggers their waiters as it applies.
// When this leader has committed entries and nothing else is queued, it
// asks for a nudge (nudge.go), so that the followers learn the commit
// without waiting for raft's CommitTimeout: an urgent one when a
// follower's forwarded writes are among them.
func (n *Node) collectLoop() {
	defer n.wg.Done()
	// committed: this leader committed entries since the last nudge;
	// forwarded: some of them carried a follower's writes.
	committed, forwarded := false, false
	for e := range n.inflight {
		var index uint64 // the entry's, when this leader committed it
		err := e.future.Error()
		n.forecast.unmark(e.term, e.marks)
		if err != nil {
			n.log.Warn("writes not committed", "err", err, "txns", len(e.props))
		} else if f, ok := e.future.(raft.IndexFuture); ok {
			index = f.Index()
			committed, forwarded = true, forwarded || e.forwarded
		} else if f, ok := e.future.(*fwdFuture); ok {
			n.hintCommitted(f.committed()) // a follower: the leader committed the batch
		}
		if idle := n.queue.done(); idle && committed && n.clustered() && !n.pushesCover() {
			n.nudge.want(n.raft.LastIndex(), forwarded && n.hintTrans == nil)
			committed, forwarded = false, false
		}
		for _, p := range e.props {
			if p.done != nil {
				p.done(err, index)
			}
			if err != nil {
				n.waiters.trigger(p.id, Outcome{Err: fmt.Errorf("%w: %v", ErrNotReplicated, err)})
			}
		}
	}
}

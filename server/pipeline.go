package server

import (
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/txnlog"
)

// pipeline is one connection's way from its requests to its socket, and
// the one owner of the connection's order. It owns:
//
//   - queue: the requests in arrival order. The reader goroutine puts them
//     (put); the completer goroutine takes them one at a time and turns
//     each into its reply (conn_complete.go), so replies leave in request
//     order and a read runs only after the outcomes of the writes sent
//     before it.
//   - the write order (pipeline_order.go): when each write is proposed. A
//     write is proposed at once when only a few reads are queued before
//     it; those reads then run, at the latest, right before the write is
//     applied (pipeline_early.go), so no read sees a write sent after it.
//     Otherwise it waits for the reads, syncs and reconfigs queued before
//     it to complete. No write is held anywhere on the apply path.
//   - out (pipeline_out.go): the frames waiting for the socket, the
//     notifications held back behind this connection's own write replies,
//     and the writer goroutine, the only code that writes to the socket.
//
// Three goroutines touch a pipeline: the reader (put), the completer
// (the queue's consumer, blockerDone, replies) and the writer (out's
// writeLoop); the FSM goroutine queues notifications on out, which never
// blocks, and runs the reads a write proposed early must follow
// (pipeline_early.go). mu guards the write-order fields below, reads its
// own; out has its own lock. Lock order: mu, then reads.mu, then the
// tree's lock, then out's lock.
type pipeline struct {
	queue chan *pending
	out   *outbox
	reads earlyReads

	// submit proposes a transaction (the replica's Submit).
	submit func(t *txnlog.Txn) <-chan replication.Outcome

	// nextSeq numbers the items put (the reader's).
	nextSeq uint64

	mu           sync.Mutex
	blockersIn   uint64     // reads, syncs and reconfigs put so far
	blockersDone uint64     // of those, completed (in queue order)
	hardPending  int        // syncs and reconfigs put and not completed
	deferred     []*pending // writes not proposed yet, in arrival order
}

// newPipeline returns a connection's pipeline over queue (an empty queue
// of pipelineDepth items, conn_pool.go).
func newPipeline(queue chan *pending, submit func(t *txnlog.Txn) <-chan replication.Outcome) *pipeline {
	return &pipeline{queue: queue, out: newOutbox(outboxLimit), submit: submit}
}

// itemKind says how the completer turns a pipeline item into a reply.
type itemKind int

const (
	kindReply itemKind = iota // reply frame already built
	kindPing
	kindRead
	kindWrite
	kindSync
	kindReconfig
)

// blocks reports whether later writes of the connection wait for an item
// of this kind to complete (pipeline_order.go): it reads the state, or
// waits for the log (sync) or writes it outside the pipeline (reconfig).
func (k itemKind) blocks() bool { return k == kindRead || k == kindSync || k == kindReconfig }

// hard reports whether no write behind an item of this kind may be
// proposed before the item completes: a sync's reply zxid must stay
// below later writes', and a reconfig is proposed by the completer.
func (k itemKind) hard() bool { return k == kindSync || k == kindReconfig }

// pending is one request in a connection's pipeline. The reader fills it
// in before put; after put, txn, after and outcome belong to the
// pipeline's mu until the write is proposed, and then outcome to the
// completer. A read's ran, early and frame belong to the pipeline's
// reads.mu (pipeline_early.go).
type pending struct {
	kind       itemKind
	seq        uint64 // position in the pipeline, from 1
	xid        int32
	op         jute.OpCode
	req        jute.Record
	txn        *txnlog.Txn // a write's transaction, until it is proposed
	after      uint64      // a deferred write: the blockers put before it
	outcome    <-chan replication.Outcome
	frame      []byte
	ids        []jute.ID // the connection's identities when the request arrived
	closeAfter bool
	received   time.Time
	nullPath   bool     // a sync whose path was a null string
	refused    *refusal // a write refused before the log, proposed as a failed write (refuse.go)
	large      int64    // bytes held against largeRequestMaxBytes (admission.go)
	ran        bool     // a read: it has run (its reply is frame, or was queued)
	early      bool     // a read running before a write is applied: its reply is kept in frame
}

// pipelineDepth bounds the requests one connection may have in flight
// before its reader stops reading (back-pressure on that client only).
const pipelineDepth = 1000

// outboxLimit is how many bytes of queued replies and notifications a
// connection may hold before it is treated as a slow consumer and dropped:
// a client that pipelines requests and does not read its replies, or does
// not read its notifications.
const outboxLimit = 64 << 20

// put numbers and queues an item of the reader goroutine. A blocker is
// counted (and a read listed), and a write is proposed now or deferred
// (admit) before the item is queued; put blocks while the queue is full.
func (pl *pipeline) put(p *pending) {
	pl.nextSeq++
	p.seq = pl.nextSeq
	switch {
	case p.kind == kindRead:
		pl.reads.add(p)
		pl.addBlocker(p.kind)
	case p.kind.blocks():
		pl.addBlocker(p.kind)
	case p.kind == kindWrite:
		pl.admit(p)
	}
	pl.queue <- p
}

// enqueue puts a request in the pipeline, counted against the
// connection's and the server's outstanding requests; the first item of a
// frame carries the frame's large bytes. Called by the reader goroutine.
func (c *conn) enqueue(p *pending) {
	p.large, c.frameLarge = c.frameLarge, 0
	c.inflight.Add(1)
	c.s.admission.admitted()
	c.pl.put(p)
}

// finished accounts a pipeline item answered or dropped. Called by the
// completer goroutine.
func (c *conn) finished(p *pending) {
	c.s.admission.done(p.large)
	if c.inflight.Add(-1) == 0 {
		select {
		case c.idle <- struct{}{}:
		default:
		}
	}
}

package server

import (
	"sync"
	"sync/atomic"
)

// earlyReads are a pipeline's reads not yet answered, and the writes
// proposed before all of them ran (pipeline_order.go): each such write
// must not be applied before the reads queued ahead of it have run.
//
// A read is run once, by whichever comes first:
//
//   - the completer, when the read's turn comes (takeRead): its reply is
//     queued as usual;
//   - the FSM goroutine, right before it applies an early write of the
//     connection (runBefore, through the Observer's Applying): every read
//     queued before that write and not run yet runs then, against the
//     state just before the write, and its reply frame waits in the item
//     for the completer, which queues it in turn. Notifications those
//     reads' watches and the write produce are held back by the outbox
//     until the replies before them are queued (outbox.holdBefore).
//
// mu is held while a read runs, so a read never runs twice, and the FSM
// never applies a write while the completer is half way through a read
// queued before it. mu guards every field and the ran, early and frame
// fields of the listed reads.
type earlyReads struct {
	mu       sync.Mutex
	pending  []*pending        // reads put and not taken by the completer, in order
	writes   map[uint64]uint64 // early writes not applied yet: request id -> seq
	ranEarly int               // reads run by the FSM goroutine so far
	// count mirrors len(writes), so that the FSM skips connections
	// without early writes without taking mu.
	count atomic.Int32
}

// add lists a read put in the pipeline (reader goroutine).
func (e *earlyReads) add(p *pending) {
	e.mu.Lock()
	e.pending = append(e.pending, p)
	e.mu.Unlock()
}

// expectWrite registers write p, about to be proposed with reads still to
// run before it.
func (e *earlyReads) expectWrite(p *pending) {
	e.mu.Lock()
	if e.writes == nil {
		e.writes = make(map[uint64]uint64)
	}
	e.writes[p.txn.RequestID] = p.seq
	e.count.Store(int32(len(e.writes)))
	e.mu.Unlock()
}

// take returns the reply of read p, the oldest listed, running it with
// run unless it ran already (completer goroutine). run returns nil when
// it queued the reply itself.
func (e *earlyReads) take(p *pending, run func(*pending) []byte) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.pending) > 0 && e.pending[0] == p {
		e.pending[0] = nil
		e.pending = e.pending[1:]
	}
	if p.ran {
		return p.frame
	}
	p.ran = true
	return run(p)
}

// runBefore runs, in order, the reads queued before the early write
// requestID that have not run, each after telling the outbox to hold
// back notifications until the replies before it are queued; then it
// holds notifications back until every reply before the write is
// queued. Called on the FSM goroutine before the write is applied; a
// write that is not an early write of this pipeline is ignored.
func (e *earlyReads) runBefore(requestID uint64, out *outbox, run func(*pending) []byte) {
	if e.count.Load() == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	seq, ok := e.writes[requestID]
	if !ok {
		return
	}
	delete(e.writes, requestID)
	e.count.Store(int32(len(e.writes)))
	for _, p := range e.pending {
		if p.seq > seq {
			break
		}
		if p.ran {
			continue
		}
		out.holdBefore(p.seq)
		p.ran, p.early = true, true
		e.ranEarly++
		if frame := run(p); frame != nil {
			p.frame = frame
		}
	}
	out.holdBefore(seq)
}

// unapplied reports whether early writes were proposed and not applied.
func (e *earlyReads) unapplied() bool { return e.count.Load() > 0 }

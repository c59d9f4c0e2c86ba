package server

import (
	"net"
	"sync"
	"time"
)

// outbox is a pipeline's outbound half: the frames waiting for the socket,
// in the order they must leave, and the writer goroutine (writeLoop), the
// only code that writes to the connection's socket. Everyone else queues:
// the reader (the ConnectResponse, a four-letter word's reply), the
// completer (replies; a watched read's under the tree's read lock, see
// watches.go) and the FSM goroutine (notifications, under the tree's
// write lock). Queuing never waits for the socket: a client that does not
// read lets its frames pile up to limit and is then dropped, so a slow
// client holds up nobody but itself.
//
// Replies and notifications share the queue, so their order on the wire is
// the order they were queued. The outbox also keeps ZooKeeper's order
// between this connection's replies and notifications: a notification
// caused by a transaction applied after one of this connection's writes
// is held back until that write's reply is queued (the reply leaves from
// the pipeline, later than the apply), and one caused by a read run early
// (pipeline_early.go), or by the write those reads ran before, until the
// replies of the items before it are queued. Items are known by their
// position in the pipeline (seq). expecting maps the request ids of this
// connection's writes proposed and not applied to their seq; answered is
// the seq of the last item answered; a notification is held while
// answered is below holdUntil, and leaves once the item holdUntil named
// is answered.
//
// mu guards every field but the writer's, which writeLoop sets up and only
// the writer goroutine uses.
type outbox struct {
	mu     sync.Mutex
	frames [][]byte
	bytes  int
	closed bool
	spare  [][]byte      // a written slice of frames, emptied, for the queue to reuse
	wake   chan struct{} // capacity 1: "something changed", for the writer
	limit  int           // bytes queued (not yet written) tolerated before a push is refused

	expecting map[uint64]uint64
	holdUntil uint64
	answered  uint64
	held      []heldFrame
	heldBytes int

	// The writer's: the socket, how long one write may stall, the
	// statistics callback, the socket's write deadline and the copy of
	// the frames being written.
	nc           net.Conn
	writeTimeout time.Duration
	sent         func(frames [][]byte)
	deadline     time.Time
	bufs         [][]byte
}

// heldFrame is a notification held back until the pipeline's items up to
// need have been answered.
type heldFrame struct {
	frame []byte
	need  uint64
}

// newOutbox returns an empty outbox refusing pushes past limit queued
// bytes; writeLoop gives it its socket.
func newOutbox(limit int) *outbox {
	return &outbox{wake: make(chan struct{}, 1), limit: limit, expecting: make(map[uint64]uint64)}
}

// signal wakes the writer.
func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// push queues a frame that is neither a reply of the pipeline nor a
// notification (the ConnectResponse, a four-letter word's reply, a reply
// queued under the tree's read lock) and wakes the writer.
func (o *outbox) push(frame []byte) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.appendLocked(frame)
	o.mu.Unlock()
	o.signal()
}

// pushEvent queues a notification, or holds it back behind this
// connection's replies that must precede it, and wakes the writer. It is
// refused (false) when the outbox already holds more than limit bytes:
// the caller then drops the slow client instead of blocking the apply
// path. Called under the tree's write lock; it never blocks.
func (o *outbox) pushEvent(frame []byte) bool {
	o.mu.Lock()
	switch {
	case o.closed:
		o.mu.Unlock()
		return true
	case o.bytes+o.heldBytes > o.limit:
		o.mu.Unlock()
		return false
	case o.answered < o.holdUntil:
		o.held = append(o.held, heldFrame{frame: frame, need: o.holdUntil})
		o.heldBytes += len(frame)
		o.mu.Unlock()
		return true
	}
	o.appendLocked(frame)
	o.mu.Unlock()
	o.signal()
	return true
}

// appendLocked queues frame; o.mu is held.
func (o *outbox) appendLocked(frame []byte) {
	o.frames = append(o.frames, frame)
	o.bytes += len(frame)
}

// expect registers a write of this connection, item seq of its pipeline,
// before it is proposed.
func (o *outbox) expect(requestID, seq uint64) {
	o.mu.Lock()
	o.expecting[requestID] = seq
	o.mu.Unlock()
}

// markApplied notes that one of this connection's writes was applied
// (called under the tree lock, after its own notifications were pushed):
// later notifications wait for its reply.
func (o *outbox) markApplied(requestID uint64) {
	o.mu.Lock()
	if seq, ok := o.expecting[requestID]; ok {
		delete(o.expecting, requestID)
		o.holdUntil = max(o.holdUntil, seq)
	}
	o.mu.Unlock()
}

// holdBefore holds notifications queued from now on back until every item
// before seq has been answered (pipeline_early.go).
func (o *outbox) holdBefore(seq uint64) {
	o.mu.Lock()
	o.holdUntil = max(o.holdUntil, seq-1)
	o.mu.Unlock()
}

// queued is how many bytes the outbox holds for the socket.
func (o *outbox) queued() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bytes + o.heldBytes
}

// answer queues the reply frame of pipeline item seq (none when frame is
// nil: the item had no reply, or queued it already), releases the
// notifications held for the items up to seq, and wakes the writer. It is
// refused (false) when the outbox already holds more than limit bytes:
// the client does not read, and the caller drops it.
func (o *outbox) answer(seq uint64, frame []byte) bool {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return true
	}
	if frame != nil && o.bytes+o.heldBytes > o.limit {
		o.mu.Unlock()
		return false
	}
	if frame != nil {
		o.appendLocked(frame)
	}
	o.answered = max(o.answered, seq)
	n := 0
	for n < len(o.held) && o.held[n].need <= o.answered {
		o.appendLocked(o.held[n].frame)
		o.heldBytes -= len(o.held[n].frame)
		n++
	}
	o.held = o.held[n:]
	o.mu.Unlock()
	o.signal()
	return true
}

// close marks the end of the stream: the writer writes what is queued and
// returns, and its caller closes the socket.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.signal()
}

// take removes and returns every queued frame, and reports whether the
// outbox is closed. The queue goes on in the spare slice, if the writer
// gave one back.
func (o *outbox) take() (frames [][]byte, closed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	frames = o.frames
	o.frames, o.spare = o.spare, nil
	o.bytes = 0
	return frames, o.closed
}

// giveBack keeps the slice of frames just written as the next queue's
// storage, so that a connection's queue is not allocated anew for every
// write.
func (o *outbox) giveBack(frames [][]byte) {
	if cap(frames) > maxSpareFrames {
		return
	}
	clear(frames)
	o.mu.Lock()
	if o.spare == nil {
		o.spare = frames[:0]
	}
	o.mu.Unlock()
}

// maxSpareFrames bounds the queue storage kept between writes.
const maxSpareFrames = 64

// writeLoop is the writer goroutine: it writes the queued frames to nc,
// as many as are queued with one call, until the outbox is closed and
// empty or a write fails. It is the only code that writes to nc.
func (o *outbox) writeLoop(nc net.Conn, writeTimeout time.Duration, sent func(frames [][]byte)) error {
	o.nc, o.writeTimeout, o.sent = nc, writeTimeout, sent
	for {
		frames, closed := o.take()
		if len(frames) > 0 {
			if err := o.write(frames); err != nil {
				return err
			}
			o.giveBack(frames)
			continue
		}
		if closed {
			return nil
		}
		<-o.wake
	}
}

// write sends frames to the socket. A write that makes no progress for
// writeTimeout fails (half-open or stuck client).
func (o *outbox) write(frames [][]byte) error {
	if o.writeTimeout > 0 {
		o.extendDeadline(time.Now())
	}
	// WriteTo consumes its slice; the copy is the writer's, kept between
	// writes.
	o.bufs = append(o.bufs[:0], frames...)
	bufs := net.Buffers(o.bufs)
	_, err := bufs.WriteTo(o.nc)
	clear(o.bufs)
	if err != nil {
		return err
	}
	o.sent(frames)
	return nil
}

// extendDeadline moves the socket's write deadline to writeTimeout from now
// when less than half of it is left: a stuck write fails after between half
// and all of writeTimeout, and a busy connection does not pay for a
// deadline change on every write.
func (o *outbox) extendDeadline(now time.Time) {
	if now.Add(o.writeTimeout / 2).Before(o.deadline) {
		return
	}
	o.deadline = now.Add(o.writeTimeout)
	o.nc.SetWriteDeadline(o.deadline)
}

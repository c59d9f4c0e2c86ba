package server

import (
	"net"
	"sync"
	"syscall"
	"time"
)

// outbox is a connection's outbound frame queue, written to the socket by
// whichever goroutine owns it: the writer, the completer writing a reply
// directly, or a flusher writing notifications (flush.go). Replies and
// notifications share it, so their order on the wire is the order they
// were pushed. Guarded by mu.
//
// It also keeps ZooKeeper's per-connection order between this connection's
// write replies and notifications: a notification caused by a transaction
// applied after one of this connection's writes is held back until that
// write's reply has been queued (the reply leaves from the pipeline, later
// than the apply). expecting holds the request ids of this connection's
// writes not applied yet; applied and answered count its writes applied
// and answered; held keeps the notifications waiting, each with the count
// of applied writes whose replies must precede it.
type outbox struct {
	mu     sync.Mutex
	frames [][]byte
	bytes  int
	closed bool
	wake   chan struct{} // capacity 1: "something changed"
	limit  int           // bytes queued (not yet written) tolerated before a push is refused

	expecting map[uint64]struct{}
	applied   int64
	answered  int64
	held      []heldFrame
	heldBytes int

	// writing is true while a goroutine (the writer, or the completer
	// writing a reply directly) owns the socket. nc, writeTimeout and sent
	// are set when the writer starts; failed is a direct write's error,
	// which ends the writer.
	writing      bool
	nc           net.Conn
	writeTimeout time.Duration
	sent         func(frames [][]byte)
	failed       error
	deadline     time.Time // the socket's write deadline; the owner's

	// raw writes to nc's descriptor without waiting, when nc has one (set
	// with nc): the flusher's way to the socket. flushPending is true
	// while the outbox waits in the flusher's queue.
	raw          *rawWriter
	bufs         [][]byte // the owner's copy of the frames being written
	spare        [][]byte // a written slice of frames, emptied, for the queue to reuse
	flushPending bool
}

type heldFrame struct {
	frame []byte
	need  int64
}

func newOutbox(limit int) *outbox {
	return &outbox{wake: make(chan struct{}, 1), limit: limit, expecting: make(map[uint64]struct{})}
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// push queues a frame that is not a notification and wakes the writer.
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

// pushEvent queues a notification without waking the writer. It is refused
// (ok false) when the queue already holds more than limit bytes: the caller
// then drops the slow client instead of blocking the apply path. flush is
// true when the frame is queued for the socket and the outbox is not yet
// waiting for a flush: the caller must then hand the outbox to the
// flusher, which writes it or wakes the writer.
func (o *outbox) pushEvent(frame []byte) (ok, flush bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.closed:
		return true, false
	case o.bytes+o.heldBytes > o.limit:
		return false, false
	case o.applied > o.answered:
		o.held = append(o.held, heldFrame{frame: frame, need: o.applied})
		o.heldBytes += len(frame)
		return true, false
	}
	o.appendLocked(frame)
	flush = !o.flushPending
	o.flushPending = true
	return true, flush
}

func (o *outbox) appendLocked(frame []byte) {
	o.frames = append(o.frames, frame)
	o.bytes += len(frame)
}

// expect registers a write of this connection before it is proposed.
func (o *outbox) expect(requestID uint64) {
	o.mu.Lock()
	o.expecting[requestID] = struct{}{}
	o.mu.Unlock()
}

// applied notes that one of this connection's writes was applied (called
// under the tree lock, after its own notifications were pushed).
func (o *outbox) markApplied(requestID uint64) {
	o.mu.Lock()
	if _, ok := o.expecting[requestID]; ok {
		delete(o.expecting, requestID)
		o.applied++
	}
	o.mu.Unlock()
}

// pushReply queues a reply frame (write: the reply of an applied write,
// which releases the notifications waiting for it). With direct, when
// nothing is queued and the socket is idle, the caller writes the frames
// itself instead of waking the writer: one goroutine switch less per
// request on a connection that has one request in flight. It is refused
// (false) when the queue already holds more than limit bytes: the client
// does not read, and the caller drops it.
func (o *outbox) pushReply(frame []byte, write, direct bool) bool {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return true
	}
	if o.bytes+o.heldBytes > o.limit {
		o.mu.Unlock()
		return false
	}
	idle := direct && !o.writing && len(o.frames) == 0 && o.nc != nil
	o.appendLocked(frame)
	if write {
		o.answered++
		n := 0
		for n < len(o.held) && o.held[n].need <= o.answered {
			o.appendLocked(o.held[n].frame)
			o.heldBytes -= len(o.held[n].frame)
			n++
		}
		o.held = o.held[n:]
	}
	if !idle {
		o.mu.Unlock()
		o.signal()
		return true
	}
	o.writeOwned(o.claimLocked())
	// Frames pushed meanwhile, a failure or a close are the writer's.
	o.signal()
	return true
}

// close marks the end of the stream: the writer flushes what is queued and
// then closes the socket.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.signal()
}

// claimLocked makes the caller the socket's owner (writing), takes every
// queued frame for it to write and unlocks mu.
func (o *outbox) claimLocked() [][]byte {
	frames := o.takeLocked()
	o.writing = true
	o.mu.Unlock()
	return frames
}

// takeLocked removes and returns every queued frame. The queue goes on in
// the spare slice, if the last owner gave one back.
func (o *outbox) takeLocked() [][]byte {
	frames := o.frames
	o.frames, o.spare = o.spare, nil
	o.bytes = 0
	return frames
}

// take claims the socket and returns the queued frames, unless another
// goroutine is writing (busy). It also reports whether the outbox is
// closed and a direct write's failure.
func (o *outbox) take() (frames [][]byte, busy, closed bool, failed error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.writing {
		return nil, true, o.closed, o.failed
	}
	frames = o.takeLocked()
	o.writing = len(frames) > 0
	return frames, false, o.closed, o.failed
}

// write sends frames to the socket. A write that makes no progress for
// writeTimeout fails (half-open or stuck client).
func (o *outbox) write(frames [][]byte) error {
	if o.writeTimeout > 0 {
		o.extendDeadline(time.Now())
	}
	// WriteTo consumes its slice; the copy is the owner's, kept between
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
// deadline change on every write. Called by the socket's owner.
func (o *outbox) extendDeadline(now time.Time) {
	if now.Add(o.writeTimeout / 2).Before(o.deadline) {
		return
	}
	o.deadline = now.Add(o.writeTimeout)
	o.nc.SetWriteDeadline(o.deadline)
}

// giveBackLocked keeps the slice of frames just written as the next
// queue's storage, so that a connection's queue is not allocated anew for
// every write.
func (o *outbox) giveBackLocked(frames [][]byte) {
	if o.spare == nil && cap(frames) <= maxSpareFrames {
		clear(frames)
		o.spare = frames[:0]
	}
}

// maxSpareFrames bounds the queue storage kept between writes.
const maxSpareFrames = 64

// writeOwned writes frames while the caller owns the socket (writing is
// set), then gives the socket up and records a failure for the writer.
func (o *outbox) writeOwned(frames [][]byte) error {
	err := o.write(frames)
	o.mu.Lock()
	o.writing = false
	o.giveBackLocked(frames)
	if err != nil && o.failed == nil {
		o.failed = err
	}
	o.mu.Unlock()
	return err
}

// writeLoop drains the outbox into nc until the outbox is closed and empty
// or a write fails.
func (o *outbox) writeLoop(nc net.Conn, writeTimeout time.Duration, sent func(frames [][]byte)) error {
	o.mu.Lock()
	o.nc, o.writeTimeout, o.sent = nc, writeTimeout, sent
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			o.raw = newRawWriter(rc)
		}
	}
	o.mu.Unlock()
	for {
		frames, busy, closed, failed := o.take()
		if failed != nil {
			return failed
		}
		if len(frames) > 0 {
			if err := o.writeOwned(frames); err != nil {
				return err
			}
			continue
		}
		if closed && !busy {
			return nil
		}
		<-o.wake
	}
}

// flush is the flusher's write: when no other goroutine owns the socket, it
// writes the queued frames from the calling goroutine without waiting for
// the socket. What it cannot write (a full socket buffer, an expired write
// deadline, no raw descriptor) stays queued, in order, for the writer,
// which it then wakes; so does a write error, which ends the writer.
func (o *outbox) flush() {
	o.mu.Lock()
	o.flushPending = false
	if o.writing || len(o.frames) == 0 {
		// The owner writes what was queued once it is done.
		o.mu.Unlock()
		return
	}
	if o.raw == nil || o.failed != nil {
		o.mu.Unlock()
		o.signal()
		return
	}
	frames := o.claimLocked()
	rest, err := o.raw.tryWrite(frames)
	if done := len(frames) - len(rest); done > 0 {
		o.sent(frames[:done])
	}
	if !o.endFlush(frames, rest, err) {
		o.signal()
	}
}

// endFlush gives the socket up after a flush wrote frames but rest, which
// goes back to the head of the queue. It reports whether the writer has
// nothing to do: nothing queued, no failure, not closed.
func (o *outbox) endFlush(frames, rest [][]byte, err error) (idle bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writing = false
	if err != nil && o.failed == nil {
		o.failed = err
	}
	if len(rest) == 0 {
		o.giveBackLocked(frames)
	} else {
		o.frames = append(rest, o.frames...)
		for _, f := range rest {
			o.bytes += len(f)
		}
	}
	return len(o.frames) == 0 && o.failed == nil && !o.closed
}

package server

import (
	"net"
	"sync"
	"time"
)

// outbox is a connection's outbound frame queue, written by the writer
// goroutine. Replies and notifications share it, so their order on the wire
// is the order they were pushed. Guarded by mu.
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
	limit  int           // bytes of queued notifications tolerated

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

// push queues a frame. A notification (event) is refused when the queue
// already holds more than limit bytes: the caller then drops the slow
// client instead of blocking the apply path.
func (o *outbox) push(frame []byte, event bool) bool {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return true
	}
	if event && o.bytes+o.heldBytes > o.limit {
		o.mu.Unlock()
		return false
	}
	if event && o.applied > o.answered {
		o.held = append(o.held, heldFrame{frame: frame, need: o.applied})
		o.heldBytes += len(frame)
		o.mu.Unlock()
		return true
	}
	o.appendLocked(frame)
	o.mu.Unlock()
	o.signal()
	return true
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
// request on a connection that has one request in flight.
func (o *outbox) pushReply(frame []byte, write, direct bool) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
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
		return
	}
	frames := o.takeLocked()
	o.writing = true
	o.mu.Unlock()
	o.writeOwned(frames)
	// Frames pushed meanwhile, a failure or a close are the writer's.
	o.signal()
}

// close marks the end of the stream: the writer flushes what is queued and
// then closes the socket.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.signal()
}

// takeLocked removes and returns every queued frame.
func (o *outbox) takeLocked() [][]byte {
	frames := o.frames
	o.frames = nil
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
	bufs := net.Buffers(append([][]byte(nil), frames...))
	if _, err := bufs.WriteTo(o.nc); err != nil {
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

// writeOwned writes frames while the caller owns the socket (writing is
// set), then gives the socket up and records a failure for the writer.
func (o *outbox) writeOwned(frames [][]byte) error {
	err := o.write(frames)
	o.mu.Lock()
	o.writing = false
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

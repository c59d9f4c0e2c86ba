package server

import (
	"net"
	"sync"
	"time"
)

// outbox is a connection's outbound frame queue, written by the writer
// goroutine. Replies and notifications share it, so their order on the wire
// is the order they were pushed. Guarded by mu.
type outbox struct {
	mu     sync.Mutex
	frames [][]byte
	bytes  int
	closed bool
	wake   chan struct{} // capacity 1: "something changed"
	limit  int           // bytes of queued notifications tolerated
}

func newOutbox(limit int) *outbox {
	return &outbox{wake: make(chan struct{}, 1), limit: limit}
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
	if event && o.bytes > o.limit {
		o.mu.Unlock()
		return false
	}
	o.frames = append(o.frames, frame)
	o.bytes += len(frame)
	o.mu.Unlock()
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

// take removes and returns every queued frame, and whether the outbox is
// closed.
func (o *outbox) take() ([][]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	frames := o.frames
	o.frames = nil
	o.bytes = 0
	return frames, o.closed
}

// writeLoop drains the outbox into nc until the outbox is closed and empty
// or a write fails. A write that makes no progress for writeTimeout drops
// the connection (half-open or stuck client).
func (o *outbox) writeLoop(nc net.Conn, writeTimeout time.Duration, sent func(frames [][]byte)) error {
	for {
		frames, closed := o.take()
		if len(frames) > 0 {
			if writeTimeout > 0 {
				nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			}
			bufs := net.Buffers(append([][]byte(nil), frames...))
			if _, err := bufs.WriteTo(nc); err != nil {
				return err
			}
			sent(frames)
			continue
		}
		if closed {
			return nil
		}
		<-o.wake
	}
}

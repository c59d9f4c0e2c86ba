package server

import (
	"context"
	"sync"
)

// flushChunk is how many outboxes a flusher goroutine claims at a time: small
// enough that a fan-out to many connections is shared by all of them.
const flushChunk = 16

// flusher writes fresh notifications to their sockets from a few goroutines
// (one per processor) instead of waking each connection's writer. A watch
// fan-out queues one frame on each of many connections; waking the writer
// of each costs a goroutine switch per notification, where a flusher writes
// connection after connection. It writes only when the socket is idle and
// never waits for it (outbox.flush): a connection it cannot finish is left
// to its writer.
type flusher struct {
	wake chan struct{} // capacity 1: "the queue is not empty"

	mu    sync.Mutex // guards queue and next
	queue []*outbox
	next  int // queue[next:] is still to flush
}

func newFlusher() *flusher {
	return &flusher{wake: make(chan struct{}, 1)}
}

// add queues o for a flush. Called by notifiers, under the tree lock: it
// only takes the flusher's lock.
func (f *flusher) add(o *outbox) {
	f.mu.Lock()
	f.queue = append(f.queue, o)
	first := len(f.queue)-f.next == 1
	f.mu.Unlock()
	if first {
		f.signal()
	}
}

func (f *flusher) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// claim moves up to flushChunk queued outboxes into buf and returns it,
// waking another flusher when some are left.
func (f *flusher) claim(buf []*outbox) []*outbox {
	f.mu.Lock()
	end := min(f.next+flushChunk, len(f.queue))
	buf = append(buf[:0], f.queue[f.next:end]...)
	clear(f.queue[f.next:end])
	f.next = end
	left := f.next < len(f.queue)
	if !left {
		f.queue, f.next = f.queue[:0], 0
	}
	f.mu.Unlock()
	if left {
		f.signal()
	}
	return buf
}

// run flushes queued outboxes until ctx ends.
func (f *flusher) run(ctx context.Context) {
	var buf []*outbox
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		}
		for buf = f.claim(buf); len(buf) > 0; buf = f.claim(buf) {
			for _, o := range buf {
				o.flush()
			}
		}
		clear(buf)
	}
}

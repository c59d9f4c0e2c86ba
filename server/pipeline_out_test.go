package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"time"
)

// TestWriteDeadlineMovesWhenHalfUsed checks when a write moves the socket's
// deadline: only once less than half of writeTimeout is left.
func TestWriteDeadlineMovesWhenHalfUsed(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	o := newOutbox(1 << 20)
	o.nc, o.writeTimeout = a, time.Second
	t0 := time.Now()
	steps := []struct {
		at   time.Duration
		want time.Duration // deadline after the step, from t0
	}{
		{0, time.Second},
		{100 * time.Millisecond, time.Second},
		{499 * time.Millisecond, time.Second},
		{501 * time.Millisecond, 1501 * time.Millisecond},
		{900 * time.Millisecond, 1501 * time.Millisecond},
		{1100 * time.Millisecond, 2100 * time.Millisecond},
	}
	for _, s := range steps {
		o.extendDeadline(t0.Add(s.at))
		if got := o.deadline.Sub(t0); got != s.want {
			t.Fatalf("write at %v: deadline %v after start, want %v", s.at, got, s.want)
		}
	}
}

// TestStuckWriteFails checks that a write the peer never reads fails
// within writeTimeout instead of blocking the writer.
func TestStuckWriteFails(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	o := newOutbox(1 << 20)
	o.nc, o.writeTimeout, o.sent = a, 100*time.Millisecond, func([][]byte) {}
	done := make(chan error, 1)
	go func() { done <- o.write([][]byte{make([]byte, 10)}) }()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("stuck write: %v, want a deadline error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write nobody reads did not fail within 5s")
	}
}

// TestPushEvent checks when a notification is queued, held back or
// refused.
func TestPushEvent(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(o *outbox)
		wantOK    bool
		wantQueue int
		wantHeld  int
	}{
		{"first notification", func(*outbox) {}, true, 1, 0},
		{"behind another", func(o *outbox) { o.pushEvent([]byte("x")) }, true, 2, 0},
		{"closed", func(o *outbox) { o.close() }, true, 0, 0},
		{"over the limit", func(o *outbox) { o.push(make([]byte, 100)) }, false, 1, 0},
		{"behind an unanswered applied write", func(o *outbox) { o.expect(7, 1); o.markApplied(7) }, true, 0, 1},
		{"behind a write not applied yet", func(o *outbox) { o.expect(7, 1) }, true, 1, 0},
		{"behind an answered write", func(o *outbox) {
			o.expect(7, 1)
			o.markApplied(7)
			o.answer(1, []byte("reply"))
		}, true, 2, 0},
		{"behind the replies before a read run early", func(o *outbox) { o.holdBefore(3) }, true, 0, 1},
		{"behind the replies before the first item", func(o *outbox) { o.holdBefore(1) }, true, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOutbox(50)
			tt.setup(o)
			ok := o.pushEvent([]byte("event"))
			if ok != tt.wantOK || len(o.frames) != tt.wantQueue || len(o.held) != tt.wantHeld {
				t.Fatalf("pushEvent = %v with %d queued, %d held; want %v with %d, %d",
					ok, len(o.frames), len(o.held), tt.wantOK, tt.wantQueue, tt.wantHeld)
			}
		})
	}
}

// TestHeldNotificationsFollowTheirReply: notifications of transactions
// applied after two of the connection's writes leave after the second
// write's reply, and in the order they came.
func TestHeldNotificationsFollowTheirReply(t *testing.T) {
	o := newOutbox(1 << 20)
	o.expect(1, 1)
	o.expect(2, 3)
	o.markApplied(1)
	o.pushEvent([]byte("e1")) // after write 1: waits for its reply
	o.markApplied(2)
	o.pushEvent([]byte("e2")) // after write 2: waits for its reply
	o.answer(1, []byte("r1"))
	o.answer(2, []byte("read"))
	o.answer(3, []byte("r2"))
	if got, want := queuedStrings(o), []string{"r1", "e1", "read", "r2", "e2"}; !slices.Equal(got, want) {
		t.Fatalf("queued %q, want %q", got, want)
	}
}

// TestEarlyReadNotificationsKeepTheirPlace: a write (item 3) applied with
// a read before it (item 2) run early, behind an earlier write (item 1)
// not answered yet: the read's own notification (a missed event
// setWatches fires) leaves right before the read's reply, the write's
// right before the write's reply, and a later one after it.
func TestEarlyReadNotificationsKeepTheirPlace(t *testing.T) {
	o := newOutbox(1 << 20)
	o.expect(10, 1)
	o.expect(30, 3)
	o.markApplied(10)
	o.holdBefore(2) // the FSM runs read 2
	o.pushEvent([]byte("e-read"))
	o.holdBefore(3) // then applies write 3
	o.pushEvent([]byte("e-write"))
	o.markApplied(30)
	o.pushEvent([]byte("e-later"))
	if len(o.frames) != 0 {
		t.Fatalf("queued %q before any reply", queuedStrings(o))
	}
	o.answer(1, []byte("w1"))
	o.answer(2, []byte("read"))
	o.answer(3, []byte("w3"))
	want := []string{"w1", "e-read", "read", "e-write", "w3", "e-later"}
	if got := queuedStrings(o); !slices.Equal(got, want) {
		t.Fatalf("queued %q, want %q", got, want)
	}
}

// queuedStrings is the outbox's queue as text.
func queuedStrings(o *outbox) []string {
	var got []string
	for _, f := range o.frames {
		got = append(got, string(f))
	}
	return got
}

// TestWriterSendsEverythingInOrder: frames queued by the handshake, the
// completer and notifiers, before and while the writer runs, reach the
// peer once each, in the order queued, and the writer ends once the
// outbox is closed and empty.
func TestWriterSendsEverythingInOrder(t *testing.T) {
	local, peer := net.Pipe()
	defer local.Close()
	defer peer.Close()
	o := newOutbox(1 << 30)
	o.push([]byte("hello "))
	done := make(chan error, 1)
	go func() { done <- o.writeLoop(local, 10*time.Second, func([][]byte) {}) }()
	var want bytes.Buffer
	want.WriteString("hello ")
	for i := range 100 {
		f := []byte(fmt.Sprintf("f%d ", i))
		want.Write(f)
		switch i % 3 {
		case 0:
			o.answer(uint64(i+1), f)
		case 1:
			o.pushEvent(f)
		default:
			o.push(f)
		}
	}
	o.close()
	got := make([]byte, want.Len())
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(peer, got); err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("peer received %q, want %q", got, want.Bytes())
	}
	if err := <-done; err != nil {
		t.Fatalf("writeLoop: %v", err)
	}
}

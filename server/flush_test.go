package server

import (
	"bytes"
	"io"
	"net"
	"slices"
	"testing"
	"time"
)

// TestUnwritten checks what is left of a queue after a write of n bytes.
func TestUnwritten(t *testing.T) {
	tests := []struct {
		name   string
		frames []string
		n      int
		want   []string
	}{
		{"nothing written", []string{"abc", "de"}, 0, []string{"abc", "de"}},
		{"inside the first frame", []string{"abc", "de"}, 2, []string{"c", "de"}},
		{"exactly the first frame", []string{"abc", "de"}, 3, []string{"de"}},
		{"inside the last frame", []string{"abc", "de"}, 4, []string{"e"}},
		{"everything", []string{"abc", "de"}, 5, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var frames [][]byte
			for _, f := range tt.frames {
				frames = append(frames, []byte(f))
			}
			var got []string
			for _, f := range unwritten(frames, tt.n) {
				got = append(got, string(f))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("unwritten(%q, %d) = %q, want %q", tt.frames, tt.n, got, tt.want)
			}
		})
	}
}

// TestFlusherClaim checks that queued outboxes are handed out in order, a
// chunk at a time, and that a claim leaving some behind wakes another
// flusher.
func TestFlusherClaim(t *testing.T) {
	tests := []struct {
		queued     int
		wantChunks []int
	}{
		{0, nil},
		{1, []int{1}},
		{flushChunk, []int{flushChunk}},
		{flushChunk + 1, []int{flushChunk, 1}},
		{3*flushChunk - 2, []int{flushChunk, flushChunk, flushChunk - 2}},
	}
	for _, tt := range tests {
		f := newFlusher()
		var all []*outbox
		for range tt.queued {
			o := newOutbox(1)
			all = append(all, o)
			f.add(o)
		}
		if tt.queued > 0 {
			<-f.wake // the first add signals
		}
		var got []*outbox
		var chunks []int
		for buf := f.claim(nil); len(buf) > 0; buf = f.claim(buf) {
			chunks = append(chunks, len(buf))
			got = append(got, buf...)
			if left := len(got) < tt.queued; left != (len(f.wake) == 1) {
				t.Fatalf("%d queued: after claiming %d, woken %v, want %v", tt.queued, len(got), len(f.wake) == 1, left)
			}
			if len(f.wake) == 1 {
				<-f.wake
			}
		}
		if !slices.Equal(chunks, tt.wantChunks) || !slices.Equal(got, all) {
			t.Fatalf("%d queued: chunks %v (in order: %v), want %v", tt.queued, chunks, slices.Equal(got, all), tt.wantChunks)
		}
	}
}

// TestPushEvent checks when a notification is queued, held back, refused,
// and when the outbox must be handed to the flusher.
func TestPushEvent(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(o *outbox)
		wantOK    bool
		wantFlush bool
		wantQueue int
	}{
		{"first notification", func(*outbox) {}, true, true, 1},
		{"already waiting for a flush", func(o *outbox) { o.pushEvent([]byte("x")) }, true, false, 2},
		{"closed", func(o *outbox) { o.close() }, true, false, 0},
		{"over the limit", func(o *outbox) { o.push(make([]byte, 100)) }, false, false, 1},
		{"behind an unanswered write", func(o *outbox) { o.expect(7); o.markApplied(7) }, true, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOutbox(50)
			tt.setup(o)
			ok, flush := o.pushEvent([]byte("event"))
			if ok != tt.wantOK || flush != tt.wantFlush || len(o.frames) != tt.wantQueue {
				t.Fatalf("pushEvent = %v, %v with %d queued; want %v, %v with %d",
					ok, flush, len(o.frames), tt.wantOK, tt.wantFlush, tt.wantQueue)
			}
		})
	}
}

// TestFlushKeepsOrder checks that flush writes what fits in the socket
// without waiting and leaves the rest, cut where the write stopped, to the
// writer: the peer receives every byte once, in order.
func TestFlushKeepsOrder(t *testing.T) {
	tests := []struct {
		name     string
		sizes    []int
		wantLeft bool // frames left queued after flush
	}{
		{"small frames go out at once", []int{100, 50, 7}, false},
		{"a frame larger than the socket buffers is cut", []int{10, 32 << 20, 20}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			local, peer := tcpPair(t)
			o := newOutbox(1 << 30)
			o.nc, o.sent = local, func([][]byte) {}
			rc, err := local.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			o.raw = newRawWriter(rc)
			var want []byte
			for i, n := range tt.sizes {
				f := bytes.Repeat([]byte{byte('a' + i)}, n)
				want = append(want, f...)
				o.pushEvent(f)
			}
			o.flush()
			if left := len(o.frames) > 0; left != tt.wantLeft {
				t.Fatalf("after flush: frames left %v, want %v", left, tt.wantLeft)
			}
			if tt.wantLeft && len(o.wake) == 0 {
				t.Fatal("frames left queued but the writer was not woken")
			}
			o.push([]byte("reply"))
			want = append(want, "reply"...)
			o.close()
			go o.writeLoop(local, 10*time.Second, func([][]byte) {})
			got := readAll(t, peer, len(want))
			if !bytes.Equal(got, want) {
				t.Fatalf("peer received %d bytes, not the %d queued in order", len(got), len(want))
			}
		})
	}
}

// tcpPair returns both ends of a loopback TCP connection with small socket
// buffers.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	local, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { local.Close(); peer.Close() })
	local.(*net.TCPConn).SetWriteBuffer(64 << 10)
	peer.(*net.TCPConn).SetReadBuffer(64 << 10)
	return local.(*net.TCPConn), peer.(*net.TCPConn)
}

// readAll reads n bytes from c, failing the test after 10s.
func readAll(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return buf
}

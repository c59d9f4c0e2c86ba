package server

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// TestAdmissionBlocked: which readers the admission bounds hold back.
func TestAdmissionBlocked(t *testing.T) {
	tests := []struct {
		name               string
		count, held        int64 // outstanding requests, large bytes in flight
		own, size          int64 // the connection's requests in flight, the frame's large bytes
		want               bool
		maxCount, maxBytes int64
	}{
		{name: "under both limits", count: 5, own: 3, size: 100, held: 100, want: false},
		{name: "count at the limit, own in flight", count: 10, own: 1, want: true},
		{name: "count over the limit, nothing of its own", count: 50, own: 0, want: false},
		{name: "count under the limit", count: 9, own: 9, want: false},
		{name: "large bytes would exceed", held: 900, size: 200, want: true},
		{name: "large bytes would exceed, nothing of its own", held: 900, size: 200, own: 0, want: true},
		{name: "large bytes exactly at the limit", held: 800, size: 200, want: false},
		{name: "no large bytes in flight: a frame over the limit passes", held: 0, size: 5000, want: false},
		{name: "small frame while large bytes are at the limit", held: 1000, size: 0, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var count atomic.Int64
			count.Store(tt.count)
			a := newAdmission(10, 1000, 64, &count)
			a.bytes.Store(tt.held)
			if got := a.blocked(tt.own, tt.size); got != tt.want {
				t.Fatalf("blocked(own %d, size %d) with %d outstanding, %d large bytes = %v, want %v",
					tt.own, tt.size, tt.count, tt.held, got, tt.want)
			}
		})
	}
}

// TestAdmissionLarge: requests above largeRequestThreshold are large;
// -1 makes none large.
func TestAdmissionLarge(t *testing.T) {
	tests := []struct {
		threshold, n int
		want         int64
	}{{1024, 1024, 0}, {1024, 1025, 1025}, {0, 1, 1}, {-1, 1 << 20, 0}}
	for _, tt := range tests {
		a := newAdmission(10, 1000, tt.threshold, new(atomic.Int64))
		if got := a.large(tt.n); got != tt.want {
			t.Errorf("threshold %d: large(%d) = %d, want %d", tt.threshold, tt.n, got, tt.want)
		}
	}
}

// TestAdmissionWaitsUntilReleased: a blocked reader waits without a time
// bound and goes on when a request completes, when its own requests are
// answered, or returns false when its connection closes.
func TestAdmissionWaitsUntilReleased(t *testing.T) {
	tests := []struct {
		name    string
		release func(a *admission, own *atomic.Int64, ownDone, stop chan struct{})
		want    bool
	}{
		{"another request completes", func(a *admission, _ *atomic.Int64, _, _ chan struct{}) { a.done(0) }, true},
		{"own requests answered", func(_ *admission, own *atomic.Int64, ownDone, _ chan struct{}) {
			own.Store(0)
			ownDone <- struct{}{}
		}, true},
		{"connection closed", func(_ *admission, _ *atomic.Int64, _, stop chan struct{}) { close(stop) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var count atomic.Int64
			a := newAdmission(2, 1000, 64, &count)
			var own atomic.Int64
			a.admitted()
			a.admitted()
			own.Store(2)
			ownDone, stop := make(chan struct{}, 1), make(chan struct{})
			result := make(chan bool, 1)
			go func() { result <- a.wait(&own, ownDone, stop, 0) }()
			select {
			case r := <-result:
				t.Fatalf("wait returned %v while over the limit", r)
			case <-time.After(300 * time.Millisecond):
			}
			tt.release(a, &own, ownDone, stop)
			select {
			case r := <-result:
				if r != tt.want {
					t.Fatalf("wait = %v, want %v", r, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("wait did not return within 5 s of the release")
			}
		})
	}
}

// peakSampler records the highest value f returns until stopped.
type peakSampler struct {
	stop chan struct{}
	done chan int64
}

func samplePeak(f func() int64) *peakSampler {
	p := &peakSampler{stop: make(chan struct{}), done: make(chan int64, 1)}
	go func() {
		var peak int64
		for {
			peak = max(peak, f())
			select {
			case <-p.stop:
				p.done <- peak
				return
			default:
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	return p
}

func (p *peakSampler) peak() int64 { close(p.stop); return <-p.done }

// pipelined sends n frames built by req on w without reading, then reads
// the n replies, returning their error codes.
func pipelined(w *wireClient, n int, op jute.OpCode, req jute.Record) []jute.Code {
	w.t.Helper()
	var out bytes.Buffer
	for range n {
		w.xid++
		out.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: w.xid, Type: op}, req))
	}
	errc := make(chan error, 1)
	go func() {
		w.c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		_, err := w.c.Write(out.Bytes())
		errc <- err
	}()
	codes := make([]jute.Code, 0, n)
	for range n {
		w.c.SetReadDeadline(time.Now().Add(20 * time.Second))
		frame, err := jute.ReadFrame(w.br, 4<<20, nil)
		if err != nil {
			w.t.Errorf("reply %d of %d: %v", len(codes)+1, n, err)
			break
		}
		var h jute.ReplyHeader
		h.Decode(jute.NewDecoder(frame))
		codes = append(codes, h.Err)
	}
	if err := <-errc; err != nil {
		w.t.Errorf("write %d requests: %v", n, err)
	}
	return codes
}

// TestLargeRequestBytesBounded: connections flooding 512 KiB setData
// requests (accepted and rejected with NoNode) never have more large bytes
// in flight than largeRequestMaxBytes, every request is
// answered, and a ping from another connection is answered meanwhile.
func TestLargeRequestBytesBounded(t *testing.T) {
	cfg := opsConfig(t)
	cfg.LargeRequestMaxBytes = 2 << 20
	s := startOpsServer(t, Options{Config: cfg})
	c := opsClient(t, s)
	if _, err := c.Create("/big", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	const conns, each = 4, 25
	data := make([]byte, 512<<10)
	sampler := samplePeak(s.admission.bytes.Load)
	var wg sync.WaitGroup
	for i := range conns {
		w, _, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 10000})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		path, want := "/big", jute.OK
		if i%2 == 1 {
			path, want = "/missing", jute.NoNode
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, code := range pipelined(w, each, jute.OpSetData, &jute.SetDataRequest{Path: path, Data: data, Version: -1}) {
				if code != want {
					t.Errorf("setData %s #%d: %v, want %v", path, i, code, want)
					return
				}
			}
		}()
	}
	pinger, _, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 10000})
	if err != nil {
		t.Fatalf("connect pinger: %v", err)
	}
	for range 5 {
		start := time.Now()
		if h := pinger.call(jute.OpPing, nil); h.Err != jute.OK {
			t.Fatalf("ping during the flood: %v", h.Err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("ping during the flood took %v", d)
		}
	}
	wg.Wait()
	peak := sampler.peak()
	if limit := int64(cfg.LargeRequestMaxBytes); peak > limit {
		t.Fatalf("large bytes in flight peaked at %d, want at most %d", peak, limit)
	}
	if peak == 0 {
		t.Fatal("the sampler never saw a large request in flight")
	}
	// A connection gives back a request's bytes just after it queues the
	// reply, so the client can read the last reply a moment before that.
	testutil.Eventually(t, 5*time.Second, "no large bytes accounted after every reply", func() bool {
		return s.admission.bytes.Load() == 0
	})
}

// TestOutstandingLimitHoldsReaders: with globalOutstandingLimit 10,
// connections pipelining hundreds of writes never have more than the limit
// plus one per connection in flight; every request is answered (no
// deadlock) and a ping from an idle connection is answered meanwhile.
func TestOutstandingLimitHoldsReaders(t *testing.T) {
	cfg := opsConfig(t)
	cfg.GlobalOutstandingLimit = 10
	s := startOpsServer(t, Options{Config: cfg})
	const conns, each = 4, 300
	sampler := samplePeak(s.stats.outstanding.Load)
	var wg sync.WaitGroup
	for range conns {
		w, _, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 10000})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes := pipelined(w, each, jute.OpSetData, &jute.SetDataRequest{Path: "/missing", Version: -1})
			if len(codes) != each {
				t.Errorf("%d replies, want %d", len(codes), each)
			}
		}()
	}
	pinger, _, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 10000})
	if err != nil {
		t.Fatalf("connect pinger: %v", err)
	}
	for range 5 {
		if h := pinger.call(jute.OpPing, nil); h.Err != jute.OK {
			t.Fatalf("ping during the flood: %v", h.Err)
		}
	}
	wg.Wait()
	if peak, limit := sampler.peak(), int64(cfg.GlobalOutstandingLimit+conns+1); peak > limit {
		t.Fatalf("outstanding requests peaked at %d, want at most %d", peak, limit)
	}
}

// TestClientThatDoesNotReadIsDropped: a client that pipelines getData of a
// large znode and reads nothing is disconnected once its queued replies
// pass the outbox limit; the server goes on answering others.
func TestClientThatDoesNotReadIsDropped(t *testing.T) {
	s := startOpsServer(t, Options{Config: opsConfig(t)})
	c := opsClient(t, s)
	data := make([]byte, 1000000)
	if _, err := c.Create("/big", data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	w, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 30000})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	tcp := w.c.(*net.TCPConn)
	tcp.SetReadBuffer(4096) // the kernel holds little on the client's side
	n := (outboxLimit / len(data)) * 2
	var out bytes.Buffer
	for i := range n {
		out.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: int32(i + 1), Type: jute.OpGetData}, &jute.GetDataRequest{Path: "/big"}))
	}
	w.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := w.c.Write(out.Bytes()); err != nil {
		t.Fatalf("write %d requests: %v", n, err)
	}
	testutil.Eventually(t, 20*time.Second, "disconnect of the client that does not read", func() bool {
		return s.sessionConn(resp.SessionID) == nil
	})
	if _, _, err := c.Get("/big"); err != nil {
		t.Fatalf("another client's getData after the drop: %v", err)
	}
}

// dribble writes b one byte every gap until stop is closed or a write
// fails; it returns when done.
func dribble(nc net.Conn, b []byte, gap time.Duration, stop <-chan struct{}) {
	for _, x := range b {
		select {
		case <-stop:
			return
		case <-time.After(gap):
		}
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := nc.Write([]byte{x}); err != nil {
			return
		}
	}
}

// TestHandshakeDeadlineIsAbsolute: a connection that sends nothing, or
// sends its ConnectRequest a byte at a time, is closed once
// nio.sessionlessCnxnTimeout has passed since it was accepted.
func TestHandshakeDeadlineIsAbsolute(t *testing.T) {
	cfg := opsConfig(t)
	cfg.SessionlessCnxnTimeout = 800
	s := startOpsServer(t, Options{Config: cfg})
	connect := jute.AppendFrame(nil, &jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
	tests := []struct {
		name string
		gap  time.Duration // 0: send nothing
	}{{"silent", 0}, {"a byte every 100 ms", 100 * time.Millisecond}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := net.DialTimeout("tcp", s.Addr().String(), 2*time.Second)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer nc.Close()
			start := time.Now()
			stop := make(chan struct{})
			defer close(stop)
			if tt.gap > 0 {
				go dribble(nc, connect, tt.gap, stop)
			}
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = nc.Read(make([]byte, 1))
			elapsed := time.Since(start)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("connection still open after %v", elapsed)
			}
			if elapsed < 700*time.Millisecond || elapsed > 2500*time.Millisecond {
				t.Fatalf("closed after %v (%v), want about 800 ms", elapsed, err)
			}
		})
	}
}

// TestSilentSessionIsClosed: after the handshake, a session whose client
// sends nothing, or only dribbles the bytes of a frame it never completes,
// expires after its timeout and its connection is closed.
func TestSilentSessionIsClosed(t *testing.T) {
	cfg := opsConfig(t)
	cfg.TickTime = 100
	s := startOpsServer(t, Options{Config: cfg})
	partial := jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpExists}, &jute.PathWatchRequest{Path: "/a/long/path/never/completed"})
	tests := []struct {
		name string
		gap  time.Duration
	}{{"silent", 0}, {"a byte every 100 ms", 100 * time.Millisecond}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 1000})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			stop := make(chan struct{})
			defer close(stop)
			if tt.gap > 0 {
				go dribble(w.c, partial[:len(partial)-1], tt.gap, stop)
			}
			if !w.closedWithin(time.Duration(resp.TimeOut)*time.Millisecond + 3*time.Second) {
				t.Fatalf("connection of a silent session (timeout %d ms) not closed", resp.TimeOut)
			}
			testutil.Eventually(t, 3*time.Second, "session expiry", func() bool {
				_, ok := s.node.Sessions().Get(resp.SessionID)
				return !ok
			})
		})
	}
}

// failingListener fails every Accept with err until closed.
type failingListener struct {
	err    error
	calls  atomic.Int64
	closed chan struct{}
	once   sync.Once
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls.Add(1)
	select {
	case <-l.closed:
		return nil, net.ErrClosed
	default:
		return nil, l.err
	}
}

func (l *failingListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *failingListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// TestAcceptErrorsBackOff: an accept that keeps failing (EMFILE: out of
// file descriptors) is retried with a growing delay, not in a busy loop.
func TestAcceptErrorsBackOff(t *testing.T) {
	ln := &failingListener{err: &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}, closed: make(chan struct{})}
	s := &Server{ln: ln, log: slog.New(slog.DiscardHandler), cfg: conf.Default()}
	done := make(chan struct{})
	go func() { defer close(done); s.acceptLoop() }()
	time.Sleep(700 * time.Millisecond)
	calls := ln.calls.Load()
	ln.Close()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("accept loop did not end within 3 s of the listener closing")
	}
	// 5, 10, 20, 40, 80, 160, 320 ms: 7 or 8 tries in 700 ms.
	if calls < 4 || calls > 12 {
		t.Fatalf("%d accepts in 700 ms of EMFILE, want between 4 and 12 (backing off)", calls)
	}
}

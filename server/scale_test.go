package server

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// checkServing asserts that a new go-zookeeper client gets a session and
// reads within d.
func checkServing(t *testing.T, s *Server, d time.Duration) {
	t.Helper()
	start := time.Now()
	c := opsClient(t, s)
	defer c.Close()
	if _, _, err := c.Exists("/"); err != nil {
		t.Fatalf("exists / from a new client: %v", err)
	}
	if took := time.Since(start); took > d {
		t.Fatalf("a new client took %v to connect and read, want under %v", took, d)
	}
}

// TestThousandsOfIdleConnections: 2000 idle sessions stay open and
// answer pings, and a new client is served meanwhile.
func TestThousandsOfIdleConnections(t *testing.T) {
	s := startOpsServer(t, Options{Config: opsConfig(t)})
	const n = 2000
	clients := make([]*wireClient, 0, n)
	for range n {
		w, _, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 30000})
		if err != nil {
			t.Fatalf("connect %d: %v", len(clients), err)
		}
		clients = append(clients, w)
	}
	checkServing(t, s, 5*time.Second)
	for i, w := range clients[:100] {
		if h := w.call(jute.OpPing, nil); h.Err != jute.OK {
			t.Fatalf("ping of idle session %d: %v", i, h.Err)
		}
	}
	if got := len(s.connections()); got < n {
		t.Fatalf("%d connections open, want at least %d", got, n)
	}
}

// TestTwoHundredThousandWatches: one session sets 200,000 exist watches
// (pipelined); they are all registered, a new client is served, and they
// are gone once the session's connection closes.
func TestTwoHundredThousandWatches(t *testing.T) {
	s := startOpsServer(t, Options{Config: opsConfig(t)})
	w, _, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 30000})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	const n = 200000
	go func() {
		var out bytes.Buffer
		for i := range n {
			out.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: int32(i + 1), Type: jute.OpExists},
				&jute.PathWatchRequest{Path: fmt.Sprintf("/w/%d", i), Watch: true}))
			if out.Len() > 1<<20 || i == n-1 {
				w.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
				if _, err := w.c.Write(out.Bytes()); err != nil {
					return
				}
				out.Reset()
			}
		}
	}()
	for i := range n {
		w.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := jute.ReadFrame(w.br, 1<<20, nil); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
	if got := s.watches.Count(); got != n {
		t.Fatalf("%d watches registered, want %d", got, n)
	}
	checkServing(t, s, 5*time.Second)
	w.c.Close()
	testutil.Eventually(t, 10*time.Second, "watches removed with the connection", func() bool { return s.watches.Count() == 0 })
}

// TestGetChildrenReplyOverMaxBuffer: a getChildren reply larger than
// jute.maxbuffer is sent whole, as ZooKeeper 3.8 sends it (the limit
// bounds what a server reads; a client with the default limit rejects the
// reply, and the Java client then drops the connection). The server goes
// on serving the connection.
func TestGetChildrenReplyOverMaxBuffer(t *testing.T) {
	s := startOpsServer(t, Options{Config: opsConfig(t)})
	c := opsClient(t, s)
	if _, err := c.Create("/p", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create /p: %v", err)
	}
	name := strings.Repeat("n", 1000)
	const children = 1100 // 1100 × ~1 KB names: over 1 MiB
	var wg sync.WaitGroup
	errs := make(chan error, children)
	for i := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Create(fmt.Sprintf("/p/%s%04d", name, i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create child: %v", err)
	}
	w, _, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 30000})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	w.send(&jute.RequestHeader{Xid: 1, Type: jute.OpGetChildren}, &jute.PathWatchRequest{Path: "/p"})
	w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := jute.ReadFrame(w.br, 4<<20, nil)
	if err != nil {
		t.Fatalf("read getChildren reply: %v", err)
	}
	if len(frame) <= s.cfg.JuteMaxBuffer {
		t.Fatalf("reply of %d bytes, want over jute.maxbuffer (%d)", len(frame), s.cfg.JuteMaxBuffer)
	}
	var h jute.ReplyHeader
	d := jute.NewDecoder(frame)
	h.Decode(d)
	var resp jute.GetChildrenResponse
	resp.Decode(d)
	if h.Err != jute.OK || d.Err() != nil || len(resp.Children) != children {
		t.Fatalf("reply: err %v, decode %v, %d children, want OK and %d", h.Err, d.Err(), len(resp.Children), children)
	}
	if h := w.call(jute.OpPing, nil); h.Err != jute.OK {
		t.Fatalf("ping after the large reply: %v", h.Err)
	}
}

// TestAbandonedSessionsExpire: 1000 sessions each create an ephemeral
// znode and vanish without closing; they expire after their timeout, their
// ephemerals go, and the server keeps serving. The timeout (3 s) outlasts
// opening all of them can take longer on a loaded machine under the race
// detector, so a pinger keeps the opened ones alive until the count.
func TestAbandonedSessionsExpire(t *testing.T) {
	cfg := opsConfig(t)
	cfg.TickTime = 100
	cfg.MaxSessionTimeout = 3000
	s := startOpsServer(t, Options{Config: cfg})
	const n = 1000
	before := s.node.Sessions().Len()
	conns := make([]net.Conn, 0, n)
	pinger := keepAlive(time.Second)
	defer pinger.stop()
	for i := range n {
		w, _, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 3000})
		if err != nil {
			t.Fatalf("connect %d: %v", i, err)
		}
		if h := w.call(jute.OpCreate, &jute.CreateRequest{Path: fmt.Sprintf("/e%d", i), ACL: []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "world", ID: "anyone"}}}, Flags: 1}); h.Err != jute.OK {
			t.Fatalf("create ephemeral %d: %v", i, h.Err)
		}
		conns = append(conns, w.c)
		pinger.add(w.c)
	}
	if got := s.node.Tree().EphemeralCount(); got != n {
		t.Fatalf("%d ephemerals, want %d", got, n)
	}
	pinger.stop()
	for _, nc := range conns {
		nc.Close() // abandoned: no closeSession
	}
	testutil.Eventually(t, 20*time.Second, "abandoned sessions expired", func() bool {
		return s.node.Tree().EphemeralCount() == 0 && s.node.Sessions().Len() <= before
	})
	checkServing(t, s, 5*time.Second)
}

// pinger pings idle raw connections at a fixed interval from its own
// goroutine, so their sessions live while a test opens more; the replies
// are left unread. conns is guarded by mu.
type pinger struct {
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

func keepAlive(every time.Duration) *pinger {
	p := &pinger{done: make(chan struct{})}
	frame := jute.AppendFrame(nil, &jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			p.mu.Lock()
			conns := append([]net.Conn(nil), p.conns...)
			p.mu.Unlock()
			for _, c := range conns {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				c.Write(frame) // a failed ping only lets that session expire early
			}
		}
	}()
	return p
}

func (p *pinger) add(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

// stop ends the pings and waits for the goroutine; it may be called twice.
func (p *pinger) stop() {
	p.once.Do(func() { close(p.done) })
	p.wg.Wait()
}

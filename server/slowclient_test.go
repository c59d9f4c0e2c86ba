package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/jute"
)

// TestClientThatStopsReadingStallsOnlyItself: one client pipelines getData
// of a 512 KiB znode, one request at a time, then a setData of it, and
// never reads its socket. The server cannot send it more than the socket
// buffers take, yet other sessions' writes on the same member complete at
// once, while that client is still stalled: nothing on the apply path
// waits for a client (its write is proposed once its earlier reads have
// run, and they run whatever its socket does). When the client finally
// reads, it gets every reply in order, and no read saw the write sent
// after it.
func TestClientThatStopsReadingStallsOnlyItself(t *testing.T) {
	s := startOpsServer(t, Options{Config: opsConfig(t)})
	c := opsClient(t, s)
	if _, err := c.Create("/big", make([]byte, 512<<10), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	slow, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 30000})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	sc := s.sessionConn(resp.SessionID)
	// 16 MiB of replies: beyond what the sockets' buffers hold (checked
	// below: bytes stay queued), within outboxLimit.
	const reads = 32
	for i := range reads {
		// One at a time, each given the time to be answered, so that the
		// server meets an idle pipeline and a full socket.
		slow.xid++
		slow.send(&jute.RequestHeader{Xid: slow.xid, Type: jute.OpGetData}, &jute.GetDataRequest{Path: "/big"})
		waitAnswered(sc, int64(i+1), 100*time.Millisecond)
	}
	slow.xid++
	slow.send(&jute.RequestHeader{Xid: slow.xid, Type: jute.OpSetData}, &jute.SetDataRequest{Path: "/big", Data: []byte("new"), Version: -1})

	// A bound far below the stall, which lasts until the client reads
	// (below): with a write of the stalled client held on the apply path,
	// every session here waited for it.
	const bound = 2 * time.Second
	if took := writeFromOtherSessions(t, s, 3, 10); took > bound {
		t.Fatalf("3 sessions of 10 writes each took %v while one client stalled (bound %v)", took, bound)
	}
	if queued := queuedBytes(sc); s.sessionConn(resp.SessionID) != sc || queued == 0 {
		t.Fatalf("the slow client is no longer stalled (connection bound: %v, %d bytes queued)", s.sessionConn(resp.SessionID) == sc, queued)
	}
	checkStalledReplies(t, slow, reads)
}

// waitAnswered waits, at most limit, until c has received n requests and
// has none in flight.
func waitAnswered(c *conn, n int64, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for (c.recv.Load() < n || c.inflight.Load() > 0) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// queuedBytes is how much c's outbox holds for the socket.
func queuedBytes(c *conn) int {
	c.pl.out.mu.Lock()
	defer c.pl.out.mu.Unlock()
	return c.pl.out.bytes
}

// writeFromOtherSessions opens sessions sessions (a write each) that then
// make n creates each, at the same time, and returns how long it took.
func writeFromOtherSessions(t *testing.T, s *Server, sessions, n int) time.Duration {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range sessions {
		cl := opsClient(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range n {
				if _, err := cl.Create(fmt.Sprintf("/other-%d-%d", i, j), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Errorf("create of another session: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// checkStalledReplies reads the stalled client's replies: reads getData
// replies showing the znode before the setData, then the setData's.
func checkStalledReplies(t *testing.T, w *wireClient, reads int) {
	t.Helper()
	var last int64
	for i := range reads + 1 {
		w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		frame, err := jute.ReadFrame(w.br, 1<<20, nil)
		if err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
		d := jute.NewDecoder(frame)
		var h jute.ReplyHeader
		h.Decode(d)
		if h.Xid != int32(i+1) || h.Err != jute.OK || h.Zxid < last {
			t.Fatalf("reply %d: xid %d err %v zxid %d (previous %d), want xid %d, OK, in zxid order", i+1, h.Xid, h.Err, h.Zxid, last, i+1)
		}
		last = h.Zxid
		if i == reads {
			break // the setData's reply
		}
		var r jute.GetDataResponse
		r.Decode(d)
		if r.Stat.Version != 0 || len(r.Data) != 512<<10 {
			t.Fatalf("read %d saw version %d (%d bytes): a write sent after it", i+1, r.Stat.Version, len(r.Data))
		}
	}
}

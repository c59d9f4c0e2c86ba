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
// of a 512 KiB znode, then a setData of it, and never reads its socket.
// The server cannot send it more than the socket buffers take, yet other
// sessions' writes on the same member complete at once, while that client
// is still stalled: nothing on the apply path waits for a client (its
// write is proposed once its earlier reads have run, or early with at
// most earlyReadLimit reads to run before it is applied, and they run
// whatever its socket does). When the client finally reads, it gets every
// reply in order, and no read saw the write sent after it. The reads are
// sent one at a time (the server meets an idle pipeline and a full
// socket), or in one burst with the write, as many as an early write may
// run or more.
func TestClientThatStopsReadingStallsOnlyItself(t *testing.T) {
	tests := []struct {
		name     string
		reads    int
		oneByOne bool
	}{
		{"reads one at a time", 32, true},
		{"a burst an early write may follow", earlyReadLimit, false},
		{"a burst too long for an early write", earlyReadLimit + 16, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkStalledClient(t, tt.reads, tt.oneByOne) })
	}
}

// checkStalledClient runs TestClientThatStopsReadingStallsOnlyItself's
// scenario with reads reads, sent one by one or in one burst.
func checkStalledClient(t *testing.T, reads int, oneByOne bool) {
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
	// 16 MiB of replies or more: beyond what the sockets' buffers hold
	// (checked below: bytes stay queued), within outboxLimit.
	var burst []byte
	for i := range reads {
		slow.xid++
		if oneByOne {
			slow.send(&jute.RequestHeader{Xid: slow.xid, Type: jute.OpGetData}, &jute.GetDataRequest{Path: "/big"})
			waitAnswered(sc, int64(i+1), 100*time.Millisecond)
			continue
		}
		burst = jute.AppendFrame(burst, &jute.RequestHeader{Xid: slow.xid, Type: jute.OpGetData}, &jute.GetDataRequest{Path: "/big"})
	}
	slow.xid++
	burst = jute.AppendFrame(burst, &jute.RequestHeader{Xid: slow.xid, Type: jute.OpSetData},
		&jute.SetDataRequest{Path: "/big", Data: []byte("new"), Version: -1})
	if _, err := slow.c.Write(burst); err != nil {
		t.Fatalf("write: %v", err)
	}

	// A bound far below the stall, which lasts until the client reads
	// (below): with a write of the stalled client held on the apply path,
	// every session here waited for it.
	const bound = 2 * time.Second
	if took := writeFromOtherSessions(t, s, 3, 10); took > bound {
		t.Fatalf("3 sessions of 10 writes each took %v while one client stalled (bound %v)", took, bound)
	}
	// Its connect response, reads and write: not all of them written.
	if sent, frames := sc.sent.Load(), int64(reads+2); s.sessionConn(resp.SessionID) != sc || sent >= frames {
		t.Fatalf("the slow client is no longer stalled (connection bound: %v, %d of %d frames written)", s.sessionConn(resp.SessionID) == sc, sent, frames)
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

package server

import (
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/jute"
)

// TestEarlyWritesKeepSessionOrder: a client sends, in one burst, a write,
// two reads (the first setting a watch), a second write and a read, many
// times over. The second write is proposed before the reads have run
// (pipeline_order.go), and the reads run on the completer or on the FSM
// goroutine right before it is applied, whichever comes first. Every
// round must read as ZooKeeper answers it: the replies in request order,
// each read showing the first write and not the second, and the watch's
// notification after the read that set it and before the second write's
// reply.
func TestEarlyWritesKeepSessionOrder(t *testing.T) {
	s := startOpsServer(t, Options{Config: opsConfig(t)})
	if _, err := opsClient(t, s).Create("/x", []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	w, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 30000})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	const rounds = 200
	for round := range rounds {
		checkEarlyRound(t, w, round)
	}
	c := s.sessionConn(resp.SessionID)
	c.pl.reads.mu.Lock()
	ran := c.pl.reads.ranEarly
	c.pl.reads.mu.Unlock()
	if ran == 0 {
		t.Fatalf("in %d rounds no read ran before its session's early write: the early path was not exercised", rounds)
	}
	t.Logf("%d of %d reads ran on the FSM goroutine", ran, 2*rounds)
}

// checkEarlyRound sends one round's burst and checks its replies.
func checkEarlyRound(t *testing.T, w *wireClient, round int) {
	t.Helper()
	first, second := fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round)
	base := w.xid
	var burst []byte
	add := func(op jute.OpCode, req jute.Record) {
		w.xid++
		burst = jute.AppendFrame(burst, &jute.RequestHeader{Xid: w.xid, Type: op}, req)
	}
	add(jute.OpSetData, &jute.SetDataRequest{Path: "/x", Data: []byte(first), Version: -1})
	add(jute.OpGetData, &jute.PathWatchRequest{Path: "/x", Watch: true})
	add(jute.OpExists, &jute.PathWatchRequest{Path: "/x"})
	add(jute.OpSetData, &jute.SetDataRequest{Path: "/x", Data: []byte(second), Version: -1})
	add(jute.OpGetData, &jute.PathWatchRequest{Path: "/x"})
	if _, err := w.c.Write(burst); err != nil {
		t.Fatalf("round %d: write: %v", round, err)
	}
	// The expected frames: xid (or the notification's), and what a read shows.
	want := []struct {
		xid  int32
		data string
	}{{base + 1, ""}, {base + 2, first}, {base + 3, ""}, {jute.XidNotification, ""}, {base + 4, ""}, {base + 5, second}}
	var firstVersion int32
	for i, wf := range want {
		frame, err := w.read()
		if err != nil {
			t.Fatalf("round %d, frame %d: %v", round, i+1, err)
		}
		d := jute.NewDecoder(frame)
		var h jute.ReplyHeader
		h.Decode(d)
		if h.Xid != wf.xid || h.Err != jute.OK {
			t.Fatalf("round %d, frame %d: xid %d err %v, want xid %d OK", round, i+1, h.Xid, h.Err, wf.xid)
		}
		switch h.Xid {
		case base + 1, base + 4:
			var r jute.StatResponse
			r.Decode(d)
			if h.Xid == base+1 {
				firstVersion = r.Stat.Version
			}
		case base + 2, base + 5:
			var r jute.GetDataResponse
			r.Decode(d)
			if string(r.Data) != wf.data {
				t.Fatalf("round %d: read %d saw %q, want %q", round, h.Xid-base, r.Data, wf.data)
			}
		case base + 3:
			var r jute.StatResponse
			r.Decode(d)
			if r.Stat.Version != firstVersion {
				t.Fatalf("round %d: exists saw version %d, want %d (the first write's)", round, r.Stat.Version, firstVersion)
			}
		default:
			var ev jute.WatcherEvent
			ev.Decode(d)
			if ev.Type != jute.EventNodeDataChanged || ev.Path != "/x" {
				t.Fatalf("round %d: notification %+v, want NodeDataChanged /x", round, ev)
			}
		}
	}
}

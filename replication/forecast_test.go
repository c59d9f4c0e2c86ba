package replication

import (
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

func setDataTxn(path string, data []byte, version int32) *txnlog.Txn {
	return &txnlog.Txn{Tree: datatree.Txn{Type: jute.OpSetData,
		Request: &jute.SetDataRequest{Path: path, Data: data, Version: version}}}
}

func bigCreateTxn(path string, data []byte) *txnlog.Txn {
	return &txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCreate,
		Request: &jute.CreateRequest{Path: path, Data: data, ACL: jute.OpenACLUnsafe}}}
}

// waitForecasting waits until n's forecaster is ready (its first entry as
// leader made it wait for the earlier entries) and nothing is marked, so
// that the writes a test submits next are forecast.
func waitForecasting(t *testing.T, n *Node) {
	t.Helper()
	await(t, n.Submit(createTxn("/warm")))
	deadline := time.Now().Add(10 * time.Second)
	for {
		n.forecast.mu.Lock()
		ready := n.forecast.ready && len(n.forecast.dirty) == 0 && n.forecast.blind == 0 && n.forecast.removing == 0
		n.forecast.mu.Unlock()
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("forecasts not enabled within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logBytes sums the data of the command entries in n's log after index.
func logBytes(t *testing.T, n *Node, after uint64) int {
	t.Helper()
	last, err := n.logs.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i := after + 1; i <= last; i++ {
		var l raft.Log
		if err := n.logs.GetLog(i, &l); err == nil && l.Type == raft.LogCommand {
			total += len(l.Data)
		}
	}
	return total
}

func TestForecastLogsFailedWritesWithoutPayload(t *testing.T) {
	n := openNode(t, t.TempDir(), true)
	defer n.Close()
	waitForecasting(t, n)
	payload := bytes.Repeat([]byte("x"), 64<<10)
	start, _ := n.logs.LastIndex()
	before := n.LastZxid()

	// Submitted back to back, so that several are out at once: the later
	// create makes a path the forecasts must not judge from the tree
	// before it is applied.
	type step struct {
		txn  *txnlog.Txn
		want jute.Code
	}
	steps := []step{
		{setDataTxn("/missing", payload, -1), jute.NoNode},
		{bigCreateTxn("/warm", payload), jute.NodeExists},
		{bigCreateTxn("/no/parent", payload), jute.NoNode},
		{setDataTxn("/warm", payload, 7), jute.BadVersion},
		{createTxn("/later"), jute.OK},
		{setDataTxn("/later", payload, 0), jute.OK},
		{bigCreateTxn("/later/child", payload), jute.OK},
		{setDataTxn("/missing", payload, -1), jute.NoNode},
	}
	chans := make([]<-chan Outcome, len(steps))
	for i, s := range steps {
		chans[i] = n.Submit(s.txn)
	}
	for i, ch := range chans {
		o := await(t, ch)
		if o.Err != nil || o.Result.Err != steps[i].want {
			t.Fatalf("step %d: err %v code %v, want %v", i, o.Err, o.Result.Err, steps[i].want)
		}
		if want := before + int64(i) + 1; o.Zxid != want {
			t.Fatalf("step %d: zxid %d, want %d (a failed write takes its zxid)", i, o.Zxid, want)
		}
	}
	// Two successful 64 KiB writes are in the log; the five failed ones
	// cost a few dozen bytes each.
	if got, limit := logBytes(t, n, start), 2*len(payload)+2048; got > limit {
		t.Fatalf("log grew by %d bytes, want at most %d", got, limit)
	}
	if data, _, code := n.Tree().GetData("/later", nil, nil); code != jute.OK || len(data) != len(payload) {
		t.Fatalf("/later: %d bytes, %v", len(data), code)
	}
}

func TestForecastAcrossForwardedWrites(t *testing.T) {
	c := newTestCluster(t, 3)
	lead := c.leader()
	follower := c.nodes[(lead+1)%3]
	waitForecasting(t, c.nodes[lead])
	payload := bytes.Repeat([]byte("y"), 32<<10)
	start, _ := c.nodes[lead].logs.LastIndex()
	for i := 0; i < 10; i++ {
		o := submitRetrying(t, follower, setDataTxn("/absent", payload, -1))
		if o.Err != nil || o.Result.Err != jute.NoNode {
			t.Fatalf("forwarded setData %d: %+v", i, o)
		}
	}
	o := submitRetrying(t, follower, bigCreateTxn("/present", payload))
	if o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("forwarded create: %+v", o)
	}
	if got, limit := logBytes(t, c.nodes[lead], start), len(payload)+2048; got > limit {
		t.Fatalf("leader's log grew by %d bytes, want at most %d", got, limit)
	}
	c.converged()
}

// TestForecastWhileSessionsClose: a closeSession out (a session expiring)
// leaves NoNode forecasts standing, so a flood of writes to a missing
// znode stays small in the log while sessions expire; other failures are
// not forecast then, since the closeSession may delete their node.
func TestForecastWhileSessionsClose(t *testing.T) {
	n := openNode(t, t.TempDir(), true)
	defer n.Close()
	waitForecasting(t, n)
	const sid = 0x77
	if o := await(t, n.Submit(&txnlog.Txn{Timeout: 30000, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: sid}})); o.Err != nil {
		t.Fatalf("create session: %v", o.Err)
	}
	eph := &txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCreate, SessionID: sid,
		Request: &jute.CreateRequest{Path: "/eph", ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral}}}
	if o := await(t, n.Submit(eph)); o.Err != nil || o.Result.Err != jute.OK {
		t.Fatalf("create ephemeral: %v %v", o.Err, o.Result.Err)
	}
	payload := bytes.Repeat([]byte("x"), 64<<10)
	start, _ := n.logs.LastIndex()
	steps := []struct {
		txn  *txnlog.Txn
		want jute.Code
	}{
		{&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCloseSession, SessionID: sid}}, jute.OK},
		{setDataTxn("/missing", payload, -1), jute.NoNode},
		{bigCreateTxn("/no/parent", payload), jute.NoNode},
		// BadVersion now, but the closeSession before it deletes /eph.
		{setDataTxn("/eph", payload, 7), jute.NoNode},
		{setDataTxn("/missing", payload, -1), jute.NoNode},
	}
	chans := make([]<-chan Outcome, len(steps))
	for i, s := range steps {
		chans[i] = n.Submit(s.txn)
	}
	for i, ch := range chans {
		if o := await(t, ch); o.Err != nil || o.Result.Err != steps[i].want {
			t.Fatalf("step %d: err %v code %v, want %v", i, o.Err, o.Result.Err, steps[i].want)
		}
	}
	// At most the setData of /eph carries its payload.
	if got, limit := logBytes(t, n, start), len(payload)+2048; got > limit {
		t.Fatalf("log grew by %d bytes, want at most %d", got, limit)
	}
}

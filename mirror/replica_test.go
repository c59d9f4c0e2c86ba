package mirror

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/txnlog"
)

// fakeUpstream records what a Replica sends to the ZooKeeper leader. mu
// guards every field.
type fakeUpstream struct {
	mu       sync.Mutex
	requests []sentRequest
	syncs    int
	touched  map[int64]int32
	valid    map[int64]bool // Revalidate's answers
	serving  bool
}

type sentRequest struct {
	session int64
	cxid    int32
	op      jute.OpCode
	body    []byte
	auth    []jute.ID
}

func (f *fakeUpstream) Request(sessionID int64, cxid int32, op int32, body []byte, auth []jute.ID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.serving {
		return errors.New("fake: not serving")
	}
	f.requests = append(f.requests, sentRequest{sessionID, cxid, jute.OpCode(op), body, auth})
	return nil
}

func (f *fakeUpstream) Revalidate(_ context.Context, sessionID int64, _ int32) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.valid[sessionID], nil
}

func (f *fakeUpstream) Sync(context.Context, int64, int32, string, []jute.ID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncs++
	return nil
}

func (f *fakeUpstream) Touch(s map[int64]int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touched = s
}

func (f *fakeUpstream) Leader() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return 1, f.serving
}

func (f *fakeUpstream) WaitUpToDate(context.Context) error { return nil }
func (f *fakeUpstream) Err() error                         { return nil }

func (f *fakeUpstream) setServing(on bool) {
	f.mu.Lock()
	f.serving = on
	f.mu.Unlock()
}

func (f *fakeUpstream) sent() []sentRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentRequest(nil), f.requests...)
}

// hookCalls records the server's apply hook as the Replica calls it.
type hookCalls struct {
	applying []*txnlog.Txn
	applied  []*txnlog.Txn
	zxids    []int64
	restored int
}

func (h *hookCalls) Applying(t *txnlog.Txn) { h.applying = append(h.applying, t) }
func (h *hookCalls) Applied(t *txnlog.Txn, zxid int64, _ *datatree.Result) {
	h.applied = append(h.applied, t)
	h.zxids = append(h.zxids, zxid)
}
func (h *hookCalls) Restored() { h.restored++ }

// newTestReplica returns a synced Replica following a fake leader.
func newTestReplica(t *testing.T) (*Replica, *fakeUpstream, *hookCalls) {
	t.Helper()
	hooks := &hookCalls{}
	up := &fakeUpstream{serving: true, valid: map[int64]bool{}}
	r := NewReplica(ReplicaOptions{ServerID: 4, Observer: hooks, Logger: testLogger(t)})
	r.UpToDate()
	r.Follow(up)
	t.Cleanup(func() { r.Close() })
	if err := r.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r, up, hooks
}

// commit feeds the Replica the transaction that answers request req.
func commit(t *testing.T, r *Replica, req sentRequest, typ jute.OpCode, rec txnRecord) int64 {
	t.Helper()
	z := r.LastZxid() + 1
	var e jute.Encoder
	e.Long(req.session)
	e.Int(req.cxid)
	e.Long(z)
	e.Long(1000)
	e.Int(int32(typ))
	rec(&e)
	if err := r.Txn(z, e.Bytes()); err != nil {
		t.Fatalf("txn %d: %v", z, err)
	}
	return z
}

// outcome waits briefly for an outcome.
func outcome(t *testing.T, ch <-chan replicationOutcome) replicationOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(5 * time.Second):
		t.Fatal("no outcome")
	}
	return replicationOutcome{}
}

func TestReplicaForwardsWritesAndAnswersFromTheirTxns(t *testing.T) {
	r, up, hooks := newTestReplica(t)
	const sid = int64(0x0400000000000001)
	created := r.Submit(&txnlog.Txn{Owner: 4, Timeout: 5000, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: sid}})
	reqs := up.sent()
	if len(reqs) != 1 || reqs[0].op != jute.OpCreateSession || reqs[0].cxid != 0 || reqs[0].auth != nil ||
		binary.BigEndian.Uint32(reqs[0].body) != 5000 || len(reqs[0].body) != 4 {
		t.Fatalf("createSession sent as %+v, want cxid 0, the 4-byte timeout, no auth", reqs)
	}
	z := commit(t, r, reqs[0], jute.OpCreateSession, sessionTxn(5000))
	if o := outcome(t, created); o.Err != nil || o.Zxid != z || o.Result.Err != jute.OK {
		t.Fatalf("createSession outcome %+v", o)
	}

	ids := []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}}
	// The server leaves Owner unset; Submit names this server, as
	// replication.Node does.
	create := &txnlog.Txn{RequestID: r.NewRequestID(), Tree: datatree.Txn{Type: jute.OpCreate, SessionID: sid, IDs: ids,
		Request: &jute.CreateRequest{Path: "/a", Data: []byte("x"), ACL: jute.OpenACLUnsafe}}}
	if create.RequestID>>56 != 4 {
		t.Errorf("request id %#x does not carry the server id", create.RequestID)
	}
	ch := r.Submit(create)
	again := r.Submit(&txnlog.Txn{Owner: 4, Tree: datatree.Txn{Type: jute.OpCreate, SessionID: sid, IDs: ids,
		Request: &jute.CreateRequest{Path: "/a", ACL: jute.OpenACLUnsafe}}})
	reqs = up.sent()[1:]
	if len(reqs) != 2 || reqs[0].op != jute.OpCreate || string(reqs[0].body) != string(jute.Encode(create.Tree.Request)) ||
		len(reqs[0].auth) != 1 || reqs[1].cxid <= reqs[0].cxid {
		t.Fatalf("creates sent as %+v", reqs)
	}
	// Another member's client's write comes first: the hook sees it as
	// not this server's.
	commit(t, r, sentRequest{session: 0x0100000000000009, cxid: reqs[0].cxid}, jute.OpCreate, createTxn("/other", "", false, 1))
	z = commit(t, r, reqs[0], jute.OpCreate, createTxn("/a", "x", false, 2))
	o := outcome(t, ch)
	if resp, ok := o.Result.Response.(*jute.CreateResponse); o.Err != nil || o.Zxid != z || !ok || resp.Path != "/a" {
		t.Fatalf("create outcome %+v", o)
	}
	commit(t, r, reqs[1], jute.OpError, errorTxn(jute.NodeExists))
	if o := outcome(t, again); o.Err != nil || o.Result.Err != jute.NodeExists {
		t.Fatalf("failed create's outcome %+v, want NodeExists", o)
	}
	n := len(hooks.applied)
	if n != 4 || hooks.applied[2] != create || hooks.applying[2] != create {
		t.Fatalf("hook saw %d applied, third %p, want the submitted txn %p", n, hooks.applied[2], create)
	}
	if create.Owner != 4 {
		t.Errorf("the hook saw this server's write with owner %d, want 4 (the server runs the reads queued before it only then)", create.Owner)
	}
	if other := hooks.applied[1]; other.Owner == 4 || other.Tree.Type != jute.OpCreate || other.Tree.SessionID != 0x0100000000000009 {
		t.Errorf("another member's txn reached the hook as %+v", other)
	}
}

func TestReplicaSessionsAndRefusals(t *testing.T) {
	r, up, _ := newTestReplica(t)
	const live, gone = int64(0x11), int64(0x12)
	r.st.Sessions().Add(live, 4000)
	r.st.Sessions().Add(gone, 4000)
	up.valid[live] = true
	for _, tc := range []struct {
		sid  int64
		want jute.Code
	}{{live, jute.OK}, {gone, jute.SessionExpired}, {0x13, jute.SessionExpired}} {
		o := outcome(t, r.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: txnlog.OpMoveSession, SessionID: tc.sid}}))
		if o.Err != nil || o.Result.Err != tc.want {
			t.Errorf("move of %#x: %+v, want %s", tc.sid, o, tc.want)
		}
	}
	failed := txnlog.Failed(&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCreate, SessionID: live,
		Request: &jute.CreateRequest{Path: "/x"}}}, jute.MarshallingError)
	if o := outcome(t, r.Submit(failed)); o.Err != nil || o.Result.Err != jute.MarshallingError {
		t.Errorf("refused write: %+v", o)
	}
	if len(up.sent()) != 0 {
		t.Errorf("moves and refusals sent requests: %+v", up.sent())
	}
	r.Touch([]int64{live, 0x99})
	if len(up.touched) != 1 || up.touched[live] != 4000 {
		t.Errorf("touch sent %v", up.touched)
	}
	if _, err := r.TransferLeadership(context.Background(), 0); !errors.Is(err, ErrNotSupported) {
		t.Errorf("transfer: %v", err)
	}
}

func TestReplicaLinkLoss(t *testing.T) {
	r, up, _ := newTestReplica(t)
	if err := r.QuorumHealth(time.Second); err != nil {
		t.Fatalf("health while synced: %v", err)
	}
	select {
	case <-r.LeaderLinkLost(): // the sync's signal
	default:
	}
	ch := r.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpDelete, SessionID: 5, Request: &jute.DeleteRequest{Path: "/a", Version: -1}}})
	up.setServing(false)
	select {
	case <-r.LeaderLinkLost():
	case <-time.After(5 * time.Second):
		t.Fatal("the lost link was not signalled")
	}
	if o := outcome(t, ch); !errors.Is(o.Err, ErrLinkLost) {
		t.Errorf("write in flight when the link broke: %+v", o)
	}
	if err := r.QuorumHealth(time.Second); err == nil {
		t.Error("healthy without a leader")
	}
	if o := outcome(t, r.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpDelete, SessionID: 5,
		Request: &jute.DeleteRequest{Path: "/a", Version: -1}}})); o.Err == nil {
		t.Errorf("write without a leader: %+v", o)
	}
	// The resync: unhealthy until the server waited for it again.
	up.setServing(true)
	r.UpToDate()
	if err := r.QuorumHealth(time.Second); err == nil {
		t.Error("healthy after a resync the server has not seen")
	}
	if err := r.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.QuorumHealth(time.Second); err != nil {
		t.Errorf("health after WaitReady: %v", err)
	}
}

func TestReplicaFreezeHoldsWrites(t *testing.T) {
	r, up, _ := newTestReplica(t)
	write := func(path string) <-chan replicationOutcome {
		return r.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCreate, SessionID: 5,
			Request: &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe}}})
	}
	inflight := write("/a")
	frozen := make(chan error, 1)
	go func() {
		_, err := r.Freeze(context.Background())
		frozen <- err
	}()
	select {
	case err := <-frozen:
		t.Fatalf("Freeze returned %v with a write in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	held := []<-chan replicationOutcome{write("/b"), write("/c")}
	commit(t, r, up.sent()[0], jute.OpCreate, createTxn("/a", "", false, 1))
	outcome(t, inflight)
	if err := <-frozen; err != nil {
		t.Fatal(err)
	}
	if n := len(up.sent()); n != 1 || up.syncs != 1 {
		t.Fatalf("frozen: %d requests sent, %d syncs; want 1 and 1", n, up.syncs)
	}
	r.Unfreeze()
	reqs := up.sent()
	if len(reqs) != 3 || reqs[1].cxid >= reqs[2].cxid {
		t.Fatalf("after Unfreeze: %+v", reqs)
	}
	var cr jute.CreateRequest
	cr.Decode(jute.NewDecoder(reqs[1].body))
	if cr.Path != "/b" {
		t.Errorf("first held write sent: %s, want /b", cr.Path)
	}
	commit(t, r, reqs[1], jute.OpCreate, createTxn("/b", "", false, 2))
	commit(t, r, reqs[2], jute.OpCreate, createTxn("/c", "", false, 3))
	for _, ch := range held {
		if o := outcome(t, ch); o.Err != nil || o.Result.Err != jute.OK {
			t.Errorf("held write: %+v", o)
		}
	}
}

type replicationOutcome = replication.Outcome

// A re-sync by SNAP replaces the state: the requests sent before it fail
// (their fate is unknown), the server hears Restored, and the server
// must wait for the mirror again before it serves.
func TestReplicaResyncBySnapshot(t *testing.T) {
	r, _, hooks := newTestReplica(t)
	ch := r.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: jute.OpDelete, SessionID: 5,
		Request: &jute.DeleteRequest{Path: "/a", Version: -1}}})
	body := recordedSnapshot(t, "snapshot.3f")
	if err := r.Snapshot(0x3f, bufio.NewReader(bytes.NewReader(body))); err != nil {
		t.Fatal(err)
	}
	if hooks.restored != 0 {
		t.Fatal("Restored before the sync ended")
	}
	r.UpToDate()
	if hooks.restored != 1 || r.LastZxid() != 0x3f {
		t.Fatalf("after the re-sync: %d Restored, zxid %#x", hooks.restored, r.LastZxid())
	}
	if o := outcome(t, ch); !errors.Is(o.Err, ErrLinkLost) {
		t.Errorf("request sent before the re-sync: %+v", o)
	}
	if err := r.QuorumHealth(time.Second); err == nil {
		t.Error("healthy before the server waited for the re-synced mirror")
	}
}

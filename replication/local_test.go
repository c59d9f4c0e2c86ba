package replication

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// TestLocalEntriesAreTakenOnApply checks that the FSM takes every entry
// this member built (none is left behind after its writes were applied),
// and that entries are found by their slice, not by equal bytes.
func TestLocalEntriesAreTakenOnApply(t *testing.T) {
	n := openNode(t, t.TempDir(), true)
	defer n.Close()
	var chans []<-chan Outcome
	var txns []*txnlog.Txn
	for i := range 200 {
		txns = append(txns, createTxn(fmt.Sprintf("/l%d", i)))
		chans = append(chans, n.Submit(txns[i]))
	}
	for _, ch := range chans {
		if o := await(t, ch); o.Err != nil || o.Result.Err != jute.OK {
			t.Fatalf("write failed: %+v", o)
		}
	}
	n.fsm.local.mu.Lock()
	left, taken := len(n.fsm.local.m), n.fsm.local.taken
	n.fsm.local.mu.Unlock()
	if left != 0 || taken == 0 {
		t.Fatalf("%d local entries left after every write was applied, %d taken", left, taken)
	}
	for _, txn := range txns {
		if txn.Tree.Time != 0 {
			t.Fatal("the FSM's copy of a transaction is the proposer's own")
		}
	}

	l := newLocalEntries()
	data := []byte{1, 2, 3}
	l.put(data, &txnlog.Entry{Time: 1})
	if en := l.take(append([]byte(nil), data...)); en != nil {
		t.Fatal("an equal copy of an entry was taken for it")
	}
	if en := l.take(data); en == nil || en.Time != 1 {
		t.Fatalf("take = %+v, want the entry put", en)
	}
	if en := l.take(data); en != nil {
		t.Fatal("an entry was taken twice")
	}
}

func TestLocalEntryNeedsEveryTxn(t *testing.T) {
	txn := createTxn("/a")
	batch := []proposal{{txn: txn}, {encoded: []byte{0}}}
	if en := localEntry(batch, 5); en != nil {
		t.Fatalf("a batch with a forwarded txn gave a local entry: %+v", en)
	}
	en := localEntry(batch[:1], 5)
	if en == nil || len(en.Txns) != 1 || en.Txns[0] != txn || txn.Tree.Time != 5 {
		t.Fatalf("localEntry = %+v: want the proposal's txn with the entry's time", en)
	}
}

// wireRequest returns rec as the server has it: encoded by a client and
// decoded from the wire into the opcode's request record.
func wireRequest(t *testing.T, op jute.OpCode, rec jute.Record) jute.Record {
	t.Helper()
	e := jute.NewEncoder(nil)
	rec.Encode(e)
	got := jute.NewRequest(op)
	d := jute.NewDecoder(e.Bytes())
	got.Decode(d)
	if err := d.Finish(true); err != nil {
		t.Fatalf("%v: decode the request: %v", op, err)
	}
	return got
}

// TestLocalEntriesDecodeToThemselves: the FSM applies the transactions a
// member packed into an entry without decoding it (localEntries), so every
// kind of transaction a member proposes must be exactly what its encoding
// decodes to, or members that decode the entry would diverge.
func TestLocalEntriesDecodeToThemselves(t *testing.T) {
	ids := []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: "bob:x"}}
	client := func(op jute.OpCode, rec jute.Record) *txnlog.Txn {
		return &txnlog.Txn{RequestID: 7<<56 | 1, Owner: 7, Tree: datatree.Txn{Type: op, SessionID: 0x700000000000001, IDs: ids,
			Request: wireRequest(t, op, rec)}}
	}
	tests := []struct {
		name string
		txn  *txnlog.Txn
	}{
		{"create", client(jute.OpCreate, &jute.CreateRequest{Path: "/a", Data: []byte("x"), ACL: jute.OpenACLUnsafe})},
		{"create2 without data", client(jute.OpCreate2, &jute.CreateRequest{Path: "/b", ACL: jute.CreatorAllACL, Flags: jute.ModeEphemeralSequential})},
		{"create container", client(jute.OpCreateContainer, &jute.CreateRequest{Path: "/c", Data: []byte{}, ACL: jute.OpenACLUnsafe, Flags: jute.ModeContainer})},
		{"create TTL", client(jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/t", ACL: jute.OpenACLUnsafe, Flags: jute.ModePersistentWithTTL, TTL: 500})},
		{"delete", client(jute.OpDelete, &jute.DeleteRequest{Path: "/a", Version: 3})},
		{"set data", client(jute.OpSetData, &jute.SetDataRequest{Path: "/a", Data: []byte("y"), Version: -1})},
		{"set empty data", client(jute.OpSetData, &jute.SetDataRequest{Path: "/a", Version: -1})},
		{"set ACL", client(jute.OpSetACL, &jute.SetACLRequest{Path: "/a", ACL: jute.ReadACLUnsafe, Version: 0})},
		{"check", client(jute.OpCheck, &jute.CheckVersionRequest{Path: "/a", Version: 2})},
		{"multi", client(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Request: &jute.CreateRequest{Path: "/m", ACL: jute.OpenACLUnsafe}},
			{Type: jute.OpCheck, Request: &jute.CheckVersionRequest{Path: "/m", Version: 0}},
			{Type: jute.OpSetData, Request: &jute.SetDataRequest{Path: "/m", Data: []byte("z"), Version: -1}},
			{Type: jute.OpDelete, Request: &jute.DeleteRequest{Path: "/m", Version: -1}},
		}})},
		{"reconfig", client(jute.OpReconfig, &jute.ReconfigRequest{JoiningServers: "server.4=127.0.0.1:2888:3888;2181", CurConfigID: -1})},
		{"create session", &txnlog.Txn{RequestID: 2, Owner: 7, Timeout: 30000, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: 0x700000000000002}}},
		{"close session", &txnlog.Txn{RequestID: 3, Tree: datatree.Txn{Type: jute.OpCloseSession, SessionID: 0x700000000000002}}},
		{"move session", &txnlog.Txn{RequestID: 4, Owner: 2, Tree: datatree.Txn{Type: txnlog.OpMoveSession, SessionID: 0x700000000000002}}},
		{"delete container", &txnlog.Txn{Tree: datatree.Txn{Type: jute.OpDeleteContainer, Request: &jute.PathRequest{Path: "/c"}}}},
		{"failed write", txnlog.Failed(client(jute.OpSetData, &jute.SetDataRequest{Path: "/gone", Data: []byte("big"), Version: -1}), jute.NoNode)},
	}
	var batch []proposal
	for _, tc := range tests {
		batch = append(batch, proposal{txn: tc.txn})
	}
	const now = 1795328583539
	local := localEntry(batch, now)
	entry := txnlog.EntryHeader(nil, now, len(batch))
	for i := range batch {
		entry = batch[i].appendTo(entry)
	}
	decoded, err := txnlog.Decode(entry)
	if err != nil || local == nil || len(decoded.Txns) != len(tests) || decoded.Time != local.Time {
		t.Fatalf("decode = %+v, %v; local entry %+v", decoded, err, local)
	}
	for i, tc := range tests {
		if !reflect.DeepEqual(decoded.Txns[i], local.Txns[i]) {
			t.Errorf("%s: the local transaction differs from its encoding:\nlocal   %+v\ndecoded %+v", tc.name, local.Txns[i], decoded.Txns[i])
		}
	}
}

func TestAppliedIndexWakesWaitersOnAdvance(t *testing.T) {
	a := newAppliedIndex()
	a.set(1) // nobody waits: no new channel needed
	i, ch := a.get()
	if i != 1 || closed(ch) {
		t.Fatalf("get = %d, closed %v; want 1, open", i, closed(ch))
	}
	a.set(1)
	if closed(ch) {
		t.Fatal("woken without an advance")
	}
	a.set(2)
	if !closed(ch) {
		t.Fatal("not woken by an advance")
	}
	i, ch2 := a.get()
	if i != 2 || closed(ch2) {
		t.Fatalf("after the advance get = %d, closed %v; want 2, open", i, closed(ch2))
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

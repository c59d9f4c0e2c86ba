package replication

import (
	"reflect"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

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

// TestProposalsDecodeToThemselves: every member's FSM applies the decoded
// log entry, the proposing member's too, so every kind of transaction a
// member proposes must be exactly what its encoding decodes to (with the
// entry's time), or the proposer's client would not get what it asked for.
func TestProposalsDecodeToThemselves(t *testing.T) {
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
	entry := txnlog.EntryHeader(nil, 0, now, len(batch))
	for i := range batch {
		entry = batch[i].appendTo(entry)
	}
	decoded, err := txnlog.Decode(txnlog.Seal(entry))
	if err != nil || len(decoded.Txns) != len(tests) || decoded.Time != now {
		t.Fatalf("decode = %+v, %v", decoded, err)
	}
	for i, tc := range tests {
		want := *tc.txn
		want.Tree.Time = now
		if !reflect.DeepEqual(decoded.Txns[i], &want) {
			t.Errorf("%s: the proposed transaction differs from its encoding:\nproposed %+v\ndecoded  %+v", tc.name, &want, decoded.Txns[i])
		}
	}
}

func TestAppliedIndexWakesWaitersOnAdvance(t *testing.T) {
	a := newAppliedIndex()
	a.set(1, 1) // nobody waits: no new channel needed
	i, ch := a.get()
	if i != 1 || closed(ch) {
		t.Fatalf("get = %d, closed %v; want 1, open", i, closed(ch))
	}
	a.set(1, 1)
	if closed(ch) {
		t.Fatal("woken without an advance")
	}
	a.set(2, 1)
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

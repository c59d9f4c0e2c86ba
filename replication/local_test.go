package replication

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

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

// TestLocalEntryDifferingFromItsEncodingPanics checks the guard of test
// binaries: a local entry that is not what its bytes decode to stops the
// FSM instead of being applied.
func TestLocalEntryDifferingFromItsEncodingPanics(t *testing.T) {
	f := newTestFSM()
	encoded := &txnlog.Entry{Time: 7, Txns: []*txnlog.Txn{createTxn("/real")}}
	data := encoded.Encode(nil)
	other := &txnlog.Entry{Time: 7, Txns: []*txnlog.Txn{createTxn("/other")}}
	f.local.put(data, other)
	defer func() {
		if recover() == nil {
			t.Fatal("a local entry differing from its encoding was applied")
		}
		if _, _, code := f.tree.Load().GetData("/other", nil, nil); code != jute.NoNode {
			t.Fatal("the differing local entry reached the tree")
		}
	}()
	f.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: data})
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

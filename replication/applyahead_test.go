package replication

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// aheadLog returns a log store with entries 1..n of testEntry, except that
// noop (when not 0) is a raft no-op entry and the entries in missing are
// left out.
func aheadLog(t *testing.T, n, noop int, missing ...int) *raft.InmemStore {
	t.Helper()
	store := raft.NewInmemStore()
	skip := make(map[int]bool)
	for _, i := range missing {
		skip[i] = true
	}
	for i := 1; i <= n; i++ {
		if skip[i] {
			continue
		}
		l := testEntry(i)
		if i == noop {
			l = &raft.Log{Index: uint64(i), Term: 1, Type: raft.LogNoop}
		}
		if err := store.StoreLog(l); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// appliedTo returns a log of ten entries and an FSM that raft has applied
// up to index n of it.
func appliedTo(t *testing.T, n int) (*raft.InmemStore, *fsm) {
	t.Helper()
	store := aheadLog(t, 10, 0)
	f := newTestFSM()
	applyRaft(t, f, store, 1, n)
	return store, f
}

// fsmState is what two FSMs must agree on: the tree, the sessions and the
// last zxid.
func fsmState(t *testing.T, f *fsm) string {
	t.Helper()
	var tree bytes.Buffer
	if err := f.tree.Load().WriteSnapshot(&tree); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x|%v|%d", tree.Bytes(), f.sessions.Load().All(), f.lastZxid.Load())
}

// applyRaft applies entries from..to of store as raft delivers them:
// commands only.
func applyRaft(t *testing.T, f *fsm, store raft.LogStore, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		var l raft.Log
		if err := store.GetLog(uint64(i), &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if l.Type == raft.LogCommand {
			f.Apply(&l)
		}
	}
}

func TestApplyAhead(t *testing.T) {
	tests := []struct {
		name        string
		noop        int
		missing     []int
		start       int    // entries applied through raft first
		index, term uint64 // what the leader reported
		wantLast    uint64 // f.last after applyAhead
	}{
		{name: "applies up to the reported entry", start: 1, index: 8, term: 1, wantLast: 8},
		{name: "steps over a no-op entry", noop: 4, start: 1, index: 8, term: 1, wantLast: 8},
		{name: "another term at the index", start: 1, index: 8, term: 2, wantLast: 1},
		{name: "index not in this log yet", start: 1, index: 11, term: 1, wantLast: 1},
		{name: "a hole before the index", missing: []int{5}, start: 1, index: 8, term: 1, wantLast: 4},
		{name: "already applied", start: 9, index: 8, term: 1, wantLast: 9},
		{name: "nothing applied yet: raft's position unknown", start: 0, index: 8, term: 1, wantLast: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := aheadLog(t, 10, tt.noop, tt.missing...)
			f, ref := newTestFSM(), newTestFSM()
			applyRaft(t, f, store, 1, tt.start)
			f.applyAhead(tt.index, tt.term, store)
			if f.last != tt.wantLast {
				t.Fatalf("last applied %d, want %d", f.last, tt.wantLast)
			}
			applyRaft(t, ref, store, 1, int(tt.wantLast))
			if fsmState(t, f) != fsmState(t, ref) {
				t.Fatal("state after applyAhead differs from raft's apply of the same entries")
			}
			// raft then delivers every entry: the early ones are not
			// applied again.
			if len(tt.missing) > 0 {
				return
			}
			applyRaft(t, f, store, tt.start+1, 10)
			applyRaft(t, ref, store, int(tt.wantLast)+1, 10)
			if fsmState(t, f) != fsmState(t, ref) {
				t.Fatal("raft's delivery of entries applied early changed the state")
			}
		})
	}
}

// TestSnapshotRecordsEarlyApplies restores a snapshot taken while the FSM
// was ahead of raft: raft's replay of the entries after its snapshot index
// must skip the ones the snapshot already holds.
func TestSnapshotRecordsEarlyApplies(t *testing.T) {
	store, f := appliedTo(t, 5)
	f.applyAhead(8, 1, store)
	sink := persistSnapshot(t, f)

	g, err := restoreFrom(sink)
	if err != nil {
		t.Fatal(err)
	}
	if g.last != 8 {
		t.Fatalf("restored last applied %d, want 8", g.last)
	}
	applyRaft(t, g, store, 6, 10) // raft's snapshot index was 5
	applyRaft(t, f, store, 6, 10)
	if fsmState(t, g) != fsmState(t, f) {
		t.Fatal("replay after the restore does not reach the live state")
	}
}

func TestRestoreRejectsUnknownSnapshotVersion(t *testing.T) {
	f := newTestFSM()
	stream := persistSnapshot(t, f)
	for _, v := range []uint32{1, 3} {
		binary.BigEndian.PutUint32(stream[8:], v)
		if _, err := restoreFrom(stream); !errors.Is(err, txnlog.ErrBadSnapshot) {
			t.Fatalf("a version %d stream: %v, want a bad snapshot error", v, err)
		}
	}
	if _, err := restoreFrom(stream[:15]); err == nil {
		t.Fatal("a cut header was restored")
	}
}

// restoreFrom restores an FSM snapshot stream into a new FSM.
func restoreFrom(stream []byte) (*fsm, error) {
	f := newTestFSM()
	return f, f.Restore(io.NopCloser(bytes.NewReader(stream)))
}

func persistSnapshot(t testing.TB, f *fsm) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

// FuzzRestoreSnapshot feeds Restore damaged FSM snapshot streams: each must
// be restored or refused with an error, never crash the member.
func FuzzRestoreSnapshot(f *testing.F) {
	src := newTestFSM()
	en := &txnlog.Entry{Time: 1000, Txns: []*txnlog.Txn{
		{Timeout: 30000, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: 7}},
		{Tree: datatree.Txn{Type: jute.OpCreate, SessionID: 7,
			Request: &jute.CreateRequest{Path: "/e", Data: []byte("x"), ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral}}},
	}}
	src.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: en.Encode(nil)})
	v2 := persistSnapshot(f, src)
	f.Add(v2)
	f.Add(v2[:txnlog.SnapshotHeaderSize])
	f.Fuzz(func(t *testing.T, stream []byte) {
		restoreFrom(stream)
	})
}

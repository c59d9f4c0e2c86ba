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
// noop (when not 0) is a raft no-op entry.
func aheadLog(t *testing.T, n, noop int) *raft.InmemStore {
	t.Helper()
	store := raft.NewInmemStore()
	for i := 1; i <= n; i++ {
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

// TestSnapshotRecordsAppliedIndex: a snapshot records the last command
// entry raft delivered, never more, so raft's replay after restoring it
// skips nothing.
func TestSnapshotRecordsAppliedIndex(t *testing.T) {
	tests := []struct {
		name    string
		noop    int // a raft no-op entry's index (0: none)
		applied int // entries raft delivered
		want    uint64
	}{
		{name: "nothing applied", applied: 0, want: 0},
		{name: "commands only", applied: 6, want: 6},
		{name: "a no-op last", noop: 6, applied: 6, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := aheadLog(t, 10, tt.noop)
			f := newTestFSM()
			applyRaft(t, f, store, 1, tt.applied)
			g, err := restoreFrom(persistSnapshot(t, f))
			if err != nil {
				t.Fatal(err)
			}
			if g.last != tt.want {
				t.Fatalf("restored applied index %d, want %d", g.last, tt.want)
			}
			applyRaft(t, g, store, tt.applied+1, 10)
			applyRaft(t, f, store, tt.applied+1, 10)
			if fsmState(t, g) != fsmState(t, f) {
				t.Fatal("replay after the restore does not reach the live state")
			}
		})
	}
}

// TestRestoreSkipsEntriesAnOlderSnapshotHolds restores a snapshot that an
// earlier build wrote on a follower that applied forwarded writes ahead of
// raft: it holds entries up to 8 while raft's snapshot index is 5. raft's
// replay from 6 must not apply 6..8 again.
func TestRestoreSkipsEntriesAnOlderSnapshotHolds(t *testing.T) {
	store := aheadLog(t, 10, 0)
	f := newTestFSM()
	applyRaft(t, f, store, 1, 8)
	g, err := restoreFrom(persistSnapshot(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if g.last != 8 {
		t.Fatalf("restored applied index %d, want 8", g.last)
	}
	applyRaft(t, g, store, 6, 10) // raft's snapshot index was 5
	applyRaft(t, f, store, 9, 10)
	if fsmState(t, g) != fsmState(t, f) {
		t.Fatal("replay after the restore applied entries the snapshot holds")
	}
}

func TestRestoreRejectsUnknownSnapshotVersion(t *testing.T) {
	f := newTestFSM()
	stream := persistSnapshot(t, f)
	for _, v := range []uint32{1, 4} {
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

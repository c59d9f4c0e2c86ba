package replication

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

// testEntry returns log entry i: a batch that creates a directory with
// children, changes data, deletes one of entry i-3's children and closes
// an earlier entry's session (deleting its ephemeral).
func testEntry(i int) *raft.Log {
	sess := int64(1000 + i)
	txns := []*txnlog.Txn{{Timeout: 30000, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: sess}}}
	add := func(op jute.OpCode, req jute.Record) {
		txns = append(txns, &txnlog.Txn{Tree: datatree.Txn{Type: op, SessionID: sess, Request: req}})
	}
	dir := fmt.Sprintf("/d%d", i)
	add(jute.OpCreate, &jute.CreateRequest{Path: dir, Data: []byte("dir"), ACL: jute.OpenACLUnsafe})
	for k := 0; k < 20; k++ {
		add(jute.OpCreate, &jute.CreateRequest{Path: fmt.Sprintf("%s/c%d", dir, k), Data: []byte("x"), ACL: jute.OpenACLUnsafe})
	}
	add(jute.OpCreate, &jute.CreateRequest{Path: dir + "/e", ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral})
	add(jute.OpSetData, &jute.SetDataRequest{Path: fmt.Sprintf("/d%d", i/2), Data: []byte(fmt.Sprint(i)), Version: -1})
	add(jute.OpDelete, &jute.DeleteRequest{Path: fmt.Sprintf("/d%d/c%d", i-3, i%20), Version: -1})
	if i%5 == 0 {
		txns = append(txns, &txnlog.Txn{Tree: datatree.Txn{Type: jute.OpCloseSession, SessionID: sess - 4}})
	}
	en := &txnlog.Entry{Time: int64(i) * 1000, Txns: txns}
	return &raft.Log{Index: uint64(i), Term: 1, Type: raft.LogCommand, Data: en.Encode(nil)}
}

func newTestFSM() *fsm {
	return newFSM(datatree.Config{}, false, nil, newWaiters(), newAppliedIndex())
}

// TestSnapshotWhileApplying persists an FSM snapshot while more entries are
// applied and checks that restoring it gives exactly the state at the
// snapshot: the tree, the session table and the last zxid.
func TestSnapshotWhileApplying(t *testing.T) {
	f := newTestFSM()
	const before, during = 1000, 600
	for i := 1; i <= before; i++ {
		f.Apply(testEntry(i))
	}
	var wantTree bytes.Buffer
	if err := f.tree.Load().WriteSnapshot(&wantTree); err != nil {
		t.Fatal(err)
	}
	wantSessions := f.sessions.Load().All()
	wantZxid := f.lastZxid.Load()

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	var wg sync.WaitGroup
	var persistErr error
	wg.Go(func() { persistErr = snap.Persist(sink) })
	for i := before + 1; i <= before+during; i++ {
		f.Apply(testEntry(i))
	}
	wg.Wait()
	snap.Release()
	if persistErr != nil || !sink.closed || sink.cancelled {
		t.Fatalf("persist: %v closed=%v cancelled=%v", persistErr, sink.closed, sink.cancelled)
	}

	g, err := restoreFrom(sink.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var gotTree bytes.Buffer
	if err := g.tree.Load().WriteSnapshot(&gotTree); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotTree.Bytes(), wantTree.Bytes()) {
		t.Error("restored tree differs from the tree at the snapshot")
	}
	if got := g.lastZxid.Load(); got != wantZxid {
		t.Errorf("last zxid %d, want %d", got, wantZxid)
	}
	if got := g.sessions.Load().All(); fmt.Sprint(got) != fmt.Sprint(wantSessions) {
		t.Errorf("sessions %v, want %v", got, wantSessions)
	}
	// The live FSM went on: replaying the same entries on the restored one
	// reaches the same state.
	for i := before + 1; i <= before+during; i++ {
		g.Apply(testEntry(i))
	}
	var live, replayed bytes.Buffer
	f.tree.Load().WriteSnapshot(&live)
	g.tree.Load().WriteSnapshot(&replayed)
	if !bytes.Equal(live.Bytes(), replayed.Bytes()) {
		t.Error("replaying after the restore does not reach the live state")
	}
}

// TestSnapshotFallback takes a second FSM snapshot while the first is
// still open: it is serialized at once and is still exact.
func TestSnapshotFallback(t *testing.T) {
	f := newTestFSM()
	for i := 1; i <= 50; i++ {
		f.Apply(testEntry(i))
	}
	first, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	f.Apply(testEntry(51))
	var want bytes.Buffer
	f.tree.Load().WriteSnapshot(&want)
	second, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(testEntry(52))
	sink := &memSink{}
	if err := second.Persist(sink); err != nil {
		t.Fatal(err)
	}
	second.Release()
	g, err := restoreFrom(sink.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	g.tree.Load().WriteSnapshot(&got)
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Error("fallback snapshot differs")
	}
}

// failSink fails every write.
type failSink struct{ memSink }

func (s *failSink) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

func TestSnapshotPersistError(t *testing.T) {
	f := newTestFSM()
	f.Apply(testEntry(1))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	sink := &failSink{}
	if err := snap.Persist(sink); err == nil || !sink.cancelled {
		t.Fatalf("err %v cancelled %v", err, sink.cancelled)
	}
}

package zab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

func TestDecide(t *testing.T) {
	view := View{Servers: []Server{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 9, Observer: true}}}
	f := func(leader, epoch int64) *Notification {
		return &Notification{State: Following, Leader: leader, PeerEpoch: epoch}
	}
	l := func(id, epoch int64) *Notification {
		return &Notification{State: Leading, Leader: id, PeerEpoch: epoch}
	}
	tests := []struct {
		name   string
		votes  map[int64]*Notification
		leader int64 // 0: undecided
	}{
		{"leader and one follower", map[int64]*Notification{1: f(2, 4), 2: l(2, 4)}, 2},
		{"all three", map[int64]*Notification{1: f(3, 4), 2: f(3, 4), 3: l(3, 4)}, 3},
		{"quorum without the leader's word", map[int64]*Notification{1: f(3, 4), 2: f(3, 4)}, 0},
		{"the leader alone", map[int64]*Notification{3: l(3, 4)}, 0},
		{"epochs differ", map[int64]*Notification{1: f(3, 5), 3: l(3, 4)}, 0},
		{"leader says it follows", map[int64]*Notification{1: f(3, 4), 3: f(3, 4)}, 0},
		{"looking voters do not count", map[int64]*Notification{1: {State: Looking, Leader: 3, PeerEpoch: 4}, 3: l(3, 4)}, 0},
		{"an observer's word does not count", map[int64]*Notification{9: f(3, 4), 3: l(3, 4)}, 0},
		{"two camps, one with a quorum", map[int64]*Notification{1: f(1, 6), 2: l(2, 5), 3: l(1, 6)}, 0},
		{"old leader outvoted", map[int64]*Notification{1: l(1, 6), 2: l(2, 5), 3: f(1, 6)}, 1},
	}
	for _, tt := range tests {
		s, _, ok := decide(view, tt.votes)
		if (tt.leader == 0) == ok || (ok && s.ID != tt.leader) {
			t.Errorf("%s: decided %v (%d), want %d", tt.name, ok, s.ID, tt.leader)
		}
	}
}

// testEnsemble is one fake voter (which also leads, on a fake quorum
// port) and the observer's line.
type testEnsemble struct {
	voter  *fakeVoter
	leader *fakeLeader
	cfg    Config
	line   string // the voter's server.N line
}

// config is a dynamic configuration of the voter, extra lines and version.
func (e *testEnsemble) config(extra string, version int64) []byte {
	return []byte(fmt.Sprintf("%s\n%sversion=%x", e.line, extra, version))
}

func newTestEnsemble(t *testing.T, obsID, voterID int64) *testEnsemble {
	quorum, election, mine := loopback(t), loopback(t), loopback(t)
	line := fmt.Sprintf("server.%d=%s:%s:participant", voterID, quorum, election[len("127.0.0.1:"):])
	vote := Notification{State: Leading, Leader: voterID, Zxid: 0x100000005, ElectionEpoch: 1, PeerEpoch: 1, Version: 2, Config: []byte(line + "\nversion=0")}
	return &testEnsemble{
		line:   line,
		voter:  newFakeVoter(t, voterID, election, vote),
		leader: newFakeLeader(t, quorum),
		cfg: Config{MyID: obsID, Servers: []Server{
			{ID: voterID, Addr: quorum, ElectionAddr: election},
			{ID: obsID, Addr: "127.0.0.1:1", ElectionAddr: mine, Observer: true},
		}, Logger: testLogger(t), InitTimeout: 5 * time.Second, SyncTimeout: 5 * time.Second,
			ElectionWait: 500 * time.Millisecond, MaxBackoff: 200 * time.Millisecond},
	}
}

func (e *testEnsemble) start(t *testing.T, h Handler) *Observer {
	cfg := e.cfg
	cfg.Handler = h
	o, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// TestFindLeaderBothWays: with a smaller sid than the voter the observer
// gets its answer over the connection the voter opens back to it; with a
// larger one over its own connection.
func TestFindLeaderBothWays(t *testing.T) {
	for _, tt := range []struct {
		obs, voter    int64
		dialled, kept int
	}{{obs: 1, voter: 5, dialled: 1}, {obs: 7, voter: 5, kept: 1}} {
		t.Run(fmt.Sprintf("observer %d voter %d", tt.obs, tt.voter), func(t *testing.T) {
			e := newTestEnsemble(t, tt.obs, tt.voter)
			o := e.start(t, newRecorder())
			c := e.leader.next(t)
			c.register(tt.obs, 2)
			e.voter.mu.Lock()
			defer e.voter.mu.Unlock()
			if e.voter.dialled < tt.dialled || e.voter.kept < tt.kept {
				t.Errorf("voter dialled back %d, kept %d; want at least %d and %d", e.voter.dialled, e.voter.kept, tt.dialled, tt.kept)
			}
			if tt.dialled == 0 && e.voter.dialled != 0 {
				t.Errorf("voter dialled back a larger sid")
			}
			_ = o
		})
	}
}

// snapshotBytes is a small serializeSnapshot: one session, one ACL list,
// the root and /zab, and the "/" terminator.
func snapshotBytes() []byte {
	var e jute.Encoder
	e.Int(1)
	e.Long(0x0400000000000001)
	e.Int(10000)
	e.Int(1) // ACL cache
	e.Long(1)
	e.Int(1)
	e.Int(31)
	e.String("world")
	e.String("anyone")
	for _, path := range []string{"", "/zab"} {
		e.String(path)
		e.Buffer([]byte("x"))
		e.Long(1)
		for range 4 {
			e.Long(0x300000001)
		}
		for range 3 {
			e.Int(0)
		}
		e.Long(0)
		e.Long(0x300000001)
	}
	e.String("/")
	return e.Bytes()
}

func ackEpoch(t *testing.T, p *Packet, zxid int64, epoch int32) {
	t.Helper()
	if p.Zxid != zxid || len(p.Data) != 4 || int32(binary.BigEndian.Uint32(p.Data)) != epoch {
		t.Fatalf("ACKEPOCH %s data %x; want zxid 0x%x epoch %d", p, p.Data, zxid, epoch)
	}
}

// TestSyncAndServe drives an observer through a DIFF sync and the main
// loop (INFORM, PING with touches, REVALIDATE, SYNC, REQUEST), then a
// TRUNC, a TRUNC the handler refuses (the next registration presents zxid
// 0), a SNAP, a reconfig that moves the leader, and finally a snapshot
// not followed by its signature, which stops the observer.
func TestSyncAndServe(t *testing.T) {
	e := newTestEnsemble(t, 7, 5)
	rec := newRecorder()
	rec.last = 0x100000005
	o := e.start(t, rec)

	// 1: DIFF in epoch 2.
	c := e.leader.next(t)
	ackEpoch(t, c.register(7, 2), 0x100000005, 1)
	c.send(&Packet{Type: Diff, Zxid: 0x100000007},
		&Packet{Type: Proposal, Zxid: 0x100000006, Data: txnBytes(0x100000006, 1, 1, 1)},
		&Packet{Type: Commit, Zxid: 0x100000006},
		&Packet{Type: Proposal, Zxid: 0x100000007, Data: txnBytes(0x100000007, 1, 2, 1)},
		&Packet{Type: Commit, Zxid: 0x100000007},
		&Packet{Type: Inform, Zxid: 0x100000007, Data: txnBytes(0x100000007, 1, 2, 1)}, // a repeat: skipped
		&Packet{Type: NewLeader, Zxid: MakeZxid(2, 0), Data: e.config("", 0x100000000)})
	if p := c.expect(Ack); p.Zxid != MakeZxid(2, 0) {
		t.Errorf("NEWLEADER ack zxid 0x%x", p.Zxid)
	}
	if err := o.Request(1, 1, 1, nil, nil); !errors.Is(err, ErrNotServing) {
		t.Errorf("Request before UPTODATE: %v", err)
	}
	c.send(&Packet{Type: Inform, Zxid: 0x200000001, Data: txnBytes(0x200000001, 1, 3, 1)}, &Packet{Type: UpToDate, Zxid: -1})
	if p := c.expect(Ack); p.Zxid != MakeZxid(2, 0) {
		t.Errorf("UPTODATE ack zxid 0x%x", p.Zxid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.WaitUpToDate(ctx); err != nil {
		t.Fatal(err)
	}
	if v := o.el.View(); v.Version != 0x100000000 {
		t.Errorf("NEWLEADER's config not adopted: %+v", v)
	}

	o.Touch(map[int64]int32{0x0400000000000001: 10000})
	c.send(&Packet{Type: Ping, Zxid: 0x200000001})
	if p := c.expect(Ping); p.Zxid != 0x200000001 || len(p.Data) != 12 ||
		int64(binary.BigEndian.Uint64(p.Data)) != 0x0400000000000001 || binary.BigEndian.Uint32(p.Data[8:]) != 10000 {
		t.Errorf("PING answer %s data %x", p, p.Data)
	}
	c.send(&Packet{Type: Ping, Zxid: 0x200000001})
	if p := c.expect(Ping); len(p.Data) != 0 {
		t.Errorf("second PING answer repeats the touches: %x", p.Data)
	}

	valid := make(chan bool, 1)
	go func() {
		v, err := o.Revalidate(ctx, 0x0400000000000001, 10000)
		if err != nil {
			t.Errorf("revalidate: %v", err)
		}
		valid <- v
	}()
	p := c.expect(Revalidate)
	if p.Zxid != -1 || len(p.Data) != 12 || binary.BigEndian.Uint32(p.Data[8:]) != 10000 {
		t.Errorf("REVALIDATE %s data %x", p, p.Data)
	}
	c.send(&Packet{Type: Revalidate, Zxid: -1, Data: append(p.Data[:8:8], 1)})
	if !<-valid {
		t.Error("revalidate answered invalid")
	}

	synced := make(chan error, 1)
	go func() { synced <- o.Sync(ctx, 0x0400000000000001, 9, "/zab", []jute.ID{}) }()
	p = c.expect(Request)
	if want := requestData(0x0400000000000001, 9, int32(jute.OpSync), jute.Encode(&jute.SyncRequest{Path: "/zab"})); string(p.Data) != string(want) || p.AuthInfo == nil {
		t.Errorf("sync REQUEST %x auth %v", p.Data, p.AuthInfo)
	}
	c.send(&Packet{Type: Inform, Zxid: 0x200000002, Data: txnBytes(0x200000002, 1, 4, 1)}, &Packet{Type: Sync})
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if rec.txn(0x200000002) == nil {
		t.Error("Sync returned before the INFORM that preceded its answer was applied")
	}
	if err := o.Request(0x0400000000000001, 10, int32(jute.OpCreate), []byte{1, 2}, []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	p = c.expect(Request)
	if p.Zxid != -1 || string(p.Data) != string(requestData(0x0400000000000001, 10, 1, []byte{1, 2})) || len(p.AuthInfo) != 1 {
		t.Errorf("REQUEST %s data %x auth %v", p, p.Data, p.AuthInfo)
	}
	c.c.Close()

	// 2: TRUNC; a new epoch 3, so ACKEPOCH carries the current epoch 2.
	c = e.leader.next(t)
	ackEpoch(t, c.register(7, 3), 0x200000002, 2)
	c.send(&Packet{Type: Trunc, Zxid: 0x200000001}, &Packet{Type: NewLeader, Zxid: MakeZxid(3, 0)})
	c.expect(Ack)
	c.send(&Packet{Type: UpToDate, Zxid: -1})
	c.expect(Ack)
	waitFor(t, 10*time.Second, "truncated", func() bool { return rec.lastZxid() == 0x200000001 })
	c.c.Close()

	// 3: a TRUNC the handler refuses; then the same epoch again: -1.
	rec.mu.Lock()
	rec.truncErr = errors.New("cannot")
	rec.mu.Unlock()
	c = e.leader.next(t)
	ackEpoch(t, c.register(7, 3), 0x200000001, -1)
	c.send(&Packet{Type: Trunc, Zxid: 0x100000006})
	c = e.leader.next(t)
	ackEpoch(t, c.register(7, 3), 0, -1)

	// 4: SNAP, then a reconfig that names another leader.
	c.send(&Packet{Type: Snap, Zxid: 0x300000001})
	c.c.Write(snapshotBytes())
	var sig jute.Encoder
	sig.String("BenWasHere")
	c.c.Write(sig.Bytes())
	c.send(&Packet{Type: NewLeader, Zxid: MakeZxid(3, 0)})
	c.expect(Ack)
	c.send(&Packet{Type: UpToDate, Zxid: -1})
	c.expect(Ack)
	var rc jute.Encoder
	rc.Long(6) // the suggested leader
	rc.Long(0x0400000000000001)
	rc.Int(11)
	rc.Long(0x300000002)
	rc.Long(1700000000000)
	rc.Int(opReconfig)
	rc.String("/zookeeper/config")
	rc.Buffer(e.config("server.9=127.0.0.1:3:4:observer\n", 0x300000002))
	rc.Int(-1)
	c.send(&Packet{Type: InformAndActivate, Zxid: 0x300000002, Data: rc.Bytes()})
	c2 := e.leader.next(t) // the observer left: the leader moved
	rec.mu.Lock()
	if !rec.paths["/zab"] || rec.snapZxid != 0x300000001 {
		t.Errorf("snapshot: zxid 0x%x paths %v", rec.snapZxid, rec.paths)
	}
	rec.mu.Unlock()
	if rec.txn(0x300000002) == nil {
		t.Error("the reconfig transaction was not applied")
	}
	if v := o.el.View(); v.Version != 0x300000002 || len(v.Servers) != 2 {
		t.Errorf("reconfig's view not adopted: %+v", v)
	}

	// 5: a snapshot the handler reads short of: fatal.
	ackEpoch(t, c2.register(7, 3), 0x300000002, -1)
	c2.send(&Packet{Type: Snap, Zxid: 0x300000003})
	c2.c.Write(append(snapshotBytes()[:len(snapshotBytes())-5], 0, 0, 0, 1, '/'))
	c2.c.Write([]byte{0, 0, 0, 1, 'x'})
	select {
	case <-o.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("observer still running after a misaligned snapshot")
	}
	if err := o.Err(); err == nil {
		t.Error("no fatal error after a misaligned snapshot")
	}
	st := o.Stats()
	if st.Diffs != 1 || st.Truncs != 2 || st.Snaps != 2 || st.Syncs != 3 {
		t.Errorf("stats %+v", st)
	}
}

// TestTxnErrorStops: a Handler's Txn error stops the observer for good.
func TestTxnErrorStops(t *testing.T) {
	e := newTestEnsemble(t, 7, 5)
	rec := newRecorder()
	rec.last = 0x100000005
	o := e.start(t, rec)
	c := e.leader.next(t)
	c.register(7, 1)
	// zxid 4 is below the handler's 5, but a packet whose data says 0x99
	// makes the recorder object.
	c.send(&Packet{Type: Diff, Zxid: 0x100000005}, &Packet{Type: Inform, Zxid: 0x100000006, Data: txnBytes(0x99, 1, 1, 1)})
	select {
	case <-o.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("observer still running after a Txn error")
	}
	if err := o.Err(); err == nil {
		t.Error("Err is nil after a Txn error")
	}
	select {
	case c := <-e.leader.conns:
		t.Errorf("observer reconnected after a fatal error: %v", c.c.RemoteAddr())
	case <-time.After(300 * time.Millisecond):
	}
}

// TestCloseWhileSyncing: Close returns while the leader is silent.
func TestCloseWhileSyncing(t *testing.T) {
	e := newTestEnsemble(t, 7, 5)
	o := e.start(t, newRecorder())
	c := e.leader.next(t)
	c.register(7, 1)
	done := make(chan struct{})
	go func() { o.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs")
	}
	if _, err := o.Revalidate(context.Background(), 1, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Revalidate after Close: %v", err)
	}
}

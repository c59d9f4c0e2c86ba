package replication

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// hintMember is one raft member of hintCluster.
type hintMember struct {
	raft  *raft.Raft
	trans *hintTransport
	hints *commitHints
	logs  *raft.InmemStore
	inner *raft.InmemTransport
}

// countFSM applies nothing; raft's AppliedIndex is what the tests read.
type countFSM struct{}

func (countFSM) Apply(*raft.Log) interface{}         { return nil }
func (countFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("no snapshots") }
func (countFSM) Restore(io.ReadCloser) error         { return nil }

// hintCluster starts three raft members over in-memory transports, each
// behind a hintTransport, with a CommitTimeout far beyond the tests: a
// follower learns a commit only from an append carrying later entries, or
// from a hint.
func hintCluster(t *testing.T) []*hintMember {
	t.Helper()
	members := make([]*hintMember, 3)
	var servers []raft.Server
	inner := make([]*raft.InmemTransport, 3)
	for i := range members {
		addr, tr := raft.NewInmemTransport("")
		inner[i] = tr
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprint(i + 1)), Address: addr})
	}
	for i, a := range inner {
		for j, b := range inner {
			if i != j {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
	for i := range members {
		cfg := raft.DefaultConfig()
		cfg.LocalID = servers[i].ID
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
		cfg.CommitTimeout = time.Hour
		cfg.LogOutput = io.Discard
		logs := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		trans := newHintTransport(inner[i])
		hints := newCommitHints(logs, trans)
		trans.start(hints)
		if err := raft.BootstrapCluster(cfg, logs, logs, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatalf("bootstrap %d: %v", i+1, err)
		}
		r, err := raft.NewRaft(cfg, countFSM{}, logs, logs, snaps, trans)
		if err != nil {
			t.Fatalf("raft %d: %v", i+1, err)
		}
		hints.raft.Store(r)
		members[i] = &hintMember{raft: r, trans: trans, hints: hints, logs: logs, inner: inner[i]}
	}
	t.Cleanup(func() {
		for _, m := range members {
			m.raft.Shutdown().Error()
			m.trans.Close()
		}
	})
	return members
}

// leaderAndFollower waits for a leader and returns it and a follower. It
// cuts the leader off from the third member, so that the leader commits
// only with that follower's acknowledgement: the follower then always
// stores an entry before the leader commits it, and the append that
// brought it cannot carry its commit.
func leaderAndFollower(t *testing.T, members []*hintMember) (*hintMember, *hintMember) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for i, m := range members {
			if m.raft.State() == raft.Leader {
				third := members[(i+2)%len(members)]
				m.inner.Disconnect(third.inner.LocalAddr())
				third.inner.Disconnect(m.inner.LocalAddr())
				return m, members[(i+1)%len(members)]
			}
		}
	}
	t.Fatal("no leader within 10 s")
	return nil, nil
}

// commitOnLeader applies one entry on the leader, waits until follower has
// stored it, and returns its index.
func commitOnLeader(t *testing.T, leader, follower *hintMember) uint64 {
	t.Helper()
	f := leader.raft.Apply([]byte("x"), 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatalf("apply: %v", err)
	}
	index := f.Index()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if last, _ := follower.logs.LastIndex(); last >= index {
			return index
		}
		if time.Now().After(deadline) {
			t.Fatalf("the follower did not store entry %d within 5 s", index)
		}
	}
}

// waitApplied reports whether m's raft passes index within limit.
func waitApplied(m *hintMember, index uint64, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m.raft.AppliedIndex() >= index {
			return true
		}
	}
	return m.raft.AppliedIndex() >= index
}

// TestRaftTellsFollowersCommitsLateAndHintsTellThemAtOnce pins the raft
// behaviour commit hints exist for, and what they do about it: a
// follower holding a committed entry does not learn of the commit while
// no later entry follows (CommitTimeout aside; heartbeats carry no commit
// index), and a hint of that commit makes it apply the entry at once.
func TestRaftTellsFollowersCommitsLateAndHintsTellThemAtOnce(t *testing.T) {
	members := hintCluster(t)
	leader, follower := leaderAndFollower(t, members)
	index := commitOnLeader(t, leader, follower)
	if waitApplied(follower, index, 500*time.Millisecond) {
		t.Fatalf("the follower applied committed entry %d without a later entry or a hint: raft now tells followers commits at once, and commit hints may go", index)
	}
	follower.hints.committed(index, follower.raft.CurrentTerm())
	if !waitApplied(follower, index, 5*time.Second) {
		t.Fatalf("the follower did not apply entry %d within 5 s of its commit hint (applied %d)", index, follower.raft.AppliedIndex())
	}
}

// TestRaftChecksHintsAsAppends pins the checks raft makes of an append
// that carries no entries, on which the hints' safety rests: one of an
// older term, or whose previous entry the follower does not hold with
// that term, changes nothing; one that matches moves the commit index to
// its leader commit index, never past the previous entry it names.
func TestRaftChecksHintsAsAppends(t *testing.T) {
	members := hintCluster(t)
	leader, follower := leaderAndFollower(t, members)
	index := commitOnLeader(t, leader, follower)
	term := follower.raft.CurrentTerm()
	leaderAddr, leaderID := follower.raft.LeaderWithID()
	tests := []struct {
		name        string
		term        uint64
		prev        uint64
		prevTerm    uint64
		wantSuccess bool
	}{
		{"an older term", term - 1, index, term - 1, false},
		{"the previous entry of another term", term, index, term + 1, false},
		{"a previous entry not held", term, index + 10, term, false},
		{"the entry held, of the current term", term, index, term, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := follower.raft.AppliedIndex()
			peer := follower.trans.EncodePeer(leaderID, leaderAddr)
			req := &raft.AppendEntriesRequest{
				RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(leaderID), Addr: peer},
				Term:      tt.term, PrevLogEntry: tt.prev, PrevLogTerm: tt.prevTerm, LeaderCommitIndex: tt.prev,
			}
			resp := make(chan raft.RPCResponse, 1)
			follower.trans.out <- raft.RPC{Command: req, RespChan: resp}
			var r raft.RPCResponse
			select {
			case r = <-resp:
			case <-time.After(5 * time.Second):
				t.Fatal("raft did not answer within 5 s")
			}
			ok := r.Error == nil && r.Response.(*raft.AppendEntriesResponse).Success
			if ok != tt.wantSuccess {
				t.Fatalf("success %v (err %v), want %v", ok, r.Error, tt.wantSuccess)
			}
			applied := waitApplied(follower, index, 300*time.Millisecond)
			if !tt.wantSuccess && (applied || follower.raft.AppliedIndex() != before) {
				t.Fatalf("a refused append moved the applied index from %d to %d", before, follower.raft.AppliedIndex())
			}
			if tt.wantSuccess && !applied {
				t.Fatalf("an accepted append did not commit entry %d (applied %d)", index, follower.raft.AppliedIndex())
			}
			if last, _ := follower.logs.LastIndex(); follower.raft.AppliedIndex() > last {
				t.Fatalf("applied %d past the last entry %d", follower.raft.AppliedIndex(), last)
			}
		})
	}
}

// TestHintsWaitForTheirEntry: a hint for an entry the follower does not
// hold yet gives raft nothing, and is given once the entry is stored and
// the hints are told (stored), as the member's log store does.
func TestHintsWaitForTheirEntry(t *testing.T) {
	members := hintCluster(t)
	leader, follower := leaderAndFollower(t, members)
	index := commitOnLeader(t, leader, follower)
	follower.hints.committed(index+1, follower.raft.CurrentTerm()) // not written yet
	if _, ok := follower.hints.request(); ok {
		t.Fatal("a hint was built for an entry the follower does not hold")
	}
	next := commitOnLeader(t, leader, follower)
	follower.hints.committed(next, follower.raft.CurrentTerm()) // the same entry, unless raft appended another in between
	if waitApplied(follower, next, 300*time.Millisecond) {
		t.Fatalf("the follower applied entry %d before its hint was given", next)
	}
	follower.hints.stored()
	if !waitApplied(follower, next, 5*time.Second) {
		t.Fatalf("the follower did not apply entry %d once it was stored (applied %d)", next, follower.raft.AppliedIndex())
	}
}

// TestHintsNeedTheLeadersEntry: a hint names the committed entry by index
// and term, and is given only when the follower holds that very entry.
func TestHintsNeedTheLeadersEntry(t *testing.T) {
	members := hintCluster(t)
	leader, follower := leaderAndFollower(t, members)
	index := commitOnLeader(t, leader, follower)
	term := follower.raft.CurrentTerm()
	follower.hints.committed(index, term+1)
	if _, ok := follower.hints.request(); ok {
		t.Fatal("a hint was built for an entry of another term than the follower holds at that index")
	}
	follower.hints.mu.Lock() // committed never lowers what is wanted
	follower.hints.wanted = entryID{index: index, term: term}
	follower.hints.mu.Unlock()
	if _, ok := follower.hints.request(); !ok {
		t.Fatal("no hint was built for the entry the follower holds with the leader's term")
	}
}

package replication

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// countingFSM counts the command entries raft hands it.
type countingFSM struct{ applied atomic.Int64 }

func (f *countingFSM) Apply(*raft.Log) interface{}         { f.applied.Add(1); return nil }
func (f *countingFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("not supported") }
func (f *countingFSM) Restore(io.ReadCloser) error         { return fmt.Errorf("not supported") }

// startBareRaft starts three hashicorp/raft members on raft's in-memory
// stores and transport, with this package's pipeline refusal and a
// CommitTimeout longer than the test, and returns them with their FSMs
// once one leads.
func startBareRaft(t *testing.T) ([]*raft.Raft, []*countingFSM, int) {
	t.Helper()
	const size = 3
	addrs := make([]raft.ServerAddress, size)
	trans := make([]*raft.InmemTransport, size)
	var conf raft.Configuration
	for i := range size {
		addrs[i], trans[i] = raft.NewInmemTransport("")
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: serverID(int64(i + 1)), Address: addrs[i]})
	}
	for i := range trans {
		for j := range trans {
			if i != j {
				trans[i].Connect(addrs[j], trans[j])
			}
		}
	}
	rafts := make([]*raft.Raft, size)
	fsms := make([]*countingFSM, size)
	for i := range size {
		rc := raft.DefaultConfig()
		rc.LocalID = serverID(int64(i + 1))
		rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
		rc.CommitTimeout = time.Hour
		rc.Logger = newHCLogger(testutil.Logger(t, slog.LevelWarn))
		store := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(rc, store, store, snaps, trans[i], conf); err != nil {
			t.Fatal(err)
		}
		fsms[i] = &countingFSM{}
		r, err := raft.NewRaft(rc, fsms[i], store, store, snaps, noPipeline{trans[i]})
		if err != nil {
			t.Fatal(err)
		}
		rafts[i] = r
		t.Cleanup(func() { r.Shutdown().Error() })
	}
	lead := -1
	testutil.Eventually(t, 10*time.Second, "a leader", func() bool {
		for i, r := range rafts {
			if r.State() == raft.Leader {
				lead = i
				return true
			}
		}
		return false
	})
	return rafts, fsms, lead
}

// TestBarrierCarriesCommitToFollowers pins the hashicorp/raft behaviour the
// leader's nudge (nudge.go) relies on. With CommitTimeout longer than the
// test, a follower whose acknowledgement made a write commit does not
// learn that it committed while no other entry follows (heartbeats carry
// no commit index; the other follower may have: its append can leave
// after the commit), and every follower learns it at once when the leader
// appends a barrier: the append carrying the barrier carries the commit
// index. If a raft upgrade makes followers learn commits without the
// barrier, the first check fails and the nudge may go; if the barrier no
// longer tells them, the second fails and followers would wait for
// CommitTimeout.
func TestBarrierCarriesCommitToFollowers(t *testing.T) {
	rafts, fsms, lead := startBareRaft(t)
	if err := rafts[lead].Apply([]byte("w"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if got := fsms[lead].applied.Load(); got != 1 {
		t.Fatalf("leader applied %d entries, want 1", got)
	}
	time.Sleep(300 * time.Millisecond) // three heartbeat timeouts
	behind := 0
	for i, f := range fsms {
		if i != lead && f.applied.Load() == 0 {
			behind++
		}
	}
	if behind == 0 {
		t.Fatal("every follower applied the write without a later append: raft's followers now learn commits otherwise (revisit nudge.go)")
	}
	if err := rafts[lead].Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	for i, f := range fsms {
		if i == lead {
			continue
		}
		testutil.Eventually(t, 5*time.Second, fmt.Sprintf("member %d applies the write after the barrier", i+1), func() bool {
			return f.applied.Load() == 1
		})
	}
}

// TestIdleLeaderNudgesFollowers: with followers that do not ask for
// commit pushes (older builds), after the last write of a burst, written
// on the leader or through a follower, the leader appends one barrier
// behind it; a follower's sync once that barrier committed appends nothing
// more (the followers know the commit), and the sync still waits for the
// write.
func TestIdleLeaderNudgesFollowers(t *testing.T) {
	c := &testCluster{t: t, cfgHook: func(_ *Config, s *seams) { s.noCommitPush = true }}
	c.startMembers(3, false)
	lead := c.leader()
	follower := (lead + 1) % 3
	tests := []struct {
		name   string
		writer int
	}{
		{"written through a follower", follower},
		{"written on the leader", lead},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ln := c.nodes[lead]
			path := fmt.Sprintf("/nudged%d", i)
			o := await(t, c.nodes[tc.writer].Submit(createTxn(path)))
			if o.Err != nil || o.Result.Err != jute.OK {
				t.Fatalf("write: %+v", o)
			}
			var barrier uint64
			testutil.Eventually(t, 10*time.Second, "a barrier after the write", func() bool {
				barrier = lastOfType(t, ln, raft.LogBarrier)
				return barrier > lastOfType(t, ln, raft.LogCommand) && ln.nudge.covered.Load() >= lastOfType(t, ln, raft.LogCommand)
			})
			last := ln.raft.LastIndex()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.nodes[follower].Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if _, _, code := c.nodes[follower].Tree().GetData(path, nil, nil); code != jute.OK {
				t.Fatalf("%s not applied on member %d after its sync: %v", path, follower+1, code)
			}
			time.Sleep(100 * time.Millisecond)
			if got := ln.raft.LastIndex(); got != last {
				t.Fatalf("the leader's log grew from %d to %d for a sync its last nudge covered", last, got)
			}
		})
	}
}

// lastOfType returns the index of the last entry of type typ in n's log
// (0: none among the last 16).
func lastOfType(t *testing.T, n *Node, typ raft.LogType) uint64 {
	t.Helper()
	last := n.raft.LastIndex()
	for i := last; i > 0 && last-i < 16; i-- {
		var l raft.Log
		if err := n.logs.GetLog(i, &l); err != nil {
			return 0
		}
		if l.Type == typ {
			return i
		}
	}
	return 0
}

// fakeNudged is a raft whose state, log length and barriers the test
// controls; it counts the barriers asked for.
type fakeNudged struct {
	leader   atomic.Bool
	last     atomic.Uint64
	barriers atomic.Int64
	at       atomic.Int64 // when the first barrier was asked for (UnixNano)
}

func (f *fakeNudged) State() raft.RaftState {
	if f.leader.Load() {
		return raft.Leader
	}
	return raft.Follower
}
func (f *fakeNudged) LastIndex() uint64    { return f.last.Load() }
func (f *fakeNudged) AppliedIndex() uint64 { return f.last.Load() }
func (f *fakeNudged) Barrier(time.Duration) raft.Future {
	if f.barriers.Add(1) == 1 {
		f.at.Store(time.Now().UnixNano())
	}
	f.last.Add(1)
	return doneFuture{}
}

type doneFuture struct{}

func (doneFuture) Error() error { return nil }

// stuckNudged is a leader whose barriers never commit (no quorum).
type stuckNudged struct {
	fakeNudged
	release chan struct{} // closed when the test ends
}

func (s *stuckNudged) Barrier(time.Duration) raft.Future {
	s.barriers.Add(1)
	return stuckFuture(s.release)
}

type stuckFuture chan struct{}

func (f stuckFuture) Error() error { <-f; return raft.ErrRaftShutdown }

// TestCommitNudgeStopsWhileABarrierWaits: closing the member ends the
// nudge even though its barrier never completes (Node.Close waits for the
// nudge before it shuts raft down).
func TestCommitNudgeStopsWhileABarrierWaits(t *testing.T) {
	r := &stuckNudged{release: make(chan struct{})}
	defer close(r.release)
	r.leader.Store(true)
	r.last.Store(10)
	c := newCommitNudge()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); c.run(r, time.Second, stop) }()
	c.want(r.LastIndex(), true)
	testutil.Eventually(t, 5*time.Second, "a barrier", func() bool { return r.barriers.Load() == 1 })
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the nudge still waits for its barrier after stop")
	}
}

// TestCommitNudgePolicy: an urgent request gets a barrier at once, a
// non-urgent one after nudgeDelay; none when the log grew after the
// request (a later append carries the commit) or the member does not lead.
func TestCommitNudgePolicy(t *testing.T) {
	tests := []struct {
		name         string
		urgent       bool
		leader       bool
		grow         bool // an entry is appended right after the request
		wantBarriers int64
	}{
		{"urgent", true, true, false, 1},
		{"not urgent", false, true, false, 1},
		{"not urgent, log grew", false, true, true, 0},
		{"not leading", true, false, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeNudged{}
			r.leader.Store(tc.leader)
			r.last.Store(10)
			c := newCommitNudge()
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { defer close(done); c.run(r, time.Second, stop) }()
			defer func() { close(stop); <-done }()
			asked := time.Now()
			c.want(r.LastIndex(), tc.urgent)
			if tc.grow {
				r.last.Add(1)
			}
			if tc.wantBarriers > 0 {
				testutil.Eventually(t, 5*time.Second, "a barrier", func() bool { return r.barriers.Load() == tc.wantBarriers })
				if got := c.covered.Load(); got != 10 {
					t.Fatalf("covered %d, want 10", got)
				}
				if waited := time.Unix(0, r.at.Load()).Sub(asked); !tc.urgent && waited < nudgeDelay {
					t.Fatalf("barrier after %v, before the delay (%v)", waited, nudgeDelay)
				}
			}
			time.Sleep(3 * nudgeDelay)
			if n := r.barriers.Load(); n != tc.wantBarriers {
				t.Fatalf("%d barriers, want %d", n, tc.wantBarriers)
			}
		})
	}
}

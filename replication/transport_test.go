package replication

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// recordingTransport records the appends it is asked to send.
type recordingTransport struct {
	raft.Transport
	mu   sync.Mutex
	sent []sentAppend
	// reply, if set, answers the unpipelined appends.
	reply func(n int, req *raft.AppendEntriesRequest) raft.AppendEntriesResponse
}

type sentAppend struct {
	id  raft.ServerID
	req raft.AppendEntriesRequest
}

func (r *recordingTransport) record(id raft.ServerID, req *raft.AppendEntriesRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, sentAppend{id, *req})
}

func (r *recordingTransport) sentSoFar() []sentAppend {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sentAppend(nil), r.sent...)
}

func (r *recordingTransport) AppendEntries(id raft.ServerID, _ raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	r.record(id, req)
	if r.reply != nil {
		*resp = r.reply(len(r.sentSoFar()), req)
	}
	return nil
}

func (r *recordingTransport) AppendEntriesPipeline(id raft.ServerID, _ raft.ServerAddress) (raft.AppendPipeline, error) {
	return recordingPipeline{r, id}, nil
}

type recordingPipeline struct {
	r  *recordingTransport
	id raft.ServerID
}

func (p recordingPipeline) AppendEntries(req *raft.AppendEntriesRequest, _ *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	p.r.record(p.id, req)
	return nil, nil
}
func (recordingPipeline) Consumer() <-chan raft.AppendFuture { return nil }
func (recordingPipeline) Close() error                       { return nil }

type preVoteTransport struct{ recordingTransport }

func (*preVoteTransport) RequestPreVote(raft.ServerID, raft.ServerAddress, *raft.RequestPreVoteRequest, *raft.RequestPreVoteResponse) error {
	return nil
}

// TestCommitIndexSentIsCappedAtSynced: followers are never told of a
// commit beyond what the leader has on disk. Pipelining is refused, so
// AppendEntries is the only send path.
func TestCommitIndexSentIsCappedAtSynced(t *testing.T) {
	rec := &recordingTransport{}
	trans, _ := newLeaderTransport(rec, func() uint64 { return 7 })
	if _, ok := trans.(raft.WithPreVote); ok {
		t.Fatal("pre-vote offered by a transport that has none")
	}
	if p, err := trans.AppendEntriesPipeline("2", "x"); p != nil || !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("AppendEntriesPipeline = %v, %v; want raft's ErrPipelineReplicationNotSupported", p, err)
	}
	for _, commit := range []uint64{5, 9, 0} {
		trans.AppendEntries("2", "x", &raft.AppendEntriesRequest{LeaderCommitIndex: commit}, &raft.AppendEntriesResponse{})
	}
	want := []uint64{5, 7, 0}
	sent := rec.sentSoFar()
	if len(sent) != len(want) {
		t.Fatalf("sent %d appends, want %d", len(sent), len(want))
	}
	for i, s := range sent {
		if s.req.LeaderCommitIndex != want[i] {
			t.Fatalf("append %d: commit %d, want %d", i, s.req.LeaderCommitIndex, want[i])
		}
	}
	if _, ok := newPreVote(); !ok {
		t.Fatal("pre-vote lost by the wrapper")
	}
}

func newPreVote() (raft.Transport, bool) {
	trans, _ := newLeaderTransport(&preVoteTransport{}, nil)
	_, ok := trans.(raft.WithPreVote)
	return trans, ok
}

// TestAnnounceSendsAnEntrylessAppendCheckedAtTheIndex: an announcement goes
// to every follower raft sent to, with raft's header, no entries, the
// announced entry as the consistency check and as the commit index
// (capped at what is synced), and once per index.
func TestAnnounceSendsAnEntrylessAppendCheckedAtTheIndex(t *testing.T) {
	tests := []struct {
		name              string
		synced            uint64
		index, term, want uint64
	}{
		{"synced past it", 100, 40, 3, 40},
		{"capped at synced", 30, 40, 3, 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingTransport{}
			_, lt := newLeaderTransport(rec, func() uint64 { return tc.synced })
			header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("1"), Addr: []byte("a1")}
			for _, id := range []raft.ServerID{"2", "3"} {
				lt.AppendEntries(id, raft.ServerAddress("a"+id), &raft.AppendEntriesRequest{RPCHeader: header, Term: 3,
					PrevLogEntry: 9, PrevLogTerm: 2, Entries: []*raft.Log{{Index: 10}}, LeaderCommitIndex: 9}, &raft.AppendEntriesResponse{})
			}
			lt.announce(tc.index, tc.term, true)
			lt.announce(tc.index, tc.term, true) // the same index again: not resent
			got := waitSent(t, rec, 4)[2:]
			seen := map[raft.ServerID]bool{}
			for _, s := range got {
				r := s.req
				if r.Term != 3 || string(r.RPCHeader.ID) != "1" || len(r.Entries) != 0 ||
					r.PrevLogEntry != tc.index || r.PrevLogTerm != tc.term || r.LeaderCommitIndex != tc.want {
					t.Fatalf("announcement to %s: %+v", s.id, r)
				}
				seen[s.id] = true
			}
			if !seen["2"] || !seen["3"] {
				t.Fatalf("announced to %v, want 2 and 3", seen)
			}
			time.Sleep(50 * time.Millisecond)
			if n := len(rec.sentSoFar()); n != 4 {
				t.Fatalf("%d appends sent, want 4 (an index is announced once)", n)
			}
		})
	}
}

func waitSent(t *testing.T, rec *recordingTransport, n int) []sentAppend {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%d appends sent", n), func() bool { return len(rec.sentSoFar()) >= n })
	return rec.sentSoFar()
}

// TestCommitsReachFollowersWithoutCommitTimeout: with raft's commit
// timeout made longer than the test, a follower's forwarded writes still
// complete, a write made on the leader still reaches the followers, and the
// leader appends no barrier entry to tell them.
func TestCommitsReachFollowersWithoutCommitTimeout(t *testing.T) {
	c := &testCluster{t: t}
	c.cfgHook = func(cfg *Config) { cfg.commitTimeout = time.Hour }
	c.startMembers(3, false)
	lead := c.leader()
	followers := []int{(lead + 1) % 3, (lead + 2) % 3}
	tests := []struct {
		name   string
		writer int
	}{
		{"written through a follower", followers[0]},
		{"written on the leader", lead},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fmt.Sprintf("/a%d", i)
			before := c.nodes[lead].raft.LastIndex()
			o := await(t, c.nodes[tc.writer].Submit(createTxn(path)))
			if o.Err != nil || o.Result.Err != jute.OK {
				t.Fatalf("write: %+v", o)
			}
			for i := before + 1; i <= c.nodes[lead].raft.LastIndex(); i++ {
				var l raft.Log
				if err := c.nodes[lead].logs.GetLog(i, &l); err != nil {
					t.Fatal(err)
				}
				if l.Type == raft.LogBarrier {
					t.Fatalf("entry %d is a barrier: commits are announced without entries", i)
				}
			}
			for _, f := range followers {
				testutil.Eventually(t, 10*time.Second, fmt.Sprintf("member %d applies %s", f+1, path), func() bool {
					_, _, code := c.nodes[f].Tree().GetData(path, nil, nil)
					return code == jute.OK
				})
			}
		})
	}
}

// TestAnnounceRetriesAFollowerStillStoringTheEntry: a follower that does
// not have the announced entry yet (same term, shorter log) is asked again
// until it has; one in another term is not.
func TestAnnounceRetriesAFollowerStillStoringTheEntry(t *testing.T) {
	tests := []struct {
		name      string
		term      uint64 // the follower's term
		wantSends int    // appends in all: raft's first, then announcements
	}{
		{"behind in the same term", 3, 4},
		{"in a newer term", 4, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingTransport{}
			rec.reply = func(n int, req *raft.AppendEntriesRequest) raft.AppendEntriesResponse {
				// The follower stores entry 10 before the third announcement.
				last := uint64(9)
				if n >= 4 {
					last = 10
				}
				return raft.AppendEntriesResponse{Term: tc.term, LastLog: last, Success: last >= req.PrevLogEntry && tc.term == req.Term}
			}
			_, lt := newLeaderTransport(rec, nil)
			lt.AppendEntries("2", "a2", &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 9}, &raft.AppendEntriesResponse{})
			lt.announce(10, 3, true)
			waitSent(t, rec, tc.wantSends)
			time.Sleep(100 * time.Millisecond) // longer than the retries would take
			if n := len(rec.sentSoFar()); n != tc.wantSends {
				t.Fatalf("%d appends sent, want %d", n, tc.wantSends)
			}
		})
	}
}

// TestOnlyUrgentAnnouncementsSkipTheQueue: an announcement of entries that
// carried only this leader's own writes yields the processor before it is
// sent, so that the replies the same commit readied go first; one that a
// follower's forwarded writes wait for is sent at once, and so is a retry.
func TestOnlyUrgentAnnouncementsSkipTheQueue(t *testing.T) {
	for _, tc := range []struct {
		urgent bool
		want   string
	}{
		{false, "yield announce"},
		{true, "announce"},
	} {
		t.Run(fmt.Sprintf("urgent=%v", tc.urgent), func(t *testing.T) {
			var mu sync.Mutex
			var events []string
			note := func(s string) {
				mu.Lock()
				events = append(events, s)
				mu.Unlock()
			}
			sent := make(chan struct{})
			rec := &recordingTransport{reply: func(_ int, req *raft.AppendEntriesRequest) raft.AppendEntriesResponse {
				if len(req.Entries) == 0 {
					note("announce")
					close(sent)
				}
				return raft.AppendEntriesResponse{Success: true}
			}}
			_, lt := newLeaderTransport(rec, func() uint64 { return 100 })
			lt.yield = func() { note("yield") }
			lt.AppendEntries("2", "a2", &raft.AppendEntriesRequest{Term: 1, Entries: []*raft.Log{{Index: 1}}},
				&raft.AppendEntriesResponse{})
			lt.announce(1, 1, tc.urgent)
			select {
			case <-sent:
			case <-time.After(5 * time.Second):
				t.Fatal("no announcement sent")
			}
			mu.Lock()
			defer mu.Unlock()
			if got := strings.Join(events, " "); got != tc.want {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
		})
	}
}

package replication

import (
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// leaderTransport wraps an ensemble member's raft transport. While the
// member leads it
//   - caps the commit index sent to followers at what the leader has on
//     disk (leadersync.go, rule 3; synced is nil when appends are
//     synchronous), and
//   - can announce a commit index to the followers without a log entry
//     (announce).
//
// It learns the followers, and the header raft sends them, from raft's own
// appends. Its fields are guarded by mu.
type leaderTransport struct {
	raft.Transport
	synced func() uint64

	// yield lets the goroutines a commit readied run before a
	// non-urgent announcement (runtime.Gosched; tests observe it).
	yield func()

	mu    sync.Mutex
	peers map[raft.ServerID]*peerLink
}

// peerLink is what announce needs to address one follower.
type peerLink struct {
	target raft.ServerAddress
	last   raft.AppendEntriesRequest // header fields of raft's latest append to it
	// sending is true while an announcement is on its way; next, when not
	// zero, is the newer one to send after it; done is the highest index
	// announced.
	sending bool
	next    announcement
	done    uint64
}

// announcement is a commit index to announce. urgent means a follower's
// forwarded writes are among the entries, or a follower syncs: that
// follower's clients or watchers wait for it. Otherwise only this leader's
// own clients did, and their replies, readied by the same commit, go
// first.
type announcement struct {
	index, term uint64
	urgent      bool
}

// newLeaderTransport wraps trans; the result has pre-vote when trans has
// it (raft asks the transport's type whether to use pre-votes).
func newLeaderTransport(trans raft.Transport, synced func() uint64) (raft.Transport, *leaderTransport) {
	t := &leaderTransport{Transport: trans, synced: synced, yield: runtime.Gosched, peers: make(map[raft.ServerID]*peerLink)}
	if pv, ok := trans.(raft.WithPreVote); ok {
		return &preVoteLeaderTransport{leaderTransport: t, pv: pv}, t
	}
	return t, t
}

type preVoteLeaderTransport struct {
	*leaderTransport
	pv raft.WithPreVote
}

func (t *preVoteLeaderTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, req *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.pv.RequestPreVote(id, target, req, resp)
}

// capCommit lowers req's commit index to what this leader has on disk
// (leadersync.go, rule 3), when appends are deferred.
func (t *leaderTransport) capCommit(req *raft.AppendEntriesRequest) {
	if t.synced != nil {
		req.LeaderCommitIndex = min(req.LeaderCommitIndex, t.synced())
	}
}

// sending notes an append raft sends to id and caps its commit index.
func (t *leaderTransport) sending(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest) {
	t.capCommit(req)
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[id]
	if p == nil {
		p = &peerLink{}
		t.peers[id] = p
	}
	p.target = target
	p.last = raft.AppendEntriesRequest{RPCHeader: req.RPCHeader, Term: req.Term} // RPCHeader.Addr names the leader
}

func (t *leaderTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	t.sending(id, target, req)
	return t.Transport.AppendEntries(id, target, req, resp)
}

// AppendEntriesPipeline refuses pipelining (raft's documented
// ErrPipelineReplicationNotSupported), so raft replicates with one
// AppendEntries at a time per follower. raft's pipelined replication can
// deadlock when a follower rejects an append while the pipeline is full
// (hashicorp/raft#612): pipelineDecode stops reading responses, the
// transport's decoder blocks handing it the next one, and the next send
// blocks on the full in-flight queue, so that follower never receives
// another entry while heartbeats keep it from calling an election, and
// the leader's Shutdown never returns. A long chaos run hit it after a
// member's links were frozen and thawed.
func (t *leaderTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// Close closes the wrapped transport when it can be closed.
func (t *leaderTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// announce tells every follower raft has sent to that the entries up to
// index are committed. index must be committed (and, with deferred syncs,
// on the leader's disk); term is the term of the entry at index.
//
// raft tells a follower its leader's commit index only with its next
// append, or after its commit timeout when none comes; an idle leader's
// follower would wait that long to apply a write it forwarded. The
// announcement is an append with no entries whose consistency check is
// the entry at index itself (PrevLogEntry/PrevLogTerm): a follower that
// has that entry has the leader's log up to it and commits up to index; one
// that has not rejects it and changes nothing. raft never sees the reply,
// so a rejection costs nothing but the message. Announcements to a
// follower are sent one at a time, the newest of those that arrive
// meanwhile next.
func (t *leaderTransport) announce(index, term uint64, urgent bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, p := range t.peers {
		if index <= max(p.next.index, p.done) {
			continue
		}
		p.next = announcement{index: index, term: term, urgent: urgent || p.next.urgent}
		if !p.sending {
			p.sending = true
			go t.sendAnnouncements(id)
		}
	}
}

// sendAnnouncements sends id's announcements until none is left. A
// follower that has not stored the announced entry yet (its append may
// still be on the way: raft sends on another connection) is asked again
// after a short, growing pause, for about 50 ms at most; a newer
// announcement replaces the one being retried.
func (t *leaderTransport) sendAnnouncements(id raft.ServerID) {
	var a announcement
	backoff := time.Duration(0)
	for {
		if backoff > 0 {
			time.Sleep(backoff)
		}
		t.mu.Lock()
		p := t.peers[id]
		switch {
		case p.next.index > 0:
			a, p.next, backoff = p.next, announcement{}, 0
			p.done = a.index
		case backoff == 0 || backoff > maxAnnounceBackoff:
			p.sending = false
			t.mu.Unlock()
			return
		}
		req, target := p.last, p.target
		t.mu.Unlock()
		if backoff == 0 && !a.urgent {
			t.yield()
		}
		if t.sendAnnouncement(id, target, req, a) {
			backoff = 0
		} else {
			backoff = max(2*backoff, 100*time.Microsecond)
		}
	}
}

// maxAnnounceBackoff bounds the pause between tries of one announcement.
const maxAnnounceBackoff = 25 * time.Millisecond

// sendAnnouncement sends one announcement built on raft's header req and
// reports false when it is worth trying again: the follower is in the same
// term but does not have the entry yet.
func (t *leaderTransport) sendAnnouncement(id raft.ServerID, target raft.ServerAddress, req raft.AppendEntriesRequest, a announcement) bool {
	req.PrevLogEntry, req.PrevLogTerm, req.LeaderCommitIndex = a.index, a.term, a.index
	t.capCommit(&req)
	var resp raft.AppendEntriesResponse
	if err := t.Transport.AppendEntries(id, target, &req, &resp); err != nil {
		return true // best effort: raft's next append carries the commit index
	}
	return resp.Success || resp.Term != req.Term || resp.LastLog >= a.index
}

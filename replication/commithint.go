package replication

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// A follower learns that its forwarded writes are committed from the
// leader's forwarding response (forward.go), which names the entry holding
// them, before raft tells it: hashicorp/raft tells a follower the commit
// index only in its next append that carries entries (the leader's commit
// nudge, nudge.go, appends a barrier for it, which costs another fsync on
// both sides) or after CommitTimeout. commitHints hands raft that
// knowledge at once, as the append raft's own leader would send if it had
// nothing new to send: an AppendEntries request of the leader's term with
// no entries, whose previous entry is the committed one, and whose leader
// commit index is that entry's index.
//
// It is safe because raft checks it as it checks any append (the
// argument, in full, is in docs/architecture.md, "Commit hints"):
//
//   - the request's term is the term of the follower's own entry at that
//     index, and raft ignores a request whose term is older than its
//     current term; so raft acts on it only while that entry's term is
//     the current term, whose one leader wrote the entry. That leader's
//     log holds the same entry at that index, and by raft's log matching
//     every entry before it too;
//   - raft verifies the previous entry (index and term) against its own
//     log before it moves its commit index, exactly as for the leader's
//     appends;
//   - the index is committed: the leader answered the forwarded batch only
//     after raft committed the entry holding it (collectLoop), and a
//     committed entry stays committed in every later term;
//   - raft moves its commit index only forward, and never past its last
//     entry.
//
// The hint is checked against the follower's log before it is handed to
// raft, so that raft logs no mismatch for a hint that cannot apply (the
// entry not stored yet, or from another term). A hint whose entry is not
// stored yet is kept and tried again after the next append the follower
// stores, until raft's own commit or applied index passes it.
//
// The hints reach raft through hintTransport, which stands between raft
// and its network transport and adds them to the requests raft consumes.
type commitHints struct {
	raft  atomic.Pointer[raft.Raft] // the member's raft, once started
	logs  raft.LogStore
	trans raft.Transport // encodes the leader's address

	// mu guards wanted: the highest committed entry heard of, by index
	// and term.
	mu     sync.Mutex
	wanted entryID
	wake   chan struct{} // capacity 1: a hint to look at
	given  atomic.Int64  // hints handed to raft
}

// entryID names a log entry: its index and the term it was written in. By
// raft's log matching, two logs that hold an entry of the same index and
// term hold the same entries up to it.
type entryID struct{ index, term uint64 }

// want returns the wanted entry.
func (h *commitHints) want() entryID {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wanted
}

func newCommitHints(logs raft.LogStore, trans raft.Transport) *commitHints {
	return &commitHints{logs: logs, trans: trans, wake: make(chan struct{}, 1)}
}

// stored is told that the follower stored entries: a wanted hint whose
// entry was missing may now be given.
func (h *commitHints) stored() {
	if r := h.raft.Load(); r != nil && h.want().index > r.AppliedIndex() {
		h.poke()
	}
}

// committed records that the leader committed the entry at index, which
// it holds with term; it never blocks. An entry of a term this member's
// log does not hold at that index is never hinted (request).
func (h *commitHints) committed(index, term uint64) {
	h.mu.Lock()
	if index <= h.wanted.index {
		h.mu.Unlock()
		return
	}
	h.wanted = entryID{index: index, term: term}
	h.mu.Unlock()
	h.poke()
}

// poke asks the transport to look at the wanted hint again (an entry was
// stored, or a hint arrived).
func (h *commitHints) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// request builds the append that hands raft the wanted commit, or reports
// false when there is none to hand: nothing wanted beyond what is
// applied, the entry not stored, or stored with another term than the
// leader's, its term not the current one, or no leader known.
func (h *commitHints) request() (raft.RPC, bool) {
	r := h.raft.Load()
	want := h.want()
	index := want.index
	if r == nil || index == 0 || index <= r.AppliedIndex() {
		return raft.RPC{}, false
	}
	var entry raft.Log
	if err := h.logs.GetLog(index, &entry); err != nil {
		return raft.RPC{}, false
	}
	addr, id := r.LeaderWithID()
	if entry.Term != want.term || entry.Term != r.CurrentTerm() || id == "" {
		return raft.RPC{}, false
	}
	leader := h.trans.EncodePeer(id, addr)
	req := &raft.AppendEntriesRequest{
		RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: leader},
		Term:              entry.Term,
		PrevLogEntry:      index,
		PrevLogTerm:       entry.Term,
		LeaderCommitIndex: index,
	}
	h.given.Add(1)
	return raft.RPC{Command: req, RespChan: make(chan raft.RPCResponse, 1)}, true
}

// hintTransport is raft's network transport with the commit hints added to
// the requests raft consumes. Everything else is the network transport's.
// pump is the one goroutine that feeds raft: it passes each request from
// the network on, and a hint whenever one is wanted and can be given.
type hintTransport struct {
	innerTransport
	hints *commitHints
	out   chan raft.RPC
	quit  chan struct{}
	once  sync.Once
	done  sync.WaitGroup
}

var (
	_ raft.Transport   = (*hintTransport)(nil)
	_ raft.WithClose   = (*hintTransport)(nil)
	_ raft.WithPreVote = (*hintTransport)(nil)
)

// innerTransport is what hintTransport wraps: raft's network transport
// (or, in tests, its in-memory one).
type innerTransport interface {
	raft.Transport
	raft.WithClose
	raft.WithPreVote
}

// newHintTransport wraps trans; start gives it its hints once the log
// store is open (it is made after the transport).
func newHintTransport(trans innerTransport) *hintTransport {
	return &hintTransport{innerTransport: trans, out: make(chan raft.RPC), quit: make(chan struct{})}
}

// start runs the pump with hints; until then raft reads nothing.
func (t *hintTransport) start(hints *commitHints) {
	t.hints = hints
	t.done.Add(1)
	go t.pump()
}

// Consumer implements raft.Transport: the requests for raft.
func (t *hintTransport) Consumer() <-chan raft.RPC { return t.out }

// Close implements raft.WithClose: it stops the pump and closes the
// transport beneath.
func (t *hintTransport) Close() error {
	t.once.Do(func() { close(t.quit) })
	t.done.Wait()
	return t.innerTransport.Close()
}

// pump passes the network's requests to raft, and the hints between them.
func (t *hintTransport) pump() {
	defer t.done.Done()
	in := t.innerTransport.Consumer()
	for {
		select {
		case rpc := <-in:
			if !t.deliver(rpc) {
				return
			}
		case <-t.hints.wake:
			if rpc, ok := t.hints.request(); ok && !t.deliver(rpc) {
				return
			}
		case <-t.quit:
			return
		}
	}
}

// deliver hands rpc to raft, or reports false when the transport closes
// first.
func (t *hintTransport) deliver(rpc raft.RPC) bool {
	select {
	case t.out <- rpc:
		return true
	case <-t.quit:
		return false
	}
}

// startHints gives the member's hint transport its hints over logs, and
// has logs report every append stored, before raft starts.
func (n *Node) startHints(logs raft.LogStore) {
	if n.hintTrans == nil {
		return
	}
	n.hints = newCommitHints(logs, n.hintTrans)
	if rl, ok := logs.(*recentLogs); ok {
		rl.afterStore = n.hints.stored
	}
	n.hintTrans.start(n.hints)
}

// hintCommitted tells a follower's raft that the leader committed the
// entry e (commithint.go); a no-op without hints or when e is unknown.
func (n *Node) hintCommitted(e entryID) {
	if n.hints != nil && e.index > 0 {
		n.hints.committed(e.index, e.term)
	}
}

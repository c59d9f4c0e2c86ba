package replication

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/jute"
)

// Commit pushes tell every follower the leader's commits as the leader
// applies them, for the writes that no client of the follower forwarded:
// the watchers and readers of a follower otherwise wait for the leader's
// commit nudge (nudge.go), whose barrier costs an fsync on every member.
//
// A follower keeps one connection of its own to the leader's forwarding
// port for them and asks, one request at a time, for the first commit
// after the last it heard of (fwdCommits, body: int64 index, int64 the
// follower's server id). The leader
// answers once it has applied an entry past that index, or after
// commitPollWait with what it has, naming its last applied entry by index
// and term (entryID.encode). The follower hands that to its commit hints
// (commithint.go), which give raft the commit only when the follower's own
// log holds that very entry, of that term, in its current term.
//
// While every other member it knows of asks for pushes, the leader asks
// for no nudge but an urgent one (pushers.cover): the pushes tell the
// followers sooner, without the barrier's fsync.
//
// A leader that does not know fwdCommits (an older build, during a rolling
// upgrade) answers fwdFailed; the follower then asks again only after
// commitPushRetry, and the nudge still tells it.
const (
	fwdCommits byte = 6

	// commitPollWait bounds how long a leader holds a commit request when
	// nothing is committed.
	commitPollWait = time.Second
	// commitPushRetry is the pause after a leader refused the request or
	// the connection failed.
	commitPushRetry = 5 * time.Second
	// commitPushIdle is how often a member that has no leader to ask, or
	// leads itself, looks again.
	commitPushIdle = 20 * time.Millisecond
	// pusherTimeout is how long a member that asked for commits counts as
	// asking: a receiver asks again at least every commitPollWait.
	pusherTimeout = 3 * commitPollWait
)

// pushers is the leader's record of the members that ask it for commit
// pushes: when each last asked. mu guards seen.
type pushers struct {
	mu   sync.Mutex
	seen map[raft.ServerID]time.Time
	asks int64 // requests served
}

// asked records a request from member id.
func (p *pushers) asked(id raft.ServerID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asks++
	if p.seen == nil {
		p.seen = make(map[raft.ServerID]time.Time)
	}
	p.seen[id] = time.Now()
}

// cover reports whether every member in others asked within
// pusherTimeout.
func (p *pushers) cover(others []raft.ServerID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, id := range others {
		if at, ok := p.seen[id]; !ok || now.Sub(at) > pusherTimeout {
			return false
		}
	}
	return len(others) > 0
}

// pushesCover reports whether every other member this leader knows of
// receives its commit pushes.
func (n *Node) pushesCover() bool {
	return n.pushers.cover(n.peers.others(serverID(n.cfg.ServerID)))
}

// encode appends the wire form of e: int64 index, int64 term.
func (e entryID) encode(dst []byte) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(dst, e.index), e.term)
}

// decodeEntryID reads an entryID's wire form; ok is false for any other
// length (an older leader's 8-byte index, which names no term).
func decodeEntryID(b []byte) (e entryID, ok bool) {
	if len(b) != 16 {
		return entryID{}, false
	}
	return entryID{index: binary.BigEndian.Uint64(b), term: binary.BigEndian.Uint64(b[8:])}, true
}

// entryAt names this member's log entry at index; zero when the log no
// longer holds it.
func (n *Node) entryAt(index uint64) entryID {
	var l raft.Log
	if index == 0 || n.logs == nil || n.logs.GetLog(index, &l) != nil {
		return entryID{}
	}
	return entryID{index: index, term: l.Term}
}

// nextCommit is the leader's side of a commit request: the returned
// channel reports once this leader has applied an entry past known (or
// commitPollWait passed), and the function then names the last applied
// entry.
func (n *Node) nextCommit(known uint64, from raft.ServerID) (<-chan error, func() []byte) {
	n.pushers.asked(from)
	ch := make(chan error, 1)
	go func() { ch <- n.appliedPast(known, commitPollWait) }()
	return ch, func() []byte {
		index, term := n.applied.last()
		return entryID{index: index, term: term}.encode(nil)
	}
}

// appliedPast waits until the FSM has applied an entry past known, or
// wait passed (nil either way), or the member stops (ErrClosed). It reads
// the FSM's own applied index, which only entries the FSM applies move:
// raft's applied index also counts barriers and no-ops, after which a
// wait for it would return at once with no new entry to name, and the
// follower would ask again at once, round after round.
func (n *Node) appliedPast(known uint64, wait time.Duration) error {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		cur, wake := n.applied.get()
		if cur > known {
			return nil
		}
		select {
		case <-wake:
		case <-timer.C:
			return nil
		case <-n.stop:
			return ErrClosed
		}
	}
}

// pushReceiver is a follower's end of the commit pushes:
// receiveCommitPushes asks the current leader for commits until stop
// closes. Its fields belong to that goroutine, but for conn, which mu
// guards, so that kick can end a request waiting on a leader that no
// longer leads, or on a member that stops.
type pushReceiver struct {
	n       *Node
	mu      sync.Mutex
	conn    net.Conn
	br      *bufio.Reader
	connFor raft.ServerID
	seq     int64
	known   uint64 // the highest commit heard of
}

// receiveCommitPushes runs a follower's pushReceiver until stop closes.
func (n *Node) receiveCommitPushes(p *pushReceiver) {
	defer n.wg.Done()
	defer p.drop()
	go func() { <-n.stop; p.kick() }()
	for {
		wait := p.step()
		if wait == 0 {
			continue
		}
		select {
		case <-n.stop:
			return
		case <-time.After(wait):
		}
	}
}

// step makes one request to the leader and returns how long to pause
// before the next (0: none).
func (p *pushReceiver) step() time.Duration {
	select {
	case <-p.n.stop:
		return commitPushIdle
	default:
	}
	_, leader := p.n.raft.LeaderWithID()
	if leader == "" || p.n.raft.State() != raft.Follower {
		p.drop()
		return commitPushIdle
	}
	if p.connFor != leader {
		p.drop()
		if err := p.dial(leader); err != nil {
			return commitPushRetry
		}
	}
	e, status, err := p.ask()
	switch {
	case err != nil:
		p.n.log.Debug("commit push from leader failed", "leader", leader, "err", err)
		p.drop()
		return commitPushRetry
	case status == fwdNotLeader:
		p.drop()
		return commitPushIdle
	case status != fwdOK:
		p.n.log.Debug("leader does not push commits", "leader", leader)
		p.drop()
		return commitPushRetry
	}
	p.known = max(p.known, e.index)
	p.n.hintCommitted(e)
	return 0
}

// dial opens the push connection to leader.
func (p *pushReceiver) dial(leader raft.ServerID) error {
	addr, ok := p.n.peers.forwardAddr(leader)
	if !ok {
		return fmt.Errorf("replication: leader %s is not in this member's configuration", leader)
	}
	c, err := p.n.network().Dial(addr, p.n.cfg.ForwardTimeout)
	if err != nil {
		return fmt.Errorf("replication: dial leader %s for commits: %w", leader, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.n.stop:
		c.Close()
		return ErrClosed
	default:
	}
	p.conn, p.br, p.connFor = c, bufio.NewReader(c), leader
	return nil
}

// ask sends one commit request and reads its answer.
func (p *pushReceiver) ask() (entryID, byte, error) {
	p.seq++
	frame := make([]byte, 4, 4+1+8+16)
	frame = append(frame, fwdCommits)
	frame = binary.BigEndian.AppendUint64(frame, uint64(p.seq))
	frame = binary.BigEndian.AppendUint64(frame, p.known)
	frame = binary.BigEndian.AppendUint64(frame, uint64(p.n.cfg.ServerID))
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	p.conn.SetDeadline(time.Now().Add(commitPollWait + p.n.cfg.ForwardTimeout))
	if _, err := p.conn.Write(frame); err != nil {
		return entryID{}, 0, err
	}
	reply, err := jute.ReadFrame(p.br, maxForwardFrame, nil)
	if err != nil {
		return entryID{}, 0, err
	}
	if len(reply) < 9 || int64(binary.BigEndian.Uint64(reply)) != p.seq {
		return entryID{}, 0, fmt.Errorf("replication: malformed commit push reply")
	}
	if reply[8] != fwdOK {
		return entryID{}, reply[8], nil
	}
	e, ok := decodeEntryID(reply[9:])
	if !ok {
		return entryID{}, 0, fmt.Errorf("replication: malformed commit push body of %d bytes", len(reply)-9)
	}
	return e, fwdOK, nil
}

// drop closes the push connection, if any.
func (p *pushReceiver) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.conn.Close()
	}
	p.conn, p.br, p.connFor = nil, nil, ""
}

// kick ends the request in progress, if any: the leader changed, or the
// member stops. The receiver's next step starts over.
func (p *pushReceiver) kick() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.conn.Close()
	}
}

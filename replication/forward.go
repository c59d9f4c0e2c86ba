package replication

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/jute"
)

// The forwarding protocol runs on the election port between a member and the
// leader. Frames are length-prefixed:
//
//	request:  int32 len | byte kind | int64 seq | body
//	response: int32 len | int64 seq | byte status | body
//
// Responses come back in request order on a connection, so one connection
// per member keeps that member's writes in submission order.
const (
	// fwdPropose's body is int32 n, n × buffer (encoded txns); its
	// response comes after the commit, naming the entry that holds the
	// last of them: int64 index, int64 term (commitpush.go).
	fwdPropose byte = 1
	fwdSync    byte = 2 // no body; response body: int64 index to apply (syncTarget)
	fwdTouch   byte = 3 // body: int32 n, n × int64 session ids; response immediate

	fwdOK        byte = 0
	fwdNotLeader byte = 1
	fwdFailed    byte = 2

	// maxForwardFrame bounds a forwarding frame (a batch of transactions).
	maxForwardFrame = 64 << 20
)

// Errors of the forwarding path.
var (
	// ErrNoLeader is returned when no leader is known (no quorum).
	ErrNoLeader = errors.New("replication: no leader")
	// errForwardFailed reports that the leader did not commit a batch.
	errForwardFailed = errors.New("replication: leader did not commit forwarded writes")
)

// fwdResult is the outcome of one forwarding request.
type fwdResult struct {
	body []byte
	err  error
}

// fwdFuture adapts a forwarding result to the shape of a raft future.
type fwdFuture struct {
	ch   <-chan fwdResult
	once sync.Once
	res  fwdResult
}

func (f *fwdFuture) Error() error {
	f.once.Do(func() { f.res = <-f.ch })
	return f.res.err
}

// committed names the leader's entry that holds the forwarded batch,
// committed (its response body); zero when unknown. Call after Error.
func (f *fwdFuture) committed() entryID {
	if f.res.err != nil {
		return entryID{}
	}
	e, _ := decodeEntryID(f.res.body)
	return e
}

// forwarder is a follower's connection to the leader. mu guards conn,
// connFor, seq and pending. live mirrors conn and connFor for
// leaderChanged, which must not wait for mu: a call holds mu while it
// writes, and a write to a leader that stopped reading blocks until
// ForwardTimeout.
type forwarder struct {
	n       *Node
	mu      sync.Mutex
	conn    net.Conn
	connFor raft.ServerID
	seq     int64
	pending []pendingCall // in request order
	live    atomic.Pointer[leaderConn]
	// retired is the connection leaderChanged closed on purpose: its
	// failure says nothing about the leader's process, so it is no broken
	// link (a leader that stepped down for a moment and was elected again
	// would otherwise leave this member refusing clients).
	retired atomic.Pointer[net.Conn]
}

// linkBroke records that the connection c to leader id failed, unless
// leaderChanged closed it on purpose.
func (f *forwarder) linkBroke(c net.Conn, id raft.ServerID) {
	if r := f.retired.Load(); r != nil && *r == c {
		return
	}
	f.n.link.broke(id)
}

// leaderConn is a forwarding connection and the leader it goes to.
type leaderConn struct {
	conn   net.Conn
	leader raft.ServerID
}

type pendingCall struct {
	seq int64
	ch  chan fwdResult
}

func newForwarder(n *Node) *forwarder { return &forwarder{n: n} }

// call sends one request to the current leader and returns a channel for
// its response.
func (f *forwarder) call(kind byte, body []byte) <-chan fwdResult {
	ch := make(chan fwdResult, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.ensureConnLocked(); err != nil {
		ch <- fwdResult{err: err}
		return ch
	}
	f.seq++
	frame := make([]byte, 4, 13+len(body))
	frame = append(frame, kind)
	frame = binary.BigEndian.AppendUint64(frame, uint64(f.seq))
	frame = append(frame, body...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	f.conn.SetWriteDeadline(time.Now().Add(f.n.cfg.ForwardTimeout))
	if _, err := f.conn.Write(frame); err != nil {
		f.linkBroke(f.conn, f.connFor)
		f.resetLocked(fmt.Errorf("replication: forward to leader: %w", err))
		ch <- fwdResult{err: err}
		return ch
	}
	f.pending = append(f.pending, pendingCall{seq: f.seq, ch: ch})
	return ch
}

// ensureConnLocked makes sure conn goes to the current leader.
func (f *forwarder) ensureConnLocked() error {
	_, leader := f.n.raft.LeaderWithID()
	if leader == "" {
		f.resetLocked(ErrNoLeader)
		return ErrNoLeader
	}
	if f.conn != nil && f.connFor == leader {
		return nil
	}
	f.resetLocked(fmt.Errorf("replication: leader changed to %s", leader))
	addr, ok := f.n.peers.forwardAddr(leader)
	if !ok {
		return fmt.Errorf("replication: leader %s is not in this member's configuration", leader)
	}
	c, err := f.n.network().Dial(addr, f.n.cfg.ForwardTimeout)
	if err != nil {
		f.n.link.broke(leader)
		return fmt.Errorf("replication: dial leader %s at %s: %w", leader, addr, err)
	}
	f.conn, f.connFor = c, leader
	f.live.Store(&leaderConn{conn: c, leader: leader})
	f.n.link.connected()
	go f.readLoop(c)
	return nil
}

// resetLocked drops the connection and fails every pending call.
func (f *forwarder) resetLocked(err error) {
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
		f.live.Store(nil)
	}
	for _, p := range f.pending {
		p.ch <- fwdResult{err: err}
	}
	f.pending = nil
}

// leaderChanged drops the connection when it goes to a member that no
// longer leads (raft observed another leader, none, or this member), and
// fails the calls waiting on it. Otherwise they would wait until the next
// call noticed the change (ensureConnLocked), and a paused old leader keeps
// the connection open without answering: the collector waits for each
// forwarded entry in order, so this member's writes stopped behind them,
// and on a member that had become the leader itself (which forwards
// nothing more) so did the whole ensemble's, until the old leader woke up.
func (f *forwarder) leaderChanged() {
	l := f.live.Load()
	if l == nil {
		return
	}
	if _, leader := f.n.raft.LeaderWithID(); leader == l.leader {
		return
	}
	f.retired.Store(&l.conn)
	l.conn.Close() // ends a call's write to it at once
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == l.conn {
		f.resetLocked(fmt.Errorf("replication: %s no longer leads", l.leader))
	}
}

// readLoop delivers the responses of one connection in order.
func (f *forwarder) readLoop(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		frame, err := jute.ReadFrame(br, maxForwardFrame, nil)
		if err == nil && len(frame) < 9 {
			err = errors.New("short response")
		}
		f.mu.Lock()
		if f.conn != c {
			f.mu.Unlock()
			return
		}
		if err != nil {
			f.linkBroke(c, f.connFor)
			f.resetLocked(fmt.Errorf("replication: leader connection: %w", err))
			f.mu.Unlock()
			return
		}
		seq := int64(binary.BigEndian.Uint64(frame))
		if len(f.pending) == 0 || f.pending[0].seq != seq {
			f.resetLocked(errors.New("replication: forwarding responses out of order"))
			f.mu.Unlock()
			return
		}
		p := f.pending[0]
		f.pending = f.pending[1:]
		f.mu.Unlock()
		switch frame[8] {
		case fwdOK:
			p.ch <- fwdResult{body: frame[9:]}
		case fwdNotLeader:
			p.ch <- fwdResult{err: ErrNoLeader}
		default:
			p.ch <- fwdResult{err: errForwardFailed}
		}
	}
}

func (f *forwarder) close() {
	f.mu.Lock()
	f.resetLocked(ErrClosed)
	f.mu.Unlock()
}

// serveForwarding accepts member connections on the election port.
func (n *Node) serveForwarding(ln net.Listener) {
	defer n.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.serveForwardConn(c) }()
	}
}

// fwdReply is a response waiting for its turn on a connection.
type fwdReply struct {
	seq    int64
	wait   <-chan error // nil: ready now
	status byte
	body   []byte
	// position, if set, makes the body once wait has reported success.
	position func() []byte
}

// serveForwardConn handles one member's requests: proposals go into this
// leader's batcher in arrival order; replies leave in the same order.
func (n *Node) serveForwardConn(c net.Conn) {
	defer c.Close()
	if !n.trackForwardConn(c, true) {
		return
	}
	defer n.trackForwardConn(c, false)
	replies := make(chan fwdReply, 1024)
	done := make(chan struct{})
	go func() { defer close(done); n.writeForwardReplies(c, replies) }()
	defer func() { close(replies); <-done }()
	br := bufio.NewReaderSize(c, 64<<10)
	for {
		frame, err := jute.ReadFrame(br, maxForwardFrame, nil)
		if err != nil || len(frame) < 9 {
			return
		}
		kind, seq, body := frame[0], int64(binary.BigEndian.Uint64(frame[1:])), frame[9:]
		select {
		case replies <- n.handleForward(kind, seq, body):
		case <-n.stop:
			return
		}
	}
}

func (n *Node) handleForward(kind byte, seq int64, body []byte) fwdReply {
	r := fwdReply{seq: seq}
	switch kind {
	case fwdTouch:
		ids, err := decodeIDs(body)
		if err == nil && n.cfg.OnTouch != nil {
			n.cfg.OnTouch(ids)
		}
		return r
	case fwdSync:
		if !n.IsLeader() {
			r.status = fwdNotLeader
			return r
		}
		last := n.raft.LastIndex()
		target := n.syncTarget(last)
		r.body = binary.BigEndian.AppendUint64(nil, target)
		r.wait = n.appliedBy(last, target)
		return r
	case fwdStatus:
		r.body = n.status().encode()
		return r
	case fwdReconfig:
		if !n.IsLeader() {
			r.status = fwdNotLeader
			return r
		}
		r.wait = n.handleReconfig(body)
		return r
	case fwdCommits:
		if !n.IsLeader() {
			r.status = fwdNotLeader
			return r
		}
		if len(body) != 16 {
			r.status = fwdFailed
			return r
		}
		from := serverID(int64(binary.BigEndian.Uint64(body[8:])))
		r.wait, r.position = n.nextCommit(binary.BigEndian.Uint64(body), from)
		return r
	case fwdPropose:
		if !n.IsLeader() {
			r.status = fwdNotLeader
			return r
		}
		txns, err := decodeBatch(body)
		if err != nil {
			n.log.Warn("bad forwarded batch", "err", err)
			r.status = fwdFailed
			return r
		}
		r.wait, r.position = n.enqueueForwarded(txns)
		return r
	}
	r.status = fwdFailed
	return r
}

// appliedBy reports on the returned channel when this leader has applied
// index (within ForwardTimeout): a sync reply names only committed entries,
// which the syncing follower then waits to apply itself. Unless a nudge
// since told the followers that target is committed, it asks for one
// (nudge.go), so the follower need not wait for raft's CommitTimeout.
func (n *Node) appliedBy(index, target uint64) <-chan error {
	ch := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ForwardTimeout)
		defer cancel()
		err := n.WaitApplied(ctx, index)
		if err == nil && !n.pushesCover() {
			n.nudge.wantUnless(target, n.raft.LastIndex())
		}
		ch <- err
	}()
	return ch
}

// syncTarget returns the index a syncing follower must apply to have
// everything the leader's log holds up to last: the last command entry at
// or before last. Barrier, no-op and configuration entries change no FSM
// state, and the follower would learn their commit only from a later
// append. It looks back a few entries and returns last when it finds no
// command entry there.
func (n *Node) syncTarget(last uint64) uint64 {
	for i := last; i > 0 && last-i < maxSyncLookBack; i-- {
		var l raft.Log
		if err := n.logs.GetLog(i, &l); err != nil {
			break
		}
		if l.Type == raft.LogCommand {
			return i
		}
	}
	return last
}

// maxSyncLookBack bounds syncTarget's look back: an idle leader appends one
// barrier after its last writes, and a new leader a no-op.
const maxSyncLookBack = 8

func (n *Node) writeForwardReplies(c net.Conn, replies <-chan fwdReply) {
	bw := bufio.NewWriter(c)
	for r := range replies {
		if r.wait != nil {
			if err := <-r.wait; err != nil {
				r.status = fwdFailed
			} else if r.position != nil {
				r.body = r.position()
			}
		}
		frame := make([]byte, 4, 13+len(r.body))
		frame = binary.BigEndian.AppendUint64(frame, uint64(r.seq))
		frame = append(frame, r.status)
		frame = append(frame, r.body...)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		bw.Write(frame)
		if len(replies) == 0 {
			c.SetWriteDeadline(time.Now().Add(n.cfg.ForwardTimeout))
			if bw.Flush() != nil {
				return
			}
		}
	}
}

// encodeBatch / decodeBatch frame a list of encoded transactions: a jute
// int count, then each transaction as a jute buffer. encodeBatch encodes
// every transaction in place, into one buffer sized from the proposals'
// estimates.
func encodeBatch(batch []proposal) []byte {
	size := 4
	for i := range batch {
		size += 4 + batch[i].size
	}
	b := binary.BigEndian.AppendUint32(make([]byte, 0, size), uint32(len(batch)))
	for i := range batch {
		at := len(b)
		b = batch[i].appendTo(append(b, 0, 0, 0, 0))
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	return b
}

func decodeBatch(b []byte) ([][]byte, error) {
	d := jute.NewDecoder(b)
	n := int(d.Int())
	if n < 0 || n > d.Remaining()/4 {
		return nil, fmt.Errorf("bad batch count %d", n)
	}
	out := make([][]byte, 0, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		txn := d.Buffer()
		if len(txn) == 0 && d.Err() == nil {
			// No encoded transaction is empty, and a null one would
			// reach the batcher as a local proposal without a
			// transaction.
			return nil, fmt.Errorf("empty transaction %d of %d in batch", i, n)
		}
		out = append(out, txn)
	}
	return out, d.Finish(true)
}

func encodeIDs(ids []int64) []byte {
	e := jute.NewEncoder(nil)
	e.Int(int32(len(ids)))
	for _, id := range ids {
		e.Long(id)
	}
	return e.Bytes()
}

func decodeIDs(b []byte) ([]int64, error) {
	d := jute.NewDecoder(b)
	n := int(d.Int())
	if n < 0 || n > d.Remaining()/8 {
		return nil, fmt.Errorf("bad id count %d", n)
	}
	out := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, d.Long())
	}
	return out, d.Finish(true)
}

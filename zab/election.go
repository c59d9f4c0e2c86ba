package zab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// elector finds the leader through the voters' election ports, as a
// looking observer's FastLeaderElection does: it sends each voter a
// LOOKING notification proposing nobody, and the voters, which do not
// count an observer's vote, answer at once with their own (FOLLOWING or
// LEADING) vote.
//
// QuorumCnxManager keeps one connection per pair of members, and the
// larger sid keeps the one it opened: a voter with a larger sid than ours
// closes our connection and dials our election address instead. So the
// elector listens there too, and sends its current notification on every
// connection a larger-sid voter opens.
//
// mu guards conns, view and current; the listener and one reader per
// connection run in their own goroutines and hand messages to notes.
type elector struct {
	electorConfig

	ln    net.Listener // nil when there is no election address to listen on
	notes chan vote
	done  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	conns   map[int64]net.Conn
	view    View
	current []byte // the notification sent to new connections, framed; nil when not looking
	clock   int64
	warned  map[string]time.Time // when a refusal was last logged at warn, by peer and reason
}

// electorConfig is what the elector is given.
type electorConfig struct {
	myID        int64
	listenAddr  string // where to listen ("": nowhere)
	announce    string // our election address as we announce it
	dialTimeout time.Duration
	network     Network
	auth        *QuorumAuth // nil: no quorum SASL
	log         *slog.Logger
}

// vote is one notification and the sid of the member that sent it.
type vote struct {
	from int64
	n    *Notification
}

func newElector(cfg electorConfig, view View) (*elector, error) {
	if cfg.network == nil {
		cfg.network = tcpNetwork{}
	}
	e := &elector{
		electorConfig: cfg,
		notes:         make(chan vote, 256), done: make(chan struct{}),
		conns: make(map[int64]net.Conn), view: view, warned: make(map[string]time.Time),
	}
	if cfg.listenAddr != "" {
		ln, err := cfg.network.Listen(cfg.listenAddr)
		if err != nil {
			return nil, fmt.Errorf("zab: listen on election address %s: %w", cfg.listenAddr, err)
		}
		e.ln = ln
		e.wg.Add(1)
		go e.accept()
	}
	return e, nil
}

// close stops the listener and every connection and waits for the
// goroutines.
func (e *elector) close() {
	close(e.done)
	if e.ln != nil {
		e.ln.Close()
	}
	e.mu.Lock()
	for sid, c := range e.conns {
		c.Close()
		delete(e.conns, sid)
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// View returns the configuration the elector works from: the one it was
// given, or a later one a voter sent.
func (e *elector) View() View {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.view
}

// learnView adopts v if it is later than the elector's.
func (e *elector) learnView(v View) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v.Version > e.view.Version {
		e.log.Info("zab: adopting a later configuration", "version", fmt.Sprintf("0x%x", v.Version), "servers", len(v.Servers))
		e.view = v
	}
}

func (e *elector) accept() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			select {
			case <-e.done:
			default:
				e.log.Warn("zab: election listener stopped", "err", err)
			}
			return
		}
		e.wg.Add(1)
		go e.handleIncoming(c)
	}
}

// handleIncoming reads a connecting member's opening. A larger sid keeps
// its connection (we would lose the challenge), so it becomes that
// member's connection; a smaller one is closed, as QuorumCnxManager does
// (we dial it ourselves when we look).
func (e *elector) handleIncoming(c net.Conn) {
	defer e.wg.Done()
	c.SetDeadline(time.Now().Add(max(5*time.Second, e.dialTimeout)))
	br := bufio.NewReader(c)
	m, err := ReadInitialMessage(br)
	if err != nil {
		e.log.Warn("zab: bad election connection", "remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	// ZooKeeper checks the login before the sids, whoever keeps the
	// connection.
	peer := fmt.Sprintf("voter %d at %s", m.SID, c.RemoteAddr())
	user, err := e.auth.check(c, br, peer)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// It redialled us meanwhile, or gave up: nothing to refuse.
		e.log.Debug("zab: election connection closed before its login", "sid", m.SID, "err", err)
		c.Close()
		return
	}
	if err != nil {
		e.warnLimited(fmt.Sprintf("voter %d", m.SID), "zab: refused an election connection", "sid", m.SID, "remote", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	if user != "" {
		e.log.Debug("zab: voter logged in", "sid", m.SID, "user", user)
	}
	c.SetDeadline(time.Time{})
	if m.SID <= e.myID {
		e.log.Debug("zab: closing election connection from a smaller sid", "sid", m.SID)
		c.Close()
		return
	}
	if !e.install(m.SID, c) {
		return
	}
	e.log.Debug("zab: election connection from voter", "sid", m.SID)
	e.read(m.SID, c, br)
}

// install makes c the connection to sid, closing any earlier one, and
// sends the current notification on it. It reports false if the elector
// is closed.
func (e *elector) install(sid int64, c net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.done:
		c.Close()
		return false
	default:
	}
	if old := e.conns[sid]; old != nil {
		old.Close()
	}
	e.conns[sid] = c
	if e.current != nil {
		c.SetWriteDeadline(time.Now().Add(e.dialTimeout))
		if _, err := c.Write(e.current); err != nil {
			e.log.Debug("zab: election send failed", "sid", sid, "err", err)
		}
	}
	return true
}

// read hands sid's notifications to notes until the connection ends.
func (e *elector) read(sid int64, c net.Conn, br *bufio.Reader) {
	defer func() {
		c.Close()
		e.mu.Lock()
		if e.conns[sid] == c {
			delete(e.conns, sid)
		}
		e.mu.Unlock()
	}()
	for {
		body, err := readElectionMessage(br)
		if err != nil {
			return
		}
		n, err := DecodeNotification(body)
		if err != nil {
			e.log.Warn("zab: dropping election message", "sid", sid, "err", err)
			continue
		}
		select {
		case e.notes <- vote{from: sid, n: n}:
		case <-e.done:
			return
		default:
			// nobody is looking and the queue is full: drop it
		}
	}
}

// dial opens a connection to voter s and sends the opening and the
// current notification. A voter with a larger sid closes it and dials us.
func (e *elector) dial(s Server) {
	defer e.wg.Done()
	c, err := e.network.Dial(s.ElectionAddr, e.dialTimeout)
	if err != nil {
		e.log.Debug("zab: cannot reach voter's election port", "sid", s.ID, "addr", s.ElectionAddr, "err", err)
		return
	}
	open := (&InitialMessage{Protocol: ProtocolV1, SID: e.myID, Addr: e.announce}).Encode()
	c.SetDeadline(time.Now().Add(e.dialTimeout))
	if _, err := c.Write(open); err != nil {
		c.Close()
		return
	}
	br := bufio.NewReader(c)
	peer := fmt.Sprintf("voter %d at %s", s.ID, s.ElectionAddr)
	if err := e.auth.login(c, br, peer); err != nil {
		e.warnLimited(peer, "zab: election connection refused", "sid", s.ID, "addr", s.ElectionAddr, "err", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	if s.ID > e.myID {
		// It drops this connection and opens its own to our listener.
		c.SetReadDeadline(time.Now().Add(e.dialTimeout))
		io.Copy(io.Discard, c)
		c.Close()
		return
	}
	if !e.install(s.ID, c) {
		return
	}
	e.read(s.ID, c, br)
}

// refusalLogInterval is how often the same refusal is logged at warn:
// the elector redials every voter at each round of notifications.
const refusalLogInterval = 10 * time.Second

// warnLimited logs msg at warn, or at debug when the same peer had the
// same error logged at warn less than refusalLogInterval ago.
func (e *elector) warnLimited(peer, msg string, args ...any) {
	key := peer + "\x00" + fmt.Sprint(args[len(args)-1])
	now := time.Now()
	e.mu.Lock()
	last, seen := e.warned[key]
	quiet := seen && now.Sub(last) < refusalLogInterval
	if !quiet {
		for k, t := range e.warned {
			if now.Sub(t) >= refusalLogInterval {
				delete(e.warned, k)
			}
		}
		e.warned[key] = now
	}
	e.mu.Unlock()
	if quiet {
		e.log.Debug(msg, args...)
		return
	}
	e.log.Warn(msg, args...)
}

// ErrNoLeader is reported when the voters did not agree on a leader in
// time.
var ErrNoLeader = errors.New("zab: no leader found")

// findLeader looks for the leader until ctx ends: it notifies every voter,
// then waits for their votes, re-notifying with a doubling interval (200
// ms up to maxWait, as FastLeaderElection's notification timeout). The
// leader is decided as FastLeaderElection decides it for an observer: a
// quorum of the voters reports the same leader and peer epoch, and the
// leader itself reports LEADING in that epoch.
func (e *elector) findLeader(ctx context.Context, maxWait time.Duration) (Server, int64, error) {
	for {
		select {
		case <-e.notes: // stale votes of an earlier search
			continue
		default:
		}
		break
	}
	votes := make(map[int64]*Notification)
	wait := 200 * time.Millisecond
	defer e.stopLooking()
	for {
		e.notifyAll()
		timer := time.NewTimer(wait)
	collect:
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return Server{}, 0, fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
			case <-timer.C:
				break collect
			case v := <-e.notes:
				if v.n.Version > 1 && len(v.n.Config) > 0 {
					if view, err := ParseView(string(v.n.Config)); err == nil {
						e.learnView(view)
					}
				}
				votes[v.from] = v.n
				if s, epoch, ok := decide(e.View(), votes); ok {
					timer.Stop()
					return s, epoch, nil
				}
			}
		}
		wait = min(2*wait, maxWait)
	}
}

// notifyAll starts a new round: a LOOKING notification to every voter,
// over the connections it has and new ones to the voters it has none to.
func (e *elector) notifyAll() {
	e.mu.Lock()
	e.clock++
	n := &Notification{State: Looking, Leader: ObserverVote, Zxid: ObserverVote,
		ElectionEpoch: e.clock, PeerEpoch: ObserverVote, Version: 1}
	e.current = electionFrame(n.Encode())
	var toDial []Server
	for _, s := range e.view.Voters() {
		if s.ID == e.myID {
			continue
		}
		if c := e.conns[s.ID]; c != nil {
			c.SetWriteDeadline(time.Now().Add(e.dialTimeout))
			if _, err := c.Write(e.current); err == nil {
				continue
			}
			c.Close()
			delete(e.conns, s.ID)
		}
		toDial = append(toDial, s)
	}
	e.mu.Unlock()
	for _, s := range toDial {
		e.wg.Add(1)
		go e.dial(s)
	}
}

func (e *elector) stopLooking() {
	e.mu.Lock()
	e.current = nil
	e.mu.Unlock()
}

// decide returns the leader a quorum of view's voters follows, if the
// leader's own vote says LEADING in the same epoch.
func decide(view View, votes map[int64]*Notification) (Server, int64, bool) {
	voters := view.Voters()
	type key struct{ leader, epoch int64 }
	count := make(map[key]int)
	for _, s := range voters {
		n := votes[s.ID]
		if n == nil || (n.State != Following && n.State != Leading) {
			continue
		}
		count[key{n.Leader, n.PeerEpoch}]++
	}
	for k, c := range count {
		if 2*c <= len(voters) {
			continue
		}
		own := votes[k.leader]
		if own == nil || own.State != Leading || own.PeerEpoch != k.epoch || own.Leader != k.leader {
			continue
		}
		if s, ok := view.Server(k.leader); ok && !s.Observer {
			return s, k.epoch, true
		}
	}
	return Server{}, 0, false
}

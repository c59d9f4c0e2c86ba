package zab

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// Config configures an Observer.
type Config struct {
	// MyID is the observer's sid: the N of its server.N line in the
	// ensemble's configuration (with the observer role).
	MyID int64
	// Servers are the ensemble's members as its configuration lists them,
	// the observer's own line included (its election address is where the
	// voters with a larger sid connect). A later configuration a voter
	// sends, or a reconfig the leader activates, replaces it.
	Servers []Server
	// Handler receives the state. Required.
	Handler Handler
	// Logger gets the protocol's events (nil: none).
	Logger *slog.Logger
	// DialTimeout bounds each connection attempt (default 2s).
	DialTimeout time.Duration
	// InitTimeout bounds each read until the sync with the leader ends
	// (ZooKeeper: initLimit × tickTime; default 30s).
	InitTimeout time.Duration
	// SyncTimeout bounds each read after it (syncLimit × tickTime; the
	// leader pings every half tick; default 10s).
	SyncTimeout time.Duration
	// ElectionWait is the longest wait between two rounds of election
	// notifications (default 2s); FindTimeout bounds a whole search for
	// the leader before the observer backs off and tries again (default
	// 30s).
	ElectionWait, FindTimeout time.Duration
	// MaxBackoff is the longest pause between two attempts (default 5s;
	// the pause starts at 100 ms and doubles).
	MaxBackoff time.Duration
	// Limits bound the packets read from the leader.
	Limits Limits
	// Network opens the connections (nil: plain TCP); set one that runs
	// TLS for an ensemble with sslQuorum=true.
	Network Network
	// Auth, when set, runs the quorum SASL login on the connections, for
	// an ensemble with quorum.auth.enableSasl=true.
	Auth *QuorumAuth
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.DialTimeout, 2*time.Second)
	def(&c.InitTimeout, 30*time.Second)
	def(&c.SyncTimeout, 10*time.Second)
	def(&c.ElectionWait, 2*time.Second)
	def(&c.FindTimeout, 30*time.Second)
	def(&c.MaxBackoff, 5*time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Network == nil {
		c.Network = tcpNetwork{}
	}
}

// Errors of the client-work methods.
var (
	// ErrNotServing: the observer is not synced with a leader now.
	ErrNotServing = errors.New("zab: not synced with a leader")
	// ErrClosed: Close was called.
	ErrClosed = errors.New("zab: observer closed")
	// ErrDisconnected: the leader connection ended before the answer came.
	ErrDisconnected = errors.New("zab: leader connection lost")
)

// Observer follows a ZooKeeper ensemble's leader as an observer. Start
// one with Start; it finds the leader, syncs, and then applies every
// committed transaction through its Handler until Close, reconnecting
// (and finding the leader again) whenever the leader connection ends.
//
// The run goroutine owns the Handler and the sync state; mu guards the
// current leader connection (link), the pending answers and the touch
// table, which the client-work methods use from other goroutines.
type Observer struct {
	cfg  Config
	log  *slog.Logger
	el   *elector
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}

	closeOnce sync.Once

	mu      sync.Mutex
	link    *link // the synced leader connection, nil when there is none
	touches map[int64]int32
	err     error // the fatal error that stopped the observer

	upToDate chan struct{} // replaced after each UPTODATE; see WaitUpToDate
	stats    stats
}

// stats counts what the observer did, for tests and metrics.
type stats struct {
	syncs, diffs, snaps, truncs, txns atomic.Int64
}

// Stats is a snapshot of the observer's counters.
type Stats struct {
	Syncs  int64 // syncs completed (UPTODATE received)
	Diffs  int64 // syncs begun by DIFF
	Snaps  int64 // by SNAP
	Truncs int64 // by TRUNC
	Txns   int64 // transactions handed to Handler.Txn
}

// Stats returns the observer's counters.
func (o *Observer) Stats() Stats {
	return Stats{Syncs: o.stats.syncs.Load(), Diffs: o.stats.diffs.Load(), Snaps: o.stats.snaps.Load(),
		Truncs: o.stats.truncs.Load(), Txns: o.stats.txns.Load()}
}

// link is one connection to the leader. wmu serializes writes.
type link struct {
	leader Server
	conn   net.Conn
	wmu    sync.Mutex
	bw     *bufio.Writer

	// guarded by Observer.mu
	serving      bool
	pendingSyncs []chan error
	revalidates  map[int64][]chan bool
}

// Start validates cfg, opens the election listener and starts following
// the ensemble.
func Start(cfg Config) (*Observer, error) {
	cfg.setDefaults()
	if cfg.Handler == nil {
		return nil, errors.New("zab: Config.Handler is required")
	}
	view := View{Servers: cfg.Servers}
	me, ok := view.Server(cfg.MyID)
	if !ok {
		return nil, fmt.Errorf("zab: sid %d has no line among Config.Servers", cfg.MyID)
	}
	if !me.Observer {
		return nil, fmt.Errorf("zab: server.%d is not an observer line", cfg.MyID)
	}
	if len(view.Voters()) == 0 {
		return nil, errors.New("zab: Config.Servers lists no voter")
	}
	if cfg.Auth != nil && cfg.Auth.Server == nil {
		return nil, errors.New("zab: Config.Auth.Server is required")
	}
	el, err := newElector(electorConfig{myID: cfg.MyID, listenAddr: me.ElectionAddr, announce: me.ElectionAddr,
		dialTimeout: cfg.DialTimeout, network: cfg.Network, auth: cfg.Auth, log: cfg.Logger}, view)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Observer{
		cfg: cfg, log: cfg.Logger.With("sid", cfg.MyID), el: el, ctx: ctx, stop: cancel,
		done: make(chan struct{}), touches: make(map[int64]int32), upToDate: make(chan struct{}),
	}
	go o.run()
	return o, nil
}

// Close stops the observer: the election listener, the leader
// connection, and the run goroutine, and waits for them. Later calls do
// nothing.
func (o *Observer) Close() error {
	o.closeOnce.Do(o.close)
	return nil
}

func (o *Observer) close() {
	o.stop()
	o.mu.Lock()
	if o.link != nil {
		o.link.conn.Close()
	}
	o.mu.Unlock()
	<-o.done
	o.el.close()
}

// Done is closed when the observer has stopped, by Close or by a fatal
// Handler error (see Err).
func (o *Observer) Done() <-chan struct{} { return o.done }

// Err returns the fatal error that stopped the observer: a Txn or
// Snapshot error of the Handler, or a snapshot whose signature did not
// follow where the Handler stopped reading. It is nil while running and
// after Close.
func (o *Observer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Leader returns the sid of the leader the observer is synced with.
func (o *Observer) Leader() (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.link == nil || !o.link.serving {
		return 0, false
	}
	return o.link.leader.ID, true
}

// WaitUpToDate returns once the observer is synced with a leader (at
// once if it is now), or with ctx's error.
func (o *Observer) WaitUpToDate(ctx context.Context) error {
	for {
		o.mu.Lock()
		ok := o.link != nil && o.link.serving
		ch := o.upToDate
		o.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-o.done:
			return ErrClosed
		}
	}
}

// run finds the leader and follows it, again and again, until Close or a
// fatal error.
func (o *Observer) run() {
	defer close(o.done)
	backoff := 100 * time.Millisecond
	st := &syncState{}
	for o.ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(o.ctx, o.cfg.FindTimeout)
		leader, epoch, err := o.el.findLeader(fctx, o.cfg.ElectionWait)
		cancel()
		if err == nil {
			o.log.Info("zab: found the leader", "leader", leader.ID, "epoch", epoch, "addr", leader.Addr)
			synced, err := o.follow(leader, st)
			var fatal *fatalError
			if errors.As(err, &fatal) {
				o.log.Error("zab: observer stopped", "err", fatal.err)
				o.mu.Lock()
				o.err = fatal.err
				o.mu.Unlock()
				return
			}
			if o.ctx.Err() != nil {
				return
			}
			o.log.Warn("zab: leader connection ended", "leader", leader.ID, "err", err)
			if synced {
				backoff = 100 * time.Millisecond
			}
		} else if o.ctx.Err() == nil {
			o.log.Warn("zab: looking for the leader", "err", err)
		}
		select {
		case <-o.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, o.cfg.MaxBackoff)
	}
}

// fatalError wraps an error that stops the observer for good.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }

// syncState is what the run goroutine keeps across leader connections.
type syncState struct {
	known         bool  // the epochs below are set
	acceptedEpoch int64 // the last epoch a leader proposed to us
	currentEpoch  int64 // the epoch of the last leader we synced with
	presentZero   bool  // the Handler could not truncate: ask for a SNAP
}

// deadlineConn gives every Read a fresh deadline, as a Java socket's
// SO_TIMEOUT does.
type deadlineConn struct {
	net.Conn
	timeout atomic.Int64
}

func (d *deadlineConn) Read(p []byte) (int, error) {
	d.Conn.SetReadDeadline(time.Now().Add(time.Duration(d.timeout.Load())))
	return d.Conn.Read(p)
}

// follow connects to leader, registers, syncs and then applies what the
// leader sends until the connection ends. synced reports whether it got
// as far as UPTODATE.
func (o *Observer) follow(leader Server, st *syncState) (synced bool, err error) {
	raw, err := o.cfg.Network.Dial(leader.Addr, o.cfg.DialTimeout)
	if err != nil {
		return false, fmt.Errorf("zab: dial leader %d at %s: %w", leader.ID, leader.Addr, err)
	}
	conn := &deadlineConn{Conn: raw}
	conn.timeout.Store(int64(o.cfg.InitTimeout))
	l := &link{leader: leader, conn: raw, bw: bufio.NewWriter(raw), revalidates: make(map[int64][]chan bool)}
	o.mu.Lock()
	if o.ctx.Err() != nil {
		o.mu.Unlock()
		raw.Close()
		return false, ErrClosed
	}
	o.link = l
	o.mu.Unlock()
	defer o.dropLink(l)
	br := bufio.NewReaderSize(conn, 64<<10)
	raw.SetWriteDeadline(time.Now().Add(o.cfg.InitTimeout))
	if err := o.cfg.Auth.login(raw, br, fmt.Sprintf("leader %d at %s", leader.ID, leader.Addr)); err != nil {
		return false, err
	}
	s := &session{o: o, l: l, br: br, conn: conn, st: st}
	if err := s.register(); err != nil {
		return false, err
	}
	if err := s.sync(); err != nil {
		return false, err
	}
	return true, s.serve()
}

// dropLink closes l and fails what waits on it.
func (o *Observer) dropLink(l *link) {
	l.conn.Close()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.link == l {
		o.link = nil
	}
	for _, ch := range l.pendingSyncs {
		ch <- ErrDisconnected
	}
	l.pendingSyncs = nil
	for id, chs := range l.revalidates {
		for _, ch := range chs {
			close(ch)
		}
		delete(l.revalidates, id)
	}
	l.serving = false
}

// session is one registration with a leader, driven by the run goroutine.
type session struct {
	o    *Observer
	l    *link
	br   *bufio.Reader
	conn *deadlineConn
	st   *syncState

	newEpoch    int64
	lastApplied int64     // the zxid the Handler's state is at
	proposals   []*Packet // PROPOSALs of the sync awaiting their COMMIT
}

func (s *session) read() (*Packet, error) {
	p, err := ReadPacket(s.br, s.o.cfg.Limits)
	if err != nil {
		return nil, fmt.Errorf("zab: read from leader %d: %w", s.l.leader.ID, err)
	}
	return p, nil
}

func (s *session) write(p *Packet) error { return s.o.writeTo(s.l, p) }

// writeTo sends p to the leader over l and flushes.
func (o *Observer) writeTo(l *link, p *Packet) error { return o.send(l, p, nil) }

// send runs before (if any) and then writes p, both under l's write lock.
func (o *Observer) send(l *link, p *Packet, before func()) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if before != nil {
		before()
	}
	l.conn.SetWriteDeadline(time.Now().Add(o.cfg.SyncTimeout))
	var e jute.Encoder
	p.Encode(&e)
	if _, err := l.bw.Write(e.Bytes()); err != nil {
		return fmt.Errorf("zab: write %s: %w", p.Type, err)
	}
	if err := l.bw.Flush(); err != nil {
		return fmt.Errorf("zab: write %s: %w", p.Type, err)
	}
	return nil
}

// register sends OBSERVERINFO, reads LEADERINFO and answers ACKEPOCH, as
// Learner.registerWithLeader does.
func (s *session) register() error {
	h := s.o.cfg.Handler
	last := h.LastZxid()
	if s.st.presentZero {
		last = 0
	}
	if !s.st.known {
		s.st.acceptedEpoch, s.st.currentEpoch, s.st.known = Epoch(last), Epoch(last), true
	}
	li := LearnerInfo{ServerID: s.o.cfg.MyID, ProtocolVersion: ProtocolVersion, ConfigVersion: s.o.el.View().Version}
	var e jute.Encoder
	li.Encode(&e)
	if err := s.write(&Packet{Type: ObserverInfo, Zxid: MakeZxid(s.st.acceptedEpoch, 0), Data: e.Bytes()}); err != nil {
		return err
	}
	p, err := s.read()
	if err != nil {
		return err
	}
	if p.Type != LeaderInfo {
		return fmt.Errorf("zab: leader %d answered OBSERVERINFO with %s, not LEADERINFO", s.l.leader.ID, p)
	}
	s.newEpoch = Epoch(p.Zxid)
	var epoch int32
	switch {
	case s.newEpoch > s.st.acceptedEpoch:
		epoch = int32(s.st.currentEpoch)
		s.st.acceptedEpoch = s.newEpoch
	case s.newEpoch == s.st.acceptedEpoch:
		epoch = -1 // not an ack of the epoch, only our last zxid
	default:
		return fmt.Errorf("zab: leader %d's epoch %d is below the accepted epoch %d", s.l.leader.ID, s.newEpoch, s.st.acceptedEpoch)
	}
	data := binary.BigEndian.AppendUint32(nil, uint32(epoch))
	s.lastApplied = last
	s.o.log.Info("zab: registered with the leader", "leader", s.l.leader.ID, "epoch", s.newEpoch, "lastZxid", fmt.Sprintf("0x%x", last))
	return s.write(&Packet{Type: AckEpoch, Zxid: last, Data: data})
}

// sync reads DIFF, TRUNC or SNAP and what follows up to UPTODATE, as
// Learner.syncWithLeader does for an observer, and sends the two ACKs (of
// NEWLEADER and of UPTODATE). Transactions are applied as their COMMIT or
// INFORM arrives.
func (s *session) sync() error {
	h := s.o.cfg.Handler
	p, err := s.read()
	if err != nil {
		return err
	}
	switch p.Type {
	case Diff:
		s.o.stats.diffs.Add(1)
		s.o.log.Info("zab: sync by DIFF", "zxid", fmt.Sprintf("0x%x", p.Zxid))
	case Trunc:
		s.o.stats.truncs.Add(1)
		s.o.log.Info("zab: sync by TRUNC", "zxid", fmt.Sprintf("0x%x", p.Zxid))
		if err := h.Truncate(p.Zxid); err != nil {
			s.st.presentZero = true
			return fmt.Errorf("zab: handler cannot truncate to 0x%x (next time asking for a snapshot): %w", p.Zxid, err)
		}
		s.lastApplied = p.Zxid
	case Snap:
		s.o.stats.snaps.Add(1)
		s.o.log.Info("zab: sync by SNAP", "zxid", fmt.Sprintf("0x%x", p.Zxid))
		if err := h.Snapshot(p.Zxid, s.br); err != nil {
			return &fatalError{fmt.Errorf("zab: handler snapshot at 0x%x: %w", p.Zxid, err)}
		}
		sig, err := ReadString(s.br, 64)
		if err != nil {
			return fmt.Errorf("zab: snapshot signature: %w", err)
		}
		if sig != "BenWasHere" {
			return &fatalError{fmt.Errorf("zab: snapshot at 0x%x not followed by its signature (got %q): the handler read too much or too little", p.Zxid, sig)}
		}
		s.lastApplied = p.Zxid
	default:
		return fmt.Errorf("zab: leader %d began the sync with %s", s.l.leader.ID, p)
	}
	s.st.presentZero = false
	newLeaderZxid := MakeZxid(s.newEpoch, 0)
	for {
		p, err := s.read()
		if err != nil {
			return err
		}
		switch p.Type {
		case NewLeader:
			s.learnConfig(p.Data)
			s.st.currentEpoch = s.newEpoch
			s.conn.timeout.Store(int64(s.o.cfg.SyncTimeout))
			if err := s.write(&Packet{Type: Ack, Zxid: newLeaderZxid}); err != nil {
				return err
			}
		case UpToDate:
			if err := s.write(&Packet{Type: Ack, Zxid: newLeaderZxid}); err != nil {
				return err
			}
			if len(s.proposals) > 0 {
				s.o.log.Warn("zab: proposals without a commit at UPTODATE", "count", len(s.proposals))
				s.proposals = nil
			}
			h.UpToDate()
			s.o.stats.syncs.Add(1)
			s.o.mu.Lock()
			s.l.serving = true
			close(s.o.upToDate)
			s.o.upToDate = make(chan struct{})
			s.o.mu.Unlock()
			s.o.log.Info("zab: up to date", "leader", s.l.leader.ID, "zxid", fmt.Sprintf("0x%x", s.lastApplied))
			return nil
		default:
			if err := s.handle(p, true); err != nil {
				return err
			}
		}
	}
}

// serve handles the leader's packets after UPTODATE, as
// Observer.processPacket does.
func (s *session) serve() error {
	for {
		p, err := s.read()
		if err != nil {
			return err
		}
		if err := s.handle(p, false); err != nil {
			return err
		}
	}
}

// handle processes one packet of the sync (inSync) or of the main loop.
func (s *session) handle(p *Packet, inSync bool) error {
	switch p.Type {
	case Proposal:
		if !inSync {
			s.o.log.Warn("zab: ignoring a PROPOSAL after the sync", "zxid", fmt.Sprintf("0x%x", p.Zxid))
			return nil
		}
		s.proposals = append(s.proposals, p)
	case Commit, CommitAndActivate:
		if !inSync {
			s.o.log.Warn("zab: ignoring a COMMIT after the sync", "zxid", fmt.Sprintf("0x%x", p.Zxid))
			return nil
		}
		return s.commit(p)
	case Inform:
		return s.apply(p.Zxid, p.Data)
	case InformAndActivate:
		return s.informAndActivate(p)
	case Ping:
		if inSync {
			return nil // Learner.syncWithLeader ignores pings too
		}
		return s.write(&Packet{Type: Ping, Zxid: p.Zxid, Data: s.o.takeTouches(), AuthInfo: p.AuthInfo})
	case Sync:
		s.o.syncDone()
	case Revalidate:
		return s.o.revalidated(s.l, p.Data)
	case UpToDate:
		s.o.log.Error("zab: UPTODATE after the sync")
	default:
		s.o.log.Warn("zab: unexpected packet from the leader", "packet", p.String())
	}
	return nil
}

// commit applies the sync's proposal that a COMMIT names. Proposals
// before it that were never committed are dropped (an old leader's
// outstanding ones), as the learner does with a warning.
func (s *session) commit(p *Packet) error {
	for len(s.proposals) > 0 && s.proposals[0].Zxid < p.Zxid {
		s.o.log.Warn("zab: dropping an uncommitted proposal", "zxid", fmt.Sprintf("0x%x", s.proposals[0].Zxid))
		s.proposals = s.proposals[1:]
	}
	if len(s.proposals) == 0 || s.proposals[0].Zxid != p.Zxid {
		s.o.log.Warn("zab: COMMIT of an unknown proposal", "zxid", fmt.Sprintf("0x%x", p.Zxid))
		return nil
	}
	prop := s.proposals[0]
	s.proposals = s.proposals[1:]
	if err := s.apply(prop.Zxid, prop.Data); err != nil {
		return err
	}
	if p.Type == CommitAndActivate {
		if len(p.Data) < 8 {
			return fmt.Errorf("zab: COMMITANDACTIVATE of 0x%x without a leader id", p.Zxid)
		}
		return s.activate(prop.Data, int64(binary.BigEndian.Uint64(p.Data)))
	}
	return nil
}

// informAndActivate applies a reconfig (data: the suggested leader's sid,
// then the transaction) and activates its configuration.
func (s *session) informAndActivate(p *Packet) error {
	if len(p.Data) < 8 {
		return fmt.Errorf("zab: INFORMANDACTIVATE of 0x%x without a leader id", p.Zxid)
	}
	txn := p.Data[8:]
	if err := s.apply(p.Zxid, txn); err != nil {
		return err
	}
	return s.activate(txn, int64(binary.BigEndian.Uint64(p.Data)))
}

// activate adopts a reconfig's configuration; if it names another leader
// the session ends so that the observer finds it (QuorumPeer.processReconfig
// reports a major change and the learner starts over).
func (s *session) activate(txn []byte, leader int64) error {
	v, err := reconfigView(txn)
	if err != nil {
		s.o.log.Warn("zab: cannot read an activated configuration", "err", err)
		return nil
	}
	s.o.el.learnView(v)
	if leader != s.l.leader.ID {
		return fmt.Errorf("zab: reconfig moved the leader from %d to %d", s.l.leader.ID, leader)
	}
	return nil
}

// learnConfig adopts the configuration a NEWLEADER carries.
func (s *session) learnConfig(data []byte) {
	if len(data) <= 1 {
		return
	}
	if v, err := ParseView(string(data)); err == nil {
		s.o.el.learnView(v)
	}
}

// apply hands a committed transaction to the Handler unless its state
// already holds it: a snapshot is fuzzy, so the leader may resend what
// the snapshot's zxid covers.
func (s *session) apply(zxid int64, data []byte) error {
	if zxid <= s.lastApplied {
		s.o.log.Debug("zab: skipping a transaction the state holds", "zxid", fmt.Sprintf("0x%x", zxid))
		return nil
	}
	if Epoch(zxid) == Epoch(s.lastApplied) && zxid != s.lastApplied+1 {
		s.o.log.Warn("zab: zxid gap", "last", fmt.Sprintf("0x%x", s.lastApplied), "next", fmt.Sprintf("0x%x", zxid))
	}
	if err := s.o.cfg.Handler.Txn(zxid, data); err != nil {
		return &fatalError{fmt.Errorf("zab: handler txn 0x%x: %w", zxid, err)}
	}
	s.lastApplied = zxid
	s.o.stats.txns.Add(1)
	return nil
}

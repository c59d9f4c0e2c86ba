package server

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/session"
)

// readOnlyMode is the read-only server of an ensemble member started with
// readonlymode.enabled, as ZooKeeper's ReadOnlyZooKeeperServer: once the
// member has been out of a working quorum for readOnlyDelay, it serves
// clients that set the readOnly flag of the handshake from its last state,
// refuses every other client and every write, and keeps the sessions it
// creates to itself (local sessions, never in the replicated log, expired
// here by their timeout). When the member is in a working quorum again the
// read-only server ends and closes every client connection, so that
// clients reconnect read-write.
//
// active is read without the lock by every connection; mu guards the
// rest, which is set while active.
type readOnlyMode struct {
	active atomic.Bool

	mu     sync.Mutex
	local  *session.Tracker // the local sessions and their expiry clock
	cancel context.CancelFunc
	done   chan struct{} // closed when the local expiry clock has stopped
}

// readOnly reports whether this member is serving read-only clients.
func (s *Server) readOnly() bool { return s.ro.active.Load() }

// readOnlyDelay is how long a member must be out of a working quorum
// before it starts serving read-only clients: ZooKeeper's grace period,
// the tick time but at least two seconds.
func (s *Server) readOnlyDelay() time.Duration {
	return max(2*time.Second, time.Duration(s.cfg.TickTime)*time.Millisecond)
}

// startReadOnlyTimer arranges for the member to enter read-only mode after
// readOnlyDelay when readonlymode.enabled is set, and returns the function
// that cancels that and leaves read-only mode again (closing every client
// connection if it had been entered). The caller calls it once, when it
// has a quorum again or stops.
func (s *Server) startReadOnlyTimer(ctx context.Context) (stop func()) {
	if !s.cfg.ReadOnlyModeEnabled {
		return func() {}
	}
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		timer := time.NewTimer(s.readOnlyDelay())
		defer timer.Stop()
		select {
		case <-tctx.Done():
		case <-timer.C:
			s.enterReadOnly(tctx)
		}
	}()
	return func() {
		cancel()
		<-done
		s.leaveReadOnly()
	}
}

// enterReadOnly starts the read-only server: a fresh local session table
// whose expiry clock runs until ctx ends or leaveReadOnly.
func (s *Server) enterReadOnly(ctx context.Context) {
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	if s.ro.active.Load() {
		return
	}
	tick := time.Duration(s.cfg.TickTime) * time.Millisecond
	local := session.NewTracker(session.RealClock{}, tick, s.expireLocalSessions)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); local.Run(lctx) }()
	s.ro.local, s.ro.cancel, s.ro.done = local, cancel, done
	s.ro.active.Store(true)
	s.log.Warn("no quorum: serving read-only clients", "zxid", hexID(s.node.LastZxid()))
}

// leaveReadOnly ends the read-only server, if it runs: its local sessions
// are dropped and every client connection is closed, as ZooKeeper does when
// its read-only server shuts down, so read-only clients go looking for a
// read-write server.
func (s *Server) leaveReadOnly() {
	s.ro.mu.Lock()
	if !s.ro.active.Load() {
		s.ro.mu.Unlock()
		return
	}
	s.ro.active.Store(false)
	cancel, done := s.ro.cancel, s.ro.done
	s.ro.local, s.ro.cancel, s.ro.done = nil, nil, nil
	s.ro.mu.Unlock()
	cancel()
	<-done
	conns := s.connections()
	s.log.Info("read-only mode ends; closing client connections", "connections", len(conns))
	for _, c := range conns {
		c.abort("read-only mode ended")
	}
}

// localSessions runs f on the local session table while read-only mode is
// on, and reports whether it was.
func (s *Server) localSessions(f func(*session.Tracker)) bool {
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	if s.ro.local == nil {
		return false
	}
	f(s.ro.local)
	return true
}

// touchLocal refreshes the timeout of a local session and reports whether
// sid is one.
func (s *Server) touchLocal(sid int64) bool {
	if !s.readOnly() {
		return false
	}
	touched := false
	s.localSessions(func(t *session.Tracker) { touched = t.Touch(sid) })
	return touched
}

// localSessionCount is mntr's zk_local_sessions.
func (s *Server) localSessionCount() int {
	n := 0
	s.localSessions(func(t *session.Tracker) { n = t.Len() })
	return n
}

// expireLocalSessions is the local expiry clock's callback: a local session
// ends here, by its own timeout, with its connection.
func (s *Server) expireLocalSessions(ids []int64) {
	for _, id := range ids {
		s.localSessions(func(t *session.Tracker) { t.Remove(id) })
		s.log.Info("local session expired", "session", hexID(id))
		if c := s.sessionConn(id); c != nil {
			c.abort("local session expired")
		}
	}
}

// connectReadOnly answers a ConnectRequest while the member serves
// read-only, with ZooKeeper's checks in ZooKeeper's order: a client without
// the readOnly flag is refused, then a client that has seen a newer zxid
// (there is no leader to catch up with); resuming a session of the
// replicated table is refused (the client must find a read-write server
// for it). A new session, or a session this member does not know as a
// global one, becomes a local session here; a wrong password gets the
// zeroed response the client reports as expired.
func (c *conn) connectReadOnly(req *jute.ConnectRequest) bool {
	s := c.s
	c.readOnly = true
	if !req.ReadOnly {
		c.log.Info("read-only mode: refusing a client without the readOnly flag; closing")
		return false
	}
	if req.LastZxidSeen > s.node.LastZxid() {
		c.log.Info("read-only mode: client has seen a newer zxid; closing",
			"client_zxid", hexID(req.LastZxidSeen), "server_zxid", hexID(s.node.LastZxid()))
		return false
	}
	timeout := session.Negotiate(req.TimeOut, int32(s.cfg.EffectiveMinSessionTimeout()), int32(s.cfg.EffectiveMaxSessionTimeout()))
	sid := req.SessionID
	if sid == 0 {
		sid = s.idGen.Next()
	} else if !c.mayResumeReadOnly(req) {
		return false
	}
	if !s.localSessions(func(t *session.Tracker) { t.Add(sid, time.Duration(timeout)*time.Millisecond) }) {
		c.log.Info("read-only mode ended during the handshake; closing")
		return false
	}
	c.bindSession(sid, timeout)
	c.log.Debug("read-only session established", "session", hexID(sid), "timeout", timeout)
	c.sendConnectResponse(req, timeout, sid, session.Password(sid))
	return true
}

// mayResumeReadOnly decides about a session resumed on the read-only
// server. A global session is refused with a closed connection; any live
// connection of the session is closed before its password is checked.
func (c *conn) mayResumeReadOnly(req *jute.ConnectRequest) bool {
	sid := req.SessionID
	if _, global := c.s.node.Sessions().Get(sid); global {
		c.log.Info("read-only mode: refusing global session reconnection; closing", "session", hexID(sid))
		return false
	}
	if old := c.s.sessionConn(sid); old != nil && old != c {
		old.abort("session resumed on another connection")
	}
	if !bytes.Equal(req.Passwd, session.Password(sid)) {
		c.log.Info("read-only mode: session resume refused: wrong password", "session", hexID(sid))
		c.sendConnectResponse(req, 0, 0, make([]byte, 16))
		return false
	}
	return true
}

// refuseInReadOnly answers, on a read-only session (other sessions pass
// through untouched), the requests the
// read-only server does not pass on: every state change (and sync) gets
// NotReadOnly with the member's last zxid, as ZooKeeper's
// ReadOnlyRequestProcessor answers before it looks at the body, and
// closeSession ends the local session here. It reports whether it handled
// the request, and whether the connection reads on.
func (c *conn) refuseInReadOnly(h jute.RequestHeader, received time.Time) (handled, more bool) {
	if !c.readOnly {
		return false, true
	}
	reply := func(code jute.Code, closeAfter bool) {
		c.enqueue(&pending{kind: kindReply, xid: h.Xid, op: h.Type, received: received, closeAfter: closeAfter,
			frame: replyFrame(h.Xid, c.s.node.LastZxid(), code, nil)})
	}
	switch h.Type {
	case jute.OpSync, jute.OpCreate, jute.OpCreate2, jute.OpCreateTTL, jute.OpCreateContainer,
		jute.OpDelete, jute.OpDeleteContainer, jute.OpSetData, jute.OpReconfig, jute.OpSetACL,
		jute.OpMulti, jute.OpCheck:
		reply(jute.NotReadOnly, false)
		return true, true
	case jute.OpCloseSession:
		c.closeRequested.Store(true)
		sid := c.sessionID.Load()
		c.s.localSessions(func(t *session.Tracker) { t.Remove(sid) })
		reply(jute.OK, true)
		return true, false
	}
	return false, true
}

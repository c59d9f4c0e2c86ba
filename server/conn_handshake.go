package server

import (
	"bytes"
	"context"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// handshake reads the first frame: a four-letter word or a ConnectRequest.
// It returns true when a session is established and requests may follow.
func (c *conn) handshake() bool {
	c.nc.SetReadDeadline(time.Now().Add(time.Duration(c.s.cfg.SessionlessCnxnTimeout) * time.Millisecond))
	if !c.startTLS() { // TLS handshake on a secure or unified port (tls.go)
		return false
	}
	n, err := jute.ReadFrameLength(c.br)
	if err != nil {
		c.log.Debug("no connect request", "err", err)
		return false
	}
	if cmd, ok := fourLetterWord(n); ok {
		c.runFourLetterWord(cmd)
		return false
	}
	payload, err := jute.ReadFramePayload(c.br, n, c.s.cfg.JuteMaxBuffer, nil)
	if err != nil {
		c.log.Warn("bad connect frame; closing", "err", err)
		return false
	}
	if !c.s.serving.Load() && !c.s.readOnly() && !c.awaitFirstServing() {
		c.log.Info("not serving yet (no quorum or catching up); closing")
		return false
	}
	readOnly := c.s.readOnly()
	var req jute.ConnectRequest
	d := jute.NewDecoder(payload)
	req.Decode(d)
	if d.Err() != nil {
		c.log.Warn("malformed connect request; closing", "len", len(payload), "err", d.Err())
		return false
	}
	c.nc.SetReadDeadline(time.Time{})
	if readOnly {
		return c.connectReadOnly(&req)
	}
	return c.connect(&req)
}

// connect creates or resumes the session of a ConnectRequest.
func (c *conn) connect(req *jute.ConnectRequest) bool {
	s := c.s
	if !c.caughtUpTo(req.LastZxidSeen) {
		c.log.Warn("client has seen a newer zxid than this server; closing",
			"client_zxid", hexID(req.LastZxidSeen), "server_zxid", hexID(s.node.LastZxid()))
		return false
	}
	timeout := session.Negotiate(req.TimeOut, int32(s.cfg.EffectiveMinSessionTimeout()), int32(s.cfg.EffectiveMaxSessionTimeout()))
	if req.SessionID == 0 {
		return c.createSession(req, timeout)
	}
	return c.resumeSession(req, timeout)
}

// caughtUpTo reports whether this member has applied zxid. An ensemble
// member that is behind first syncs with the leader (bounded by syncLimit
// ticks) instead of sending the client elsewhere at once; ZooKeeper closes
// the connection, which is what happens if the sync does not help.
func (c *conn) caughtUpTo(zxid int64) bool {
	if zxid <= c.s.node.LastZxid() {
		return true
	}
	if !c.s.node.Clustered() {
		return false
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, c.s.syncLimit())
	defer cancel()
	return c.s.node.Sync(ctx) == nil && zxid <= c.s.node.LastZxid()
}

// createSession creates a session through the log and answers the
// client; false when it could not (the connection then closes).
func (c *conn) createSession(req *jute.ConnectRequest, timeout int32) bool {
	sid := c.s.idGen.Next()
	out, ok := c.awaitSessionTxn(&txnlog.Txn{Timeout: timeout, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: sid}})
	if !ok || out.Err != nil {
		// A session committed after all expires by its timeout.
		c.log.Warn("session not created; closing", "err", out.Err, "committed_in_time", ok)
		return false
	}
	c.bindSession(sid, timeout)
	c.log.Debug("session established", "session", hexID(sid), "timeout", timeout)
	c.sendConnectResponse(req, timeout, sid, session.Password(sid))
	return true
}

// resumeSession answers a client resuming its session. Only a decision
// the quorum made ends a session: an unknown session (after syncing with
// the leader) or a wrong password gets the zeroed ConnectResponse the
// client reports as expired; a member that cannot decide (no leader, the
// leader unreachable, the move not committed) closes the connection
// without a response, and the client tries again there or elsewhere, as
// with a ZooKeeper follower looking for its leader.
func (c *conn) resumeSession(req *jute.ConnectRequest, timeout int32) bool {
	sid := req.SessionID
	// As ZooKeeper does, any live connection of the session is closed before
	// the password is checked.
	if old := c.s.sessionConn(sid); old != nil && old != c {
		old.abort("session resumed on another connection")
	}
	verdict := sessionExpired
	if bytes.Equal(req.Passwd, session.Password(sid)) {
		verdict = c.knownSession(sid)
	}
	if verdict == sessionLive {
		verdict = c.takeOwnership(sid)
	}
	switch verdict {
	case sessionUndecided:
		c.log.Info("cannot decide about the session now; closing", "session", hexID(sid))
		return false
	case sessionExpired:
		c.log.Info("session resume refused: expired or wrong password", "session", hexID(sid))
		c.sendConnectResponse(req, 0, 0, make([]byte, 16))
		return false
	}
	c.s.tracker.Add(sid, time.Duration(timeout)*time.Millisecond)
	c.bindSession(sid, timeout)
	c.log.Debug("session resumed", "session", hexID(sid), "timeout", timeout)
	c.sendConnectResponse(req, timeout, sid, session.Password(sid))
	return true
}

// sessionVerdict is what a member decided about a session a client resumes.
type sessionVerdict int

const (
	sessionLive      sessionVerdict = iota
	sessionExpired                  // the quorum ended it, or it never existed
	sessionUndecided                // this member cannot tell now: close, the client retries
)

// knownSession reports whether session sid exists. A member that does not
// know it may not have applied its creation yet (the client's last zxid
// need not cover it), so an ensemble member first syncs with the leader.
func (c *conn) knownSession(sid int64) sessionVerdict {
	if _, ok := c.s.node.Sessions().Get(sid); ok {
		return sessionLive
	}
	if !c.s.node.Clustered() {
		return sessionExpired
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, c.s.syncLimit())
	defer cancel()
	if err := c.s.node.Sync(ctx); err != nil {
		c.log.Info("session unknown and no sync with the leader", "session", hexID(sid), "err", err)
		return sessionUndecided
	}
	if _, ok := c.s.node.Sessions().Get(sid); ok {
		return sessionLive
	}
	return sessionExpired
}

// takeOwnership makes this member the owner of a session resumed here, so
// that writes still arriving through its previous member fail with
// SessionMoved. Only a committed SessionExpired makes the session expired;
// a replication failure or no answer within syncLimit leaves it undecided.
func (c *conn) takeOwnership(sid int64) sessionVerdict {
	if c.s.node.Sessions().Owner(sid) == c.s.serverID {
		return sessionLive
	}
	out, ok := c.awaitSessionTxn(&txnlog.Txn{Tree: datatree.Txn{Type: txnlog.OpMoveSession, SessionID: sid}})
	if !ok {
		c.log.Info("session move not committed in time", "session", hexID(sid))
		return sessionUndecided
	}
	switch {
	case out.Err != nil:
		c.log.Info("session could not move here", "session", hexID(sid), "err", out.Err)
		return sessionUndecided
	case out.Result.Err == jute.SessionExpired:
		return sessionExpired
	case out.Result.Err != jute.OK:
		c.log.Warn("session move failed", "session", hexID(sid), "code", out.Result.Err)
		return sessionUndecided
	}
	return sessionLive
}

// awaitSessionTxn proposes a session transaction of the handshake and
// waits for its outcome for at most syncLimit: a member whose quorum went
// away while it waited must not hold the client's handshake (the client
// would wait out its own connect timeout). ok is false when no outcome
// came in time, the connection was closed meanwhile, or the server stops.
func (c *conn) awaitSessionTxn(t *txnlog.Txn) (out replication.Outcome, ok bool) {
	ch := c.s.node.Submit(t)
	timer := time.NewTimer(c.s.syncLimit())
	defer timer.Stop()
	select {
	case out = <-ch:
		return out, true
	case <-timer.C:
	case <-c.done:
	case <-c.s.ctx.Done():
	}
	return out, false
}

// bindSession makes c the connection of session sid, closing the one it
// replaces. Called by the reader goroutine, during the handshake.
func (c *conn) bindSession(sid int64, timeout int32) {
	c.sessionID.Store(sid)
	c.timeout.Store(timeout)
	if old := c.s.bind(sid, c); old != nil && old != c {
		old.abort("session resumed on another connection")
	}
}

// sendConnectResponse queues the handshake's reply on the pipeline.
func (c *conn) sendConnectResponse(req *jute.ConnectRequest, timeout int32, sid int64, passwd []byte) {
	resp := jute.ConnectResponse{TimeOut: timeout, SessionID: sid, Passwd: passwd, ReadOnly: c.readOnly, HasReadOnly: req.HasReadOnly}
	c.pl.out.push(jute.AppendFrame(nil, &resp))
}

// startHold is how long after its start a member that has not served yet
// lets a client's handshake wait for it, instead of closing the
// connection at once.
const startHold = 2 * time.Second

// awaitFirstServing waits until the member serves, if it has not served
// since it started, less than startHold ago (a restart, a takeover's
// switch, the voter gate's wait for a joining member), and at most until
// startHold after the start, unless it is fenced; it reports whether the
// member serves. A client closed at once tries again after its own back-off (up to a
// second for the Java client), often well after the member began to
// serve; one that waits is served as soon as the member is.
func (c *conn) awaitFirstServing() bool {
	s := c.s
	if s.servedOnce.Load() || s.node.Fenced() != nil {
		return false
	}
	wait := startHold - time.Since(s.started)
	if wait <= 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(s.ctx, wait)
	defer cancel()
	return s.WaitServing(ctx) == nil
}

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/sasl"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// itemKind says how the completer turns a pipeline item into a reply.
type itemKind int

const (
	kindReply itemKind = iota // reply frame already built
	kindPing
	kindRead
	kindWrite
	kindSync
	kindReconfig
)

// pending is one request in a connection's pipeline.
type pending struct {
	kind       itemKind
	xid        int32
	op         jute.OpCode
	req        jute.Record
	outcome    <-chan replication.Outcome
	deferred   *txnlog.Txn // a write proposed only when the completer reaches it
	frame      []byte
	ids        []jute.ID // the connection's identities when the request arrived
	closeAfter bool
	received   time.Time
	nullPath   bool  // a sync whose path was a null string
	large      int64 // bytes held against largeRequestMaxBytes (admission.go)
}

// pipelineDepth bounds the requests one connection may have in flight
// before its reader stops reading (back-pressure on that client only).
const pipelineDepth = 1000

// outboxLimit is how many bytes of queued replies and notifications a
// connection may hold before it is treated as a slow consumer and dropped:
// a client that pipelines requests and does not read its replies, or does
// not read its notifications.
const outboxLimit = 64 << 20

// conn is one client connection. The reader goroutine owns br and the
// session binding; sessionID, timeout and the flags are atomics read by
// others; ids is guarded by idsMu.
type conn struct {
	s           *Server
	nc          net.Conn
	br          *bufio.Reader
	ip          string
	out         *outbox
	queue       chan *pending
	established time.Time
	log         connLog

	sessionID      atomic.Int64
	timeout        atomic.Int32
	closeRequested atomic.Bool
	aborted        atomic.Bool
	done           chan struct{} // closed by abort

	// inflight counts the connection's requests read and not yet answered;
	// idle is signalled when it drops to zero (admission.go). frameLarge is
	// the large bytes of the frame the reader is handling (reader-owned).
	inflight   atomic.Int64
	idle       chan struct{}
	frameLarge int64

	// readOnly marks a session of the read-only server (readonly.go); set
	// by the handshake, owned by the reader goroutine.
	readOnly bool
	// saslMech is the connection's SASL exchange (sasl.go), started by its
	// first sasl request; owned by the reader goroutine.
	saslMech sasl.Mechanism

	order sessionOrder

	idsMu sync.Mutex
	ids   []jute.ID
	// reqIDs are the identities of the read the completer is running
	// (owned by the completer goroutine).
	reqIDs []jute.ID

	// statistics for cons / mntr
	recv, sent  atomic.Int64
	lat         *latencyStats
	lastOp      atomic.Int32
	lastCxid    atomic.Int32
	lastZxid    atomic.Int64
	lastResp    atomic.Int64 // ms since epoch
	lastLatency atomic.Int64
	everOp      atomic.Bool
}

func newConn(s *Server, nc net.Conn, ip string) *conn {
	c := &conn{
		s:           s,
		nc:          nc,
		br:          s.readBuffer(nc),
		ip:          ip,
		out:         newOutbox(outboxLimit),
		queue:       s.pipelineQueue(),
		established: time.Now(),
		lat:         newLatencyStats(),
		done:        make(chan struct{}),
		idle:        make(chan struct{}, 1),
		log:         connLog{l: s.log, nc: nc},
	}
	c.ids = initialIDs(nc.RemoteAddr())
	return c
}

// connLog logs about one connection, naming its remote address. Most
// connections never log above debug: the address is formatted only for a
// record the logger will write, not for every connection accepted (a
// logger With the address cost ~1.5% of a member's CPU under session churn).
type connLog struct {
	l  *slog.Logger
	nc net.Conn
}

func (g connLog) Debug(msg string, args ...any) { g.log(slog.LevelDebug, msg, args) }
func (g connLog) Info(msg string, args ...any)  { g.log(slog.LevelInfo, msg, args) }
func (g connLog) Warn(msg string, args ...any)  { g.log(slog.LevelWarn, msg, args) }

func (g connLog) log(level slog.Level, msg string, args []any) {
	ctx := context.Background()
	if !g.l.Enabled(ctx, level) {
		return
	}
	g.l.Log(ctx, level, msg, append([]any{"remote", g.nc.RemoteAddr().String()}, args...)...)
}

// readBufferSize is the size of a connection's read buffer.
const readBufferSize = 64 << 10

// readBuffer returns a read buffer for nc, reusing one of an ended
// connection when there is one: connections come and go at a high rate, and
// a fresh 64 KiB buffer for each is most of the cost of accepting one.
func (s *Server) readBuffer(nc net.Conn) *bufio.Reader {
	if br, ok := s.readBuffers.Get().(*bufio.Reader); ok {
		br.Reset(nc)
		return br
	}
	return bufio.NewReaderSize(nc, readBufferSize)
}

// pipelineQueue returns an empty pipeline queue, an ended connection's
// when there is one. A queue of pipelineDepth entries is 8 KiB: under
// session churn, allocating one per connection was more than half of the
// bytes a connect+close cycle allocated.
func (s *Server) pipelineQueue() chan *pending {
	if q, ok := s.pipelines.Get().(chan *pending); ok {
		return q
	}
	return make(chan *pending, pipelineDepth)
}

// serve runs the connection to its end.
func (c *conn) serve() {
	defer c.s.forget(c)
	defer c.releaseReadBuffer()
	// Empty by then: completeLoop took everything up to its nil item, or
	// never ran (the handshake enqueues nothing).
	defer c.s.pipelines.Put(c.queue)
	writerDone := make(chan struct{})
	c.s.workers.run(func() {
		defer close(writerDone)
		defer c.recoverPanic("writer")
		err := c.out.writeLoop(c.nc, c.writeTimeout(), c.countSent)
		if err != nil && !c.aborted.Load() {
			c.log.Debug("write failed", "err", err)
		}
		c.nc.Close()
	})
	if !c.guard("handshake", c.handshake) {
		c.out.close()
		<-writerDone
		return
	}
	completerDone := make(chan struct{})
	c.s.workers.run(func() { defer close(completerDone); c.completeLoop() })
	c.readLoop()
	c.queue <- nil // ends completeLoop, and leaves the queue open for reuse
	<-completerDone
	<-writerDone
	c.s.watches.RemoveWatcher(c)
}

// releaseReadBuffer gives the read buffer back once the reader is done
// with it.
func (c *conn) releaseReadBuffer() {
	c.br.Reset(nil)
	c.s.readBuffers.Put(c.br)
	c.br = nil
}

// writeTimeout is how long one write may stall before the client is
// considered gone: the session timeout once known, else the sessionless
// connection timeout.
func (c *conn) writeTimeout() time.Duration {
	return time.Duration(max(c.s.cfg.EffectiveMaxSessionTimeout(), c.s.cfg.SessionlessCnxnTimeout)) * time.Millisecond
}

// abort closes the connection at once (expiry, slow consumer, shutdown).
// Queued replies are dropped.
func (c *conn) abort(reason string) {
	if c.aborted.Swap(true) {
		return
	}
	close(c.done)
	c.log.Info("closing connection", "reason", reason, "session", hexID(c.sessionID.Load()))
	c.nc.Close()
	c.out.close()
}

func (c *conn) countSent(frames [][]byte) {
	c.sent.Add(int64(len(frames)))
	c.s.stats.packetsSent.Add(int64(len(frames)))
}

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
	readOnly := c.s.readOnly()
	if !c.s.serving.Load() && !readOnly {
		c.log.Info("not serving yet (no quorum or catching up); closing")
		return false
	}
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

func (c *conn) bindSession(sid int64, timeout int32) {
	c.sessionID.Store(sid)
	c.timeout.Store(timeout)
	if old := c.s.bind(sid, c); old != nil && old != c {
		old.abort("session resumed on another connection")
	}
}

func (c *conn) sendConnectResponse(req *jute.ConnectRequest, timeout int32, sid int64, passwd []byte) {
	resp := jute.ConnectResponse{TimeOut: timeout, SessionID: sid, Passwd: passwd, ReadOnly: c.readOnly, HasReadOnly: req.HasReadOnly}
	c.out.push(jute.AppendFrame(nil, &resp))
}

// readLoop reads request frames until the client goes away, a request ends
// the connection, or a frame breaks the protocol.
func (c *conn) readLoop() {
	defer c.recoverPanic("reader")
	defer c.releaseFrame()
	var buf []byte
	for {
		n, err := jute.ReadFrameLength(c.br)
		if err != nil {
			c.logReadEnd(err)
			return
		}
		// Throttled before the payload is read, so that a paused reader
		// holds no more than its buffers.
		large := c.s.admission.large(int(n))
		if !c.s.admission.wait(&c.inflight, c.idle, c.done, large) {
			return
		}
		c.frameLarge = large
		payload, err := jute.ReadFramePayload(c.br, n, c.s.cfg.JuteMaxBuffer, buf)
		if err != nil {
			if errors.Is(err, jute.ErrFrameTooLarge) {
				c.log.Warn("frame length out of range; closing", "len", n, "limit", c.s.cfg.JuteMaxBuffer)
			} else {
				c.logReadEnd(err)
			}
			return
		}
		// A large payload buffer is not kept: decoded requests copy what
		// they keep, and an idle connection should not hold a MiB.
		buf = nil
		if cap(payload) <= readBufferSize {
			buf = payload[:0]
		}
		more := c.handle(payload)
		c.releaseFrame()
		if !more {
			return
		}
	}
}

// releaseFrame gives back the large bytes reserved for the frame just
// handled when no pipeline item took them.
func (c *conn) releaseFrame() {
	c.s.admission.release(c.frameLarge)
	c.frameLarge = 0
}

func (c *conn) logReadEnd(err error) {
	if errors.Is(err, io.EOF) || c.aborted.Load() || errors.Is(err, net.ErrClosed) {
		c.log.Debug("connection ended", "session", hexID(c.sessionID.Load()))
		return
	}
	c.log.Info("read failed; closing", "err", err, "session", hexID(c.sessionID.Load()))
}

// enqueue puts a request in the pipeline; the first item of a frame
// carries the frame's large bytes.
func (c *conn) enqueue(p *pending) {
	p.large, c.frameLarge = c.frameLarge, 0
	c.inflight.Add(1)
	c.s.admission.admitted()
	c.queue <- p
}

// finished accounts a pipeline item answered or dropped.
func (c *conn) finished(p *pending) {
	c.s.admission.done(p.large)
	if c.inflight.Add(-1) == 0 {
		select {
		case c.idle <- struct{}{}:
		default:
		}
	}
}

// replyFrame builds a header-only reply, or a reply with body when err is OK.
func replyFrame(xid int32, zxid int64, err jute.Code, body jute.Record) []byte {
	h := jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: err}
	if err != jute.OK || body == nil {
		return jute.AppendFrame(make([]byte, 0, replyHeaderSize), &h)
	}
	return jute.AppendFrame(make([]byte, 0, replySizeHint(body)), &h, body)
}

// errorFrame builds an error reply that carries a body anyway (body may
// be nil: header only), as ZooKeeper sends a rejected multiRead with the
// multi end marker.
func errorFrame(xid int32, zxid int64, err jute.Code, body jute.Record) []byte {
	h := jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: err}
	if body == nil {
		return jute.AppendFrame(make([]byte, 0, replyHeaderSize), &h)
	}
	return jute.AppendFrame(make([]byte, 0, replyHeaderSize+16), &h, body)
}

// replyHeaderSize is the size of a header-only reply frame: the frame
// length, xid, zxid and err.
const replyHeaderSize = 4 + 4 + 8 + 4

// replySizeHint guesses the encoded size of a reply frame carrying body:
// exact for getData, the answer of most reads; a small frame otherwise
// (appending grows it when needed).
func replySizeHint(body jute.Record) int {
	if r, ok := body.(*jute.GetDataResponse); ok {
		return replyHeaderSize + 4 + len(r.Data) + jute.StatSize
	}
	return replyHeaderSize + 128
}

// handle decodes one request frame and puts it in the pipeline. It returns
// false when no further frame may be read.
func (c *conn) handle(payload []byte) bool {
	c.recv.Add(1)
	c.s.stats.packetsReceived.Add(1)
	sid := c.sessionID.Load()
	c.s.touch(sid)
	now := time.Now()
	d := jute.NewDecoder(payload)
	var h jute.RequestHeader
	h.Decode(d)
	if d.Err() != nil {
		c.log.Warn("malformed request header; closing", "len", len(payload))
		return false
	}
	reply := func(err jute.Code, zxid int64, closeAfter bool) bool {
		c.enqueue(&pending{kind: kindReply, xid: h.Xid, op: h.Type, received: now, closeAfter: closeAfter,
			frame: replyFrame(h.Xid, zxid, err, nil)})
		return !closeAfter
	}
	if c.refuseUnauthenticated(h, now) {
		return false
	}
	switch h.Type {
	case jute.OpPing:
		c.enqueue(&pending{kind: kindPing, xid: jute.XidPing, op: h.Type, received: now})
		return true
	case jute.OpAuth:
		return c.handleAuth(h.Xid, d, now)
	case jute.OpSASL:
		return c.handleSASL(h.Xid, d, now) // sasl.go
	case jute.OpCreateSession, jute.OpDeleteContainer:
		c.log.Warn("internal opcode from a client; closing", "op", h.Type)
		return reply(jute.Unimplemented, -1, true)
	}
	if handled, more := c.refuseInReadOnly(h, now); handled {
		return more
	}
	req := jute.NewRequest(h.Type)
	if req == nil {
		c.log.Warn("unknown opcode; closing", "op", int32(h.Type))
		return reply(jute.Unimplemented, -1, true)
	}
	req.Decode(d)
	if d.Err() != nil {
		c.log.Info("undecodable request", "op", h.Type, "err", d.Err())
		return reply(jute.MarshallingError, c.s.node.LastZxid(), false)
	}
	if code, body := checkMultiKinds(h.Type, req); code != jute.OK {
		c.log.Info("multi with ops of the wrong kind", "op", h.Type, "err", code)
		c.enqueue(&pending{kind: kindReply, xid: h.Xid, op: h.Type, received: now,
			frame: errorFrame(h.Xid, c.s.node.LastZxid(), code, body)})
		return true
	}
	nullIdx, hasNull := d.FirstNullString()
	if hasNull && c.rejectNull(h, req, nullIdx, now) {
		return true
	}
	switch {
	case h.Type == jute.OpReconfig && c.s.cfg.ReconfigEnabled:
		c.order.addBarrier()
		c.enqueue(&pending{kind: kindReconfig, xid: h.Xid, op: h.Type, req: req, ids: c.authIDs(), received: now})
	case h.Type.IsWrite():
		return c.submitWrite(h, req, sid, now)
	case h.Type == jute.OpSync:
		c.order.addBarrier()
		c.enqueue(&pending{kind: kindSync, xid: h.Xid, op: h.Type, req: req, received: now, nullPath: hasNull})
	default:
		// The identities are those the connection had when the request
		// arrived, as ZooKeeper captures them: an auth packet pipelined
		// after a read does not grant that read anything.
		c.order.addRead()
		c.enqueue(&pending{kind: kindRead, xid: h.Xid, op: h.Type, req: req, ids: c.authIDs(), received: now})
	}
	return true
}

// submitWrite proposes a write transaction and queues its reply slot.
func (c *conn) submitWrite(h jute.RequestHeader, req jute.Record, sid int64, received time.Time) bool {
	closing := h.Type == jute.OpCloseSession
	if closing {
		c.closeRequested.Store(true)
		req = nil
	}
	ids := c.authIDs()
	t := &txnlog.Txn{RequestID: c.s.node.NewRequestID(), Tree: datatree.Txn{Type: h.Type, SessionID: sid, Request: req, IDs: ids}}
	p := &pending{kind: kindWrite, xid: h.Xid, op: h.Type, req: req, ids: ids, received: received, closeAfter: closing}
	now, gated := c.order.admitWrite(t.RequestID)
	switch {
	case !now:
		p.deferred = t
	case gated:
		c.s.gated.Add(1)
		p.outcome = c.propose(t)
	default:
		p.outcome = c.propose(t)
	}
	c.enqueue(p)
	return !closing
}

// propose submits one of this connection's writes, registered first with
// the outbox so that notifications of later transactions wait for its reply.
func (c *conn) propose(t *txnlog.Txn) <-chan replication.Outcome {
	c.out.expect(t.RequestID)
	return c.s.node.Submit(t)
}

// checkMultiKinds rejects a multi holding read ops and a multiRead holding
// write ops with MarshallingError. ZooKeeper decodes a multi record only
// when all its ops are of one kind (reads or writes), so a mixed request
// fails to decode and gets a bare header; a multiRead made only of write
// ops decodes, fails later, and its reply still carries the end marker.
func checkMultiKinds(op jute.OpCode, req jute.Record) (jute.Code, jute.Record) {
	m, ok := req.(*jute.MultiRequest)
	if !ok {
		return jute.OK, nil
	}
	reads := 0
	for _, o := range m.Ops {
		if o.Type == jute.OpGetData || o.Type == jute.OpGetChildren {
			reads++
		}
	}
	switch {
	case op == jute.OpMulti && reads > 0:
		return jute.MarshallingError, nil
	case op == jute.OpMultiRead && reads == 0 && len(m.Ops) > 0:
		return jute.MarshallingError, &jute.MultiResponse{}
	case op == jute.OpMultiRead && reads < len(m.Ops):
		return jute.MarshallingError, nil
	}
	return jute.OK, nil
}

// completeLoop turns pipeline items into replies strictly in order.
func (c *conn) completeLoop() {
	defer c.out.close()
	defer c.recoverCompleter()
	for p := range c.queue {
		if p == nil {
			return // the reader is done (serve)
		}
		c.completeOne(p)
	}
}

// completeOne replies to one pipeline item; the item stops counting as
// outstanding even when completing it panics.
func (c *conn) completeOne(p *pending) {
	defer c.finished(p)
	frame := c.complete(p)
	if frame == nil {
		return
	}
	c.recordLatency(p, frame)
	if !c.out.pushReply(frame, p.kind == kindWrite, len(c.queue) == 0) {
		c.log.Warn("client does not read its replies; closing", "queued_limit", outboxLimit)
		c.abort("slow consumer: queued replies over the limit")
	}
}

// awaitOutcome waits for a write's outcome, at most the write timeout and
// no longer than the connection lives. A write committed by the leader but
// not applied here (this member was cut off or removed) ends the connection
// instead of holding it forever: for the client that is a ConnectionLoss.
// Under load the outcome is usually there already, and no timer is armed.
func (c *conn) awaitOutcome(p *pending) (replication.Outcome, bool) {
	select {
	case o := <-p.outcome:
		return o, true
	default:
	}
	timer := time.NewTimer(c.writeTimeout())
	defer timer.Stop()
	select {
	case o := <-p.outcome:
		return o, true
	case <-c.done:
		return replication.Outcome{}, false
	case <-timer.C:
		c.abort("write not applied in time")
		return replication.Outcome{}, false
	}
}

// complete produces the reply frame of one item (nil: no reply).
func (c *conn) complete(p *pending) []byte {
	switch p.kind {
	case kindReply:
		return p.frame
	case kindPing:
		return replyFrame(jute.XidPing, c.s.node.LastZxid(), jute.OK, nil)
	case kindWrite:
		if p.deferred != nil {
			p.outcome = c.propose(p.deferred)
			c.order.deferredProposed()
		}
		o, ok := c.awaitOutcome(p)
		if !ok {
			return nil
		}
		if o.Err != nil {
			c.log.Warn("write not replicated; dropping connection", "op", p.op, "err", o.Err)
			c.abort("write outcome unknown")
			return nil
		}
		if o.Result.Err == jute.SessionMoved {
			// As ZooKeeper does: the client has resumed its session on
			// another member; this connection is closed without a reply.
			c.abort("session moved to another member")
			return nil
		}
		c.auditWrite(p, o.Zxid, o.Result.Err)
		return replyFrame(p.xid, o.Zxid, o.Result.Err, o.Result.Response)
	case kindSync:
		defer c.order.barrierDone()
		return c.completeSync(p)
	case kindReconfig:
		defer c.order.barrierDone()
		zxid, code, body := c.reconfigure(p.req.(*jute.ReconfigRequest), p.ids)
		return replyFrame(p.xid, zxid, code, body)
	default:
		c.reqIDs = p.ids
		frame := c.execRead(p)
		c.order.readDone()
		return frame
	}
}

func (c *conn) completeSync(p *pending) []byte {
	if err := c.s.node.Sync(c.s.ctx); err != nil {
		c.abort(fmt.Sprintf("sync failed: %v", err))
		return nil
	}
	var body jute.Record = &jute.SyncResponse{Path: p.req.(*jute.PathRequest).Path}
	if p.nullPath {
		body = nullString{} // ZooKeeper echoes a null path as null
	}
	return replyFrame(p.xid, c.s.node.LastZxid(), jute.OK, body)
}

func (c *conn) recordLatency(p *pending, frame []byte) {
	d := time.Since(p.received)
	if p.kind != kindReply || (p.op != jute.OpAuth && p.op != jute.OpSASL) {
		c.s.stats.latency.add(d)
		if p.op.IsWrite() {
			c.s.stats.updateLatency.add(d)
		} else {
			c.s.stats.readLatency.add(d)
		}
		c.s.observeRequest(p.op, d)
		c.lat.add(d)
	}
	c.everOp.Store(true)
	c.lastOp.Store(int32(p.op))
	if p.xid >= 0 {
		c.lastCxid.Store(p.xid)
	}
	// The reply header is int32 length, int32 xid, int64 zxid, ...
	c.lastZxid.Store(int64(binary.BigEndian.Uint64(frame[8:16])))
	c.lastResp.Store(time.Now().UnixMilli())
	c.lastLatency.Store(d.Milliseconds())
	c.s.stats.responseSize(int64(len(frame) - 4))
}

// authIDs returns a copy of the connection's identities.
func (c *conn) authIDs() []jute.ID {
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	return append([]jute.ID(nil), c.ids...)
}

// addIDs adds identities, keeping them a set.
func (c *conn) addIDs(ids []jute.ID) {
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	for _, id := range ids {
		dup := false
		for _, have := range c.ids {
			if have == id {
				dup = true
				break
			}
		}
		if !dup {
			c.ids = append(c.ids, id)
		}
	}
}

func hexID(v int64) string { return fmt.Sprintf("0x%x", uint64(v)) }

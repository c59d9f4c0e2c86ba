package server

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/sasl"
)

// conn is one client connection. It runs three goroutines (serve): the
// reader (readLoop, after the handshake), the completer (completeLoop) and
// the writer (the pipeline's writeLoop). The reader owns br and the
// session binding; sessionID, timeout and the flags are atomics read by
// others; ids is guarded by idsMu. pl owns the connection's order and its
// one way to the socket (pipeline.go); abort only closes the socket.
type conn struct {
	s           *Server
	nc          net.Conn
	br          *bufio.Reader
	ip          string
	pl          *pipeline
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

	idsMu sync.Mutex
	ids   []jute.ID

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

// newConn returns the connection of nc, accepted from ip, with a pooled
// read buffer and pipeline queue (conn_pool.go); serve runs it.
func newConn(s *Server, nc net.Conn, ip string) *conn {
	c := &conn{
		s:           s,
		nc:          nc,
		br:          s.readBuffer(nc),
		ip:          ip,
		pl:          newPipeline(s.pipelineQueue(), s.node.Submit),
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

// Debug, Info and Warn log at their level, with the remote address.
func (g connLog) Debug(msg string, args ...any) { g.log(slog.LevelDebug, msg, args) }
func (g connLog) Info(msg string, args ...any)  { g.log(slog.LevelInfo, msg, args) }
func (g connLog) Warn(msg string, args ...any)  { g.log(slog.LevelWarn, msg, args) }

// log writes one record when the logger takes level.
func (g connLog) log(level slog.Level, msg string, args []any) {
	ctx := context.Background()
	if !g.l.Enabled(ctx, level) {
		return
	}
	g.l.Log(ctx, level, msg, append([]any{"remote", g.nc.RemoteAddr().String()}, args...)...)
}

// serve runs the connection to its end on the goroutine of its reader. The
// writer starts first, as the handshake's replies go through it too.
func (c *conn) serve() {
	defer c.s.forget(c)
	defer c.releaseReadBuffer()
	// Empty by then: completeLoop took everything up to its nil item, or
	// never ran (the handshake enqueues nothing).
	defer c.s.pipelines.Put(c.pl.queue)
	writerDone := make(chan struct{})
	c.s.workers.run(func() {
		defer close(writerDone)
		defer c.recoverPanic("writer")
		err := c.pl.out.writeLoop(c.nc, c.writeTimeout(), c.countSent)
		if err != nil && !c.aborted.Load() {
			c.log.Debug("write failed", "err", err)
		}
		c.nc.Close()
	})
	if !c.guard("handshake", c.handshake) {
		c.pl.out.close()
		<-writerDone
		return
	}
	completerDone := make(chan struct{})
	c.s.workers.run(func() { defer close(completerDone); c.completeLoop() })
	c.readLoop()
	c.pl.queue <- nil // ends completeLoop, and leaves the queue open for reuse
	<-completerDone
	<-writerDone
	c.s.watches.RemoveWatcher(c)
}

// writeTimeout is how long one write may stall before the client is
// considered gone: the session timeout once known, else the sessionless
// connection timeout.
func (c *conn) writeTimeout() time.Duration {
	return time.Duration(max(c.s.cfg.EffectiveMaxSessionTimeout(), c.s.cfg.SessionlessCnxnTimeout)) * time.Millisecond
}

// abort closes the connection at once (expiry, slow consumer, shutdown):
// closing the socket ends the reader's read and the writer's write; no
// reply is queued after the call began, and those queued before leave in
// order only if the writer gets them out before the socket closes. It may be called from any goroutine; the
// socket's Close may block briefly (TLS), so callers holding the tree lock
// call it on a goroutine of its own.
func (c *conn) abort(reason string) {
	if c.aborted.Swap(true) {
		return
	}
	// The outbox closes before done wakes anyone: the completer, woken
	// while it waits for a write's outcome, goes on to the items after
	// that write, and a reply of theirs must not leave ahead of the
	// write's, which never comes (a client sees the wrong xid). What was
	// queued before still leaves, in order.
	c.pl.out.close()
	close(c.done)
	c.log.Info("closing connection", "reason", reason, "session", hexID(c.sessionID.Load()))
	c.nc.Close()
}

// countSent counts frames written (the writer's statistics callback).
func (c *conn) countSent(frames [][]byte) {
	c.sent.Add(int64(len(frames)))
	c.s.stats.packetsSent.Add(int64(len(frames)))
}

// hexID formats a session id or zxid as ZooKeeper logs them.
func hexID(v int64) string { return fmt.Sprintf("0x%x", uint64(v)) }

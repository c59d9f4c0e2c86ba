package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// Errors reported by Conn.
var (
	// ErrClosed is returned by Send on a connection that has failed or closed.
	ErrClosed = errors.New("bench: connection closed")
	// ErrSessionRefused means the server answered the handshake with a zero
	// session id.
	ErrSessionRefused = errors.New("bench: session refused")
)

// maxReplyFrame bounds a reply frame; larger than the server's default
// jute.maxbuffer so that big getChildren replies are still read.
const maxReplyFrame = 16 << 20

// Reply is one reply as the reader goroutine saw it. Body aliases the read
// buffer and is valid only during the callback.
type Reply struct {
	Xid      int32
	Zxid     int64
	Err      jute.Code
	Body     []byte
	Received time.Time
}

// DialOptions configures a Conn.
type DialOptions struct {
	// SessionTimeout is the timeout requested in the handshake.
	SessionTimeout time.Duration
	// DialTimeout bounds the TCP connect and the handshake.
	DialTimeout time.Duration
	// OnEvent, if set, is called on the reader goroutine for every watch
	// notification with the time its frame was read. It must be fast.
	OnEvent func(ev jute.WatcherEvent, received time.Time)
}

// Conn is one ZooKeeper session on one TCP connection. Send may be called
// from any goroutine; requests are written in call order and pipelined, and
// each reply is handed to its callback on the reader goroutine.
type Conn struct {
	nc        net.Conn
	sessionID int64
	timeout   time.Duration
	onEvent   func(jute.WatcherEvent, time.Time)
	lastSend  atomic.Int64 // unix nanos of the last frame written
	done      chan struct{}
	stopPing  chan struct{}
	wg        sync.WaitGroup

	// mu guards the pending table, xid allocation and err. It is never
	// held during I/O, so the reader is never stuck behind a writer.
	mu      sync.Mutex
	nextXid int32
	pending map[int32]func(Reply)
	err     error // set once the connection failed or closed

	// wmu serializes writes to nc and guards wbuf.
	wmu  sync.Mutex
	wbuf []byte
}

// withDefaults fills in the timeouts left zero.
func (o DialOptions) withDefaults() DialOptions {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	return o
}

// dialTCP opens the TCP connection of a session.
func dialTCP(ctx context.Context, addr string, opts DialOptions) (net.Conn, error) {
	d := net.Dialer{Timeout: opts.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bench: dial %s: %w", addr, err)
	}
	return nc, nil
}

// Dial connects to addr and opens a new session.
func Dial(ctx context.Context, addr string, opts DialOptions) (*Conn, error) {
	opts = opts.withDefaults()
	nc, err := dialTCP(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(nc, 64<<10)
	resp, err := handshake(nc, br, opts)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bench: handshake with %s: %w", addr, err)
	}
	c := &Conn{
		nc:        nc,
		sessionID: resp.SessionID,
		timeout:   time.Duration(resp.TimeOut) * time.Millisecond,
		onEvent:   opts.OnEvent,
		done:      make(chan struct{}),
		stopPing:  make(chan struct{}),
		nextXid:   1,
		pending:   make(map[int32]func(Reply)),
	}
	c.lastSend.Store(time.Now().UnixNano())
	c.wg.Add(2)
	go func() { defer c.wg.Done(); c.readLoop(br) }()
	go func() { defer c.wg.Done(); c.pingLoop() }()
	return c, nil
}

// handshake sends the ConnectRequest and reads the ConnectResponse.
func handshake(nc net.Conn, br *bufio.Reader, opts DialOptions) (*jute.ConnectResponse, error) {
	if err := nc.SetDeadline(time.Now().Add(opts.DialTimeout)); err != nil {
		return nil, err
	}
	req := jute.ConnectRequest{
		TimeOut:     int32(opts.SessionTimeout / time.Millisecond),
		Passwd:      make([]byte, 16),
		HasReadOnly: true,
	}
	if _, err := nc.Write(jute.AppendFrame(nil, &req)); err != nil {
		return nil, err
	}
	payload, err := jute.ReadFrame(br, maxReplyFrame, nil)
	if err != nil {
		return nil, err
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(payload, &resp); err != nil {
		return nil, err
	}
	if resp.SessionID == 0 {
		return nil, ErrSessionRefused
	}
	return &resp, nc.SetDeadline(time.Time{})
}

// SessionID returns the session's id.
func (c *Conn) SessionID() int64 { return c.sessionID }

// Timeout returns the negotiated session timeout.
func (c *Conn) Timeout() time.Duration { return c.timeout }

// Done is closed when the connection has failed or closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection stopped, or nil while it works.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Send writes one request and arranges for cb to receive its reply: cb is
// called exactly once if Send returns nil, never if it returns ErrClosed.
// If the connection fails before the reply, cb gets Err ConnectionLoss.
// A nil req sends a request with no body.
func (c *Conn) Send(op jute.OpCode, req jute.Record, cb func(Reply)) error {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return ErrClosed
	}
	xid := c.nextXid
	c.nextXid++
	if c.nextXid <= 0 {
		c.nextXid = 1
	}
	c.pending[xid] = cb
	c.mu.Unlock()

	if req == nil {
		req = &jute.Empty{}
	}
	c.wmu.Lock()
	c.wbuf = jute.AppendFrame(c.wbuf[:0], &jute.RequestHeader{Xid: xid, Type: op}, req)
	_, err := c.nc.Write(c.wbuf)
	c.wmu.Unlock()
	if err == nil {
		c.lastSend.Store(time.Now().UnixNano())
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(fmt.Errorf("bench: write: %w", err))
	if _, still := c.pending[xid]; !still {
		return nil // the reader already answered cb with ConnectionLoss
	}
	delete(c.pending, xid)
	return ErrClosed
}

// Call sends one request and waits for its reply, decoding a successful
// reply's body into resp (which may be nil). A ZooKeeper error comes back
// as a jute.Code.
func (c *Conn) Call(ctx context.Context, op jute.OpCode, req, resp jute.Record) (int64, error) {
	type outcome struct {
		zxid int64
		err  error
	}
	ch := make(chan outcome, 1)
	err := c.Send(op, req, func(r Reply) {
		o := outcome{zxid: r.Zxid}
		switch {
		case r.Err != jute.OK:
			o.err = r.Err
		case resp != nil:
			o.err = jute.Decode(r.Body, resp)
		}
		ch <- o
	})
	if err != nil {
		return 0, err
	}
	select {
	case o := <-ch:
		return o.zxid, o.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Close ends the session (closeSession, waiting up to the context's
// deadline for the reply) and then the connection.
func (c *Conn) Close(ctx context.Context) error {
	_, err := c.Call(ctx, jute.OpCloseSession, nil, nil)
	c.Abort()
	if errors.Is(err, ErrClosed) {
		err = nil
	}
	return err
}

// Abort closes the connection without ending the session and waits for the
// reader to finish; outstanding callbacks get ConnectionLoss.
func (c *Conn) Abort() {
	c.mu.Lock()
	c.failLocked(ErrClosed)
	c.mu.Unlock()
	c.wg.Wait()
}

// failLocked records the first failure, closes the socket and stops the
// pinger. The reader then fails the pending requests.
func (c *Conn) failLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	c.nc.Close()
	close(c.stopPing)
}

// readLoop reads frames until the connection fails, dispatching replies
// and notifications.
func (c *Conn) readLoop(br *bufio.Reader) {
	defer close(c.done)
	var buf []byte
	for {
		payload, err := jute.ReadFrame(br, maxReplyFrame, buf)
		now := time.Now()
		if err != nil {
			c.mu.Lock()
			c.failLocked(fmt.Errorf("bench: read: %w", err))
			c.mu.Unlock()
			c.failPending(now)
			return
		}
		buf = payload[:0]
		if err := c.dispatch(payload, now); err != nil {
			c.mu.Lock()
			c.failLocked(err)
			c.mu.Unlock()
			c.failPending(now)
			return
		}
	}
}

// dispatch handles one frame from the server.
func (c *Conn) dispatch(payload []byte, now time.Time) error {
	d := jute.NewDecoder(payload)
	var hdr jute.ReplyHeader
	hdr.Decode(d)
	if err := d.Err(); err != nil {
		return fmt.Errorf("bench: reply header: %w", err)
	}
	switch hdr.Xid {
	case jute.XidNotification:
		var ev jute.WatcherEvent
		ev.Decode(d)
		if err := d.Err(); err != nil {
			return fmt.Errorf("bench: notification: %w", err)
		}
		if c.onEvent != nil {
			c.onEvent(ev, now)
		}
		return nil
	case jute.XidPing:
		return nil
	}
	c.mu.Lock()
	cb, ok := c.pending[hdr.Xid]
	delete(c.pending, hdr.Xid)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("bench: reply for unknown xid %d", hdr.Xid)
	}
	cb(Reply{Xid: hdr.Xid, Zxid: hdr.Zxid, Err: hdr.Err, Body: d.Rest(), Received: now})
	return nil
}

// failPending answers every outstanding request with ConnectionLoss.
func (c *Conn) failPending(now time.Time) {
	c.mu.Lock()
	pending := c.pending
	c.pending = make(map[int32]func(Reply))
	c.mu.Unlock()
	for xid, cb := range pending {
		cb(Reply{Xid: xid, Err: jute.ConnectionLoss, Received: now})
	}
}

// pingLoop keeps an idle session alive: it pings when nothing was sent for
// a third of the session timeout.
func (c *Conn) pingLoop() {
	idle := c.timeout / 3
	if idle <= 0 {
		idle = time.Second
	}
	t := time.NewTicker(idle / 2)
	defer t.Stop()
	ping := jute.AppendFrame(nil, &jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing})
	for {
		select {
		case <-c.stopPing:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, c.lastSend.Load())) < idle {
			continue
		}
		c.wmu.Lock()
		_, err := c.nc.Write(ping)
		c.wmu.Unlock()
		c.lastSend.Store(time.Now().UnixNano())
		if err != nil {
			c.mu.Lock()
			c.failLocked(fmt.Errorf("bench: write ping: %w", err))
			c.mu.Unlock()
		}
	}
}

// ConnectCycle opens a session on addr and closes it again on one
// goroutine, with small buffers and no reader or pinger: the session-churn
// scenario measures the server's cost of a session, so the load generator
// spends as little as it can on each. It returns when the reply to
// closeSession has arrived (or the server closed the connection after it),
// and the time the ConnectResponse arrived.
func ConnectCycle(ctx context.Context, addr string, opts DialOptions) (connected time.Time, err error) {
	opts = opts.withDefaults()
	nc, err := dialTCP(ctx, addr, opts)
	if err != nil {
		return time.Time{}, err
	}
	defer nc.Close()
	br := bufio.NewReaderSize(nc, 512)
	resp, err := handshake(nc, br, opts)
	if err != nil {
		return time.Time{}, fmt.Errorf("bench: handshake with %s: %w", addr, err)
	}
	connected = time.Now()
	if err := nc.SetDeadline(time.Now().Add(opts.DialTimeout)); err != nil {
		return connected, err
	}
	req := jute.RequestHeader{Xid: 1, Type: jute.OpCloseSession}
	if _, err := nc.Write(jute.AppendFrame(nil, &req)); err != nil {
		return connected, fmt.Errorf("bench: closeSession %#x: %w", resp.SessionID, err)
	}
	payload, err := jute.ReadFrame(br, maxReplyFrame, nil)
	if err != nil {
		return connected, fmt.Errorf("bench: closeSession %#x: %w", resp.SessionID, err)
	}
	var h jute.ReplyHeader
	if err := jute.Decode(payload, &h); err != nil {
		return connected, err
	}
	if h.Err != jute.OK {
		return connected, h.Err
	}
	return connected, nil
}

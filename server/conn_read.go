package server

import (
	"errors"
	"io"
	"net"

	"github.com/zkserverd/zkserverd/jute"
)

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

// logReadEnd logs why the reader stopped: at debug level for a client
// that went away or a connection closed here.
func (c *conn) logReadEnd(err error) {
	if errors.Is(err, io.EOF) || c.aborted.Load() || errors.Is(err, net.ErrClosed) {
		c.log.Debug("connection ended", "session", hexID(c.sessionID.Load()))
		return
	}
	c.log.Info("read failed; closing", "err", err, "session", hexID(c.sessionID.Load()))
}

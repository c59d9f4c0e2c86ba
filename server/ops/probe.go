package ops

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// ErrSessionNotClosed is wrapped in ProbeSession's error when the probe's
// session was created but closeSession failed (with enforced SASL
// authentication the server refuses it): the server does create
// sessions, and this one expires by its timeout.
var ErrSessionNotClosed = errors.New("ops: probe session not closed")

// probeXid is the xid of the probe's closeSession request.
const probeXid = 1

// probeMaxFrame bounds the replies the probe reads.
const probeMaxFrame = 1 << 20

// ProbeSession checks that the server at addr creates sessions, as
// `zkserverd healthcheck` needs: it opens a session with a ConnectRequest,
// as a client does, requires a session id other than 0 within timeout,
// and closes it with closeSession so that it does not linger until it
// expires. It returns the session id, and an error when no session was
// created or (wrapping ErrSessionNotClosed) when it could not be closed.
func ProbeSession(addr string, timeout time.Duration) (int64, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, fmt.Errorf("ops: session probe: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	br := bufio.NewReader(c)
	sid, err := openProbeSession(c, br, timeout)
	if err != nil {
		return 0, err
	}
	if err := closeProbeSession(c, br); err != nil {
		return sid, fmt.Errorf("%w: session 0x%x: %w", ErrSessionNotClosed, uint64(sid), err)
	}
	return sid, nil
}

// openProbeSession sends a ConnectRequest for a new session and reads the
// server's answer.
func openProbeSession(c net.Conn, br *bufio.Reader, timeout time.Duration) (int64, error) {
	req := jute.ConnectRequest{TimeOut: int32(timeout.Milliseconds()), Passwd: make([]byte, 16)}
	if _, err := c.Write(jute.AppendFrame(nil, &req)); err != nil {
		return 0, fmt.Errorf("ops: session probe: send connect request: %w", err)
	}
	frame, err := jute.ReadFrame(br, probeMaxFrame, nil)
	if err != nil {
		return 0, fmt.Errorf("ops: session probe: no session created (the server closed the connection or did not answer): %w", err)
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(frame, &resp); err != nil {
		return 0, fmt.Errorf("ops: session probe: bad connect response: %w", err)
	}
	if resp.SessionID == 0 {
		return 0, errors.New("ops: session probe: no session created (the server answered session id 0)")
	}
	return resp.SessionID, nil
}

// closeProbeSession sends closeSession and waits for its reply.
func closeProbeSession(c net.Conn, br *bufio.Reader) error {
	if _, err := c.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: probeXid, Type: jute.OpCloseSession})); err != nil {
		return err
	}
	for {
		frame, err := jute.ReadFrame(br, probeMaxFrame, nil)
		if err != nil {
			return err
		}
		var h jute.ReplyHeader
		h.Decode(jute.NewDecoder(frame))
		if h.Xid != probeXid {
			continue // a notification
		}
		if h.Err != jute.OK {
			return fmt.Errorf("closeSession: %v", h.Err)
		}
		return nil
	}
}

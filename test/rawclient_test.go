package test

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// rawClient speaks the wire protocol frame by frame, for what a client
// library hides: exact replies, sessions left to expire, resume by hand.
type rawClient struct {
	t    *testing.T
	c    net.Conn
	br   *bufio.Reader
	xid  int32
	Resp jute.ConnectResponse
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, br: bufio.NewReader(c)}
}

func (r *rawClient) send(recs ...jute.Record) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.c.Write(jute.AppendFrame(nil, recs...)); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one frame; the error is io.EOF-like when the server closed.
func (r *rawClient) readFrame(d time.Duration) ([]byte, error) {
	r.c.SetReadDeadline(time.Now().Add(d))
	return jute.ReadFrame(r.br, 16<<20, nil)
}

// handshake sends a ConnectRequest and decodes the response.
func (r *rawClient) handshake(req jute.ConnectRequest) (jute.ConnectResponse, error) {
	r.t.Helper()
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	r.send(&req)
	b, err := r.readFrame(5 * time.Second)
	if err != nil {
		return jute.ConnectResponse{}, err
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(b, &resp); err != nil {
		return resp, fmt.Errorf("decode connect response: %w", err)
	}
	r.Resp = resp
	return resp, nil
}

// call sends one request and returns the reply header and body bytes,
// skipping notifications.
func (r *rawClient) call(op jute.OpCode, req jute.Record) (jute.ReplyHeader, []byte) {
	r.t.Helper()
	r.xid++
	h := jute.RequestHeader{Xid: r.xid, Type: op}
	if req == nil {
		r.send(&h)
	} else {
		r.send(&h, req)
	}
	for {
		b, err := r.readFrame(10 * time.Second)
		if err != nil {
			r.t.Fatalf("%v: read reply: %v", op, err)
		}
		var rh jute.ReplyHeader
		d := jute.NewDecoder(b)
		rh.Decode(d)
		if rh.Xid == jute.XidNotification {
			continue
		}
		return rh, d.Rest()
	}
}

// expectClosed asserts the server closes the connection without sending
// anything more.
func (r *rawClient) expectClosed(d time.Duration) {
	r.t.Helper()
	b, err := r.readFrame(d)
	if err == nil {
		r.t.Fatalf("expected the server to close the connection, got a %d-byte frame", len(b))
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatalf("connection still open after %v", d)
	}
}

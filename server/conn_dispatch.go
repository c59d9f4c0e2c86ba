package server

import (
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// handle decodes one request frame's header and puts the request in the
// pipeline. It returns false when no further frame may be read. Called by
// the reader goroutine.
func (c *conn) handle(payload []byte) bool {
	c.recv.Add(1)
	c.s.stats.packetsReceived.Add(1)
	now := time.Now()
	d := jute.NewDecoder(payload)
	var h jute.RequestHeader
	h.Decode(d)
	if d.Err() != nil {
		c.log.Warn("malformed request header; closing", "len", len(payload))
		return false
	}
	if h.Type != jute.OpSASL {
		// As in ZooKeeper 3.8, which answers a sasl request outside its
		// request pipeline, a sasl request is not activity of the session:
		// a client looping on a login that cannot complete (kazoo set up
		// for SASL against a server without a SASL login) loses its
		// session by its timeout, and then reports the failed login.
		c.s.touch(c.sessionID.Load())
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
		return c.replyAndClose(h, now)
	}
	if handled, more := c.refuseInReadOnly(h, now); handled {
		return more
	}
	return c.dispatch(h, d, now)
}

// replyAndClose answers a request the server does not serve with
// Unimplemented (zxid -1) and ends the connection; it returns false.
func (c *conn) replyAndClose(h jute.RequestHeader, now time.Time) bool {
	c.enqueue(&pending{kind: kindReply, xid: h.Xid, op: h.Type, received: now, closeAfter: true,
		frame: replyFrame(h.Xid, -1, jute.Unimplemented, nil)})
	return false
}

// dispatch decodes a request's body and queues it as what it is: a
// refusal (refuse.go), a reconfig, a write, a sync or a read. It returns
// false when no further frame may be read.
func (c *conn) dispatch(h jute.RequestHeader, d *jute.Decoder, now time.Time) bool {
	req := jute.NewRequest(h.Type)
	if req == nil {
		c.log.Warn("unknown opcode; closing", "op", int32(h.Type))
		return c.replyAndClose(h, now)
	}
	req.Decode(d)
	if d.Err() != nil {
		c.log.Info("undecodable request", "op", h.Type, "err", d.Err())
		c.refuse(h, nil, refusal{code: jute.MarshallingError}, now)
		return true
	}
	if code, body := checkMultiKinds(h.Type, req); code != jute.OK {
		c.log.Info("multi with ops of the wrong kind", "op", h.Type, "err", code)
		c.refuse(h, req, refusal{code: code, body: body}, now)
		return true
	}
	nullIdx, hasNull := d.FirstNullString()
	if hasNull && c.rejectNull(h, req, nullIdx, now) {
		return true
	}
	switch {
	case h.Type == jute.OpReconfig && c.s.cfg.ReconfigEnabled:
		c.enqueue(&pending{kind: kindReconfig, xid: h.Xid, op: h.Type, req: req, ids: c.authIDs(), received: now})
	case h.Type.IsWrite():
		if c.refuseForMemory(h, req, now) { // memlimit.go
			return true
		}
		return c.submitWrite(h, req, now)
	case h.Type == jute.OpSync:
		c.enqueue(&pending{kind: kindSync, xid: h.Xid, op: h.Type, req: req, received: now, nullPath: hasNull})
	default:
		// The identities are those the connection had when the request
		// arrived, as ZooKeeper captures them: an auth packet pipelined
		// after a read does not grant that read anything.
		c.enqueue(&pending{kind: kindRead, xid: h.Xid, op: h.Type, req: req, ids: c.authIDs(), received: now})
	}
	return true
}

// submitWrite queues a write with its transaction; the pipeline proposes
// it now or once the connection's earlier reads have run
// (pipeline_order.go).
func (c *conn) submitWrite(h jute.RequestHeader, req jute.Record, received time.Time) bool {
	closing := h.Type == jute.OpCloseSession
	if closing {
		c.closeRequested.Store(true)
		req = nil
	}
	ids := c.authIDs()
	t := &txnlog.Txn{RequestID: c.s.node.NewRequestID(), Tree: datatree.Txn{Type: h.Type, SessionID: c.sessionID.Load(), Request: req, IDs: ids}}
	c.enqueue(&pending{kind: kindWrite, xid: h.Xid, op: h.Type, req: req, txn: t, ids: ids, received: received, closeAfter: closing})
	return !closing
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

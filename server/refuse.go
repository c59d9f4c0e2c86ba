package server

import (
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Requests refused before the log, and the zxids they spend.
//
// The server refuses some requests before they reach the log: bodies
// that do not decode, multi requests holding ops of the wrong kind, null
// strings where ZooKeeper dereferences them (nulls.go). ZooKeeper 3.8
// refuses them in its prep step, and whether that spends a zxid depends
// on how far the request got (measured against 3.8.0:
// TestRefusedRequestsSpendZxidsAsZooKeeper):
//
//   - a write whose transaction ZooKeeper starts before it reads the body
//     (create, create2, createContainer, createTTL, delete, setData,
//     setACL, check, multi) becomes an error transaction: it takes the
//     next zxid, and the reply carries it;
//   - a multi with a null path fails after ZooKeeper took the zxid but
//     before it made the transaction: the zxid is spent, nothing is
//     logged, and the reply (which carries the multi end marker) shows
//     the zxid before it;
//   - a read, and a reconfig (whose body ZooKeeper reads first), spend
//     none: the reply carries the last zxid.
//
// A refused write that spends a zxid goes through the log as a failed
// write (txnlog.Failed), in the connection's write order like any write,
// so every member spends the zxid alike and the FSM answers it with the
// recorded code.

// refusal is the answer to a request refused before the log: the code,
// a body sent beside it (a multi's end marker, nil for none) and, for a
// multi with a null path, burned: the reply carries the zxid before the
// one the refusal spent.
type refusal struct {
	code   jute.Code
	body   jute.Record
	burned bool
}

// refusalSpendsZxid reports whether ZooKeeper 3.8 spends a zxid when it
// refuses a request of op before the log: it starts these writes'
// transactions before it reads their bodies.
func refusalSpendsZxid(op jute.OpCode) bool {
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpDelete,
		jute.OpSetData, jute.OpSetACL, jute.OpCheck, jute.OpMulti:
		return true
	}
	return false
}

// refuse queues the answer to request h (req, as far as it decoded) that
// the reader refused with r. A write that spends a zxid is proposed as a
// failed write; anything else is answered with the last zxid. Called by
// the reader goroutine.
func (c *conn) refuse(h jute.RequestHeader, req jute.Record, r refusal, now time.Time) {
	if !refusalSpendsZxid(h.Type) {
		c.enqueue(&pending{kind: kindReply, xid: h.Xid, op: h.Type, received: now,
			frame: errorFrame(h.Xid, c.s.node.LastZxid(), r.code, r.body)})
		return
	}
	ids := c.authIDs()
	t := txnlog.Failed(&txnlog.Txn{RequestID: c.s.node.NewRequestID(),
		Tree: datatree.Txn{Type: h.Type, SessionID: c.sessionID.Load(), Request: req, IDs: ids}}, r.code)
	c.enqueue(&pending{kind: kindWrite, xid: h.Xid, op: h.Type, req: req, txn: t, ids: ids, received: now, refused: &r})
}

// refusedReply is the reply of a refused write whose failed transaction
// the log answered with (zxid, code): the refusal's body beside the code,
// and for a burned refusal the zxid before the one it spent. A code other
// than the refusal's (the session expired meanwhile) gets a bare header.
func refusedReply(p *pending, zxid int64, code jute.Code) []byte {
	r := p.refused
	if code != r.code {
		return replyFrame(p.xid, zxid, code, nil)
	}
	if r.burned {
		zxid--
	}
	return errorFrame(p.xid, zxid, code, r.body)
}

package server

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
)

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

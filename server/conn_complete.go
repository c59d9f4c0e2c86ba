package server

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
)

// completeLoop is the completer goroutine: it takes the pipeline's items
// one at a time and turns each into its reply, strictly in order, until
// the reader's nil item.
func (c *conn) completeLoop() {
	defer c.pl.out.close()
	defer c.recoverCompleter()
	for p := range c.pl.queue {
		if p == nil {
			return // the reader is done (serve)
		}
		c.completeOne(p)
	}
}

// completeOne replies to one pipeline item and, when the item was a
// blocker, lets the writes that waited for it be proposed; the item stops
// counting as outstanding even when completing it panics.
func (c *conn) completeOne(p *pending) {
	defer c.finished(p)
	c.reply(p, c.complete(p))
	if p.kind.blocks() {
		c.pl.blockerDone(p.kind)
	}
}

// reply queues p's reply frame on the pipeline (none when frame is nil:
// no reply, or queued already); a client that lets its replies pile up
// past outboxLimit is dropped.
func (c *conn) reply(p *pending, frame []byte) {
	if frame != nil {
		c.recordLatency(p, frame)
	}
	if !c.pl.out.answer(p.seq, frame) {
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
		return c.completeWrite(p)
	case kindSync:
		return c.completeSync(p)
	case kindReconfig:
		zxid, code, body := c.reconfigure(p.req.(*jute.ReconfigRequest), p.ids)
		return replyFrame(p.xid, zxid, code, body)
	default:
		return c.pl.reads.take(p, c.execRead)
	}
}

// completeWrite waits for a write's outcome and returns its reply frame
// (nil: the connection is closed instead).
func (c *conn) completeWrite(p *pending) []byte {
	if p.outcome == nil {
		// Every blocker before p has completed, so the pipeline proposed
		// it at the latest then (pipeline_order.go); this is a broken
		// invariant, not input.
		c.log.Warn("write reached the completer unproposed; closing", "op", p.op)
		c.abort("write not proposed")
		return nil
	}
	o, ok := c.awaitOutcome(p)
	if !ok {
		return nil
	}
	switch {
	case o.Err != nil:
		c.log.Warn("write not replicated; dropping connection", "op", p.op, "err", o.Err)
		c.abort("write outcome unknown")
		return nil
	case o.Result.Err == jute.SessionMoved:
		// As ZooKeeper does: the client has resumed its session on
		// another member; this connection is closed without a reply.
		c.abort("session moved to another member")
		return nil
	}
	c.auditWrite(p, o.Zxid, o.Result.Err)
	if p.refused != nil {
		return refusedReply(p, o.Zxid, o.Result.Err)
	}
	return replyFrame(p.xid, o.Zxid, o.Result.Err, o.Result.Response)
}

// completeSync waits until this member has applied what the leader had
// committed, and returns the sync's reply.
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

// recordLatency records an answered item in the server's and the
// connection's statistics.
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

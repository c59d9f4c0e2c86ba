package server

import (
	"time"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
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

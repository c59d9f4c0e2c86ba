package server

import (
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/txnlog"
)

// observer is the Server seen as replication's apply hook. Its methods run
// on the FSM goroutine: Applying before a transaction, with no lock held;
// Applied and Restored after, with the tree's write lock held (lock order:
// tree, then watch registry, then a connection's outbox), so they only
// queue work.
type observer Server

// Applying runs, before a write of a local connection is applied, that
// connection's reads queued before the write and not run yet
// (pipeline_early.go).
// The connection it finds is kept for Applied of the same transaction
// (s.applying), so the apply path looks it up once.
func (o *observer) Applying(txn *txnlog.Txn) {
	s := (*Server)(o)
	s.applying = applyingTxn{txn: txn}
	if txn.Owner != s.serverID {
		return
	}
	c := s.sessionConn(txn.Tree.SessionID)
	s.applying.conn = c
	if c != nil && txn.Tree.SessionID != 0 {
		c.pl.reads.runBefore(txn.RequestID, c.pl.out, c.execRead)
	}
}

// applyingTxn is the transaction the FSM is applying and its local
// connection (nil: none, or not this member's), set by Applying.
type applyingTxn struct {
	txn  *txnlog.Txn
	conn *conn
}

// ownConn returns the local connection of the transaction being applied,
// the one Applying found.
func (s *Server) ownConn(txn *txnlog.Txn) *conn {
	if s.applying.txn == txn {
		return s.applying.conn
	}
	if txn.Owner != s.serverID {
		return nil
	}
	return s.sessionConn(txn.Tree.SessionID)
}

// Applied delivers the transaction's watch events and keeps the expiry clock
// in step with the session table.
func (o *observer) Applied(txn *txnlog.Txn, zxid int64, res *datatree.Result) {
	s := (*Server)(o)
	if len(res.Events) > 0 {
		s.watches.Trigger(toWatchEvents(res.Events), zxid)
	}
	if c := s.ownConn(txn); c != nil {
		c.pl.out.markApplied(txn.RequestID)
	}
	switch txn.Tree.Type {
	case jute.OpCreateSession:
		s.tracker.Add(txn.Tree.SessionID, time.Duration(txn.Timeout)*time.Millisecond)
	case txnlog.OpSetConfig, txnlog.OpInitConfig:
		if text := appliedConfig(txn, res); text != nil {
			s.learnConfig(text)
		}
	case jute.OpCloseSession:
		s.tracker.Remove(txn.Tree.SessionID)
		if c := s.sessionConn(txn.Tree.SessionID); c != nil && !c.closeRequested.Load() {
			// Expired (or closed elsewhere): drop the connection without a
			// message, as ZooKeeper does.
			go c.abort("session closed")
		}
	}
}

// appliedConfig is the configuration text a reconfig (OpSetConfig: the
// node's new data is the Response) or the leader's seed of the
// configuration files (OpInitConfig, ensemble.go seedConfig: the request's
// text, set only while the node was empty) put in /zookeeper/config; nil
// when the transaction failed or set nothing.
func appliedConfig(txn *txnlog.Txn, res *datatree.Result) []byte {
	if res.Err != jute.OK {
		return nil
	}
	if r, ok := res.Response.(*jute.GetDataResponse); ok {
		return r.Data
	}
	if r, ok := txn.Tree.Request.(*jute.SetDataRequest); ok && txn.Tree.Type == txnlog.OpInitConfig {
		return r.Data
	}
	return nil
}

// Restored is called when a snapshot replaced the state; connections whose
// session no longer exists are closed, and so are those with early writes
// not applied (pipeline_early.go): the snapshot may hold such a write,
// and the reads queued before it must not see it. The expiry clock
// follows the new session table, as ZooKeeper's restore rebuilds its
// session tracker: sessions that are gone leave it, the restored ones get
// a full timeout.
func (o *observer) Restored() {
	s := (*Server)(o)
	if s.node == nil {
		return // the snapshot a member starts from: no client yet, and leadership starts the clocks
	}
	sessions := s.node.Sessions()
	for _, ids := range s.tracker.Buckets() {
		for _, id := range ids {
			if _, ok := sessions.Get(id); !ok {
				s.tracker.Remove(id)
			}
		}
	}
	s.restartSessionClocks()
	for _, c := range s.connections() {
		sid := c.sessionID.Load()
		if sid == 0 {
			continue
		}
		if _, ok := sessions.Get(sid); !ok {
			go c.abort("session gone after snapshot restore")
		} else if c.pl.reads.unapplied() {
			go c.abort("writes in flight replaced by a snapshot restore")
		}
	}
}

package mirror

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/txnlog"
)

// NewRequestID implements server.Replica: ids carry the server's id in
// their top byte, as replication's do.
func (r *Replica) NewRequestID() uint64 {
	return uint64(r.myID)<<56 | r.reqSeq.Add(1)&(1<<56-1)
}

// Submit implements server.Replica: it sends t to the ZooKeeper leader
// (see send) and returns the channel its outcome arrives on. While the
// Replica is frozen the transaction waits for Unfreeze.
func (r *Replica) Submit(t *txnlog.Txn) <-chan replication.Outcome {
	if t.Owner == 0 {
		// As replication.Node stamps it: the server's Applying runs the
		// reads its connection queued before an early write only for
		// transactions that name this server as their owner.
		t.Owner = r.myID
	}
	w := &waiter{txn: t, ch: make(chan replication.Outcome, 1)}
	r.sendMu.Lock()
	defer r.sendMu.Unlock()
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		w.ch <- replication.Outcome{Err: ErrReplicaClosed}
		return w.ch
	case r.frozen:
		r.held = append(r.held, w)
		r.mu.Unlock()
		return w.ch
	}
	r.mu.Unlock()
	r.send(w)
	return w.ch
}

// send forwards one transaction as a ZooKeeper observer forwards the
// request it stands for (Learner.request): createSession with its
// timeout as the body and no auth, closeSession with an empty body, any
// other write with its request record, each with the connection's ids.
// A session moving here is revalidated instead (Learner.validateSession);
// a write refused before the log (txnlog.Failed) is answered here, as
// ZooKeeper's leader would answer it, without spending a zxid. Called
// with sendMu held.
func (r *Replica) send(w *waiter) {
	t := w.txn
	switch t.Tree.Type {
	case txnlog.OpMoveSession:
		r.begin(w, false)
		go r.revalidate(w)
		return
	case txnlog.OpFailedWrite:
		code := jute.SystemError
		if f, ok := t.Tree.Request.(*txnlog.FailedWrite); ok {
			code = f.Err
		}
		w.ch <- replication.Outcome{Zxid: r.st.LastZxid(), Result: &datatree.Result{Err: code}}
		return
	case txnlog.OpSetConfig, txnlog.OpInitConfig:
		w.ch <- replication.Outcome{Err: fmt.Errorf("%w: %s", ErrNotSupported, t.Tree.Type)}
		return
	}
	op, body, auth := r.requestOf(t)
	up := r.begin(w, true)
	if up == nil {
		r.abandon(w, ErrLinkLost)
		return
	}
	if err := up.Request(w.key.session, w.key.cxid, int32(op), body, auth); err != nil {
		r.abandon(w, fmt.Errorf("%w: %w", ErrLinkLost, err))
	}
}

// requestOf returns the REQUEST's op code, body and auth ids for t.
func (r *Replica) requestOf(t *txnlog.Txn) (jute.OpCode, []byte, []jute.ID) {
	auth := t.Tree.IDs
	if auth == nil {
		auth = []jute.ID{}
	}
	switch t.Tree.Type {
	case jute.OpCreateSession:
		return t.Tree.Type, binary.BigEndian.AppendUint32(nil, uint32(t.Timeout)), nil
	case jute.OpCloseSession:
		return t.Tree.Type, nil, auth
	}
	var body []byte
	if t.Tree.Request != nil {
		body = jute.Encode(t.Tree.Request)
	}
	return t.Tree.Type, body, auth
}

// begin counts w as in flight and, when it is a request, gives it a cxid
// and lists it among the waiters; it returns the leader connection.
func (r *Replica) begin(w *waiter, request bool) Upstream {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy++
	w.gen = r.gen
	if !request {
		return r.up
	}
	w.key = waitKey{session: w.txn.Tree.SessionID}
	if w.txn.Tree.Type != jute.OpCreateSession { // ZooKeeper sends createSession with cxid 0
		r.cxid = r.cxid%math.MaxInt32 + 1
		w.key.cxid = r.cxid
	}
	if old, ok := r.waiters[w.key]; ok {
		// A second createSession of one id cannot be told apart: the
		// older one's fate is unknown.
		delete(r.waiters, w.key)
		r.busy--
		old.ch <- replication.Outcome{Err: ErrLinkLost}
	}
	r.waiters[w.key] = w
	return r.up
}

// abandon ends w, not sent, with err.
func (r *Replica) abandon(w *waiter, err error) {
	if r.remove(w) {
		w.ch <- replication.Outcome{Err: err}
	}
}

// revalidate asks the leader whether a session that moves here lives:
// OK when it does (the leader then takes this observer as its owner),
// SessionExpired when it does not; no zxid is spent.
func (r *Replica) revalidate(w *waiter) {
	defer r.finish()
	sid := w.txn.Tree.SessionID
	up := r.upstream()
	info, known := r.st.Sessions().Get(sid)
	if up == nil || !known {
		w.ch <- replication.Outcome{Zxid: r.st.LastZxid(), Result: &datatree.Result{Err: jute.SessionExpired}}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.revTO)
	defer cancel()
	valid, err := up.Revalidate(ctx, sid, info.Timeout)
	switch {
	case err != nil:
		w.ch <- replication.Outcome{Err: fmt.Errorf("%w: revalidate session %#x: %w", ErrLinkLost, sid, err)}
	case !valid:
		w.ch <- replication.Outcome{Zxid: r.st.LastZxid(), Result: &datatree.Result{Err: jute.SessionExpired}}
	default:
		w.ch <- replication.Outcome{Zxid: r.st.LastZxid(), Result: &datatree.Result{}}
	}
}

// finish ends one in-flight submit that has no waiter entry.
func (r *Replica) finish() {
	r.mu.Lock()
	r.busy--
	r.mu.Unlock()
}

// Sync implements server.Replica: ZooKeeper's sync through the leader
// (session 0, which the leader's session check refuses without failing
// the sync). When it returns, every transaction the leader had committed
// when it took the sync has been applied here.
func (r *Replica) Sync(ctx context.Context) error {
	up := r.upstream()
	if up == nil {
		return ErrLinkLost
	}
	r.mu.Lock()
	r.cxid = r.cxid%math.MaxInt32 + 1
	cxid := r.cxid
	r.mu.Unlock()
	if err := up.Sync(ctx, 0, cxid, "/", []jute.ID{}); err != nil {
		return fmt.Errorf("mirror: sync with the ZooKeeper leader: %w", err)
	}
	return nil
}

// Touch implements server.Replica: the sessions' ids and timeouts go to
// the leader with the next PING answer.
func (r *Replica) Touch(ids []int64) {
	up := r.upstream()
	if up == nil || len(ids) == 0 {
		return
	}
	sessions := r.st.Sessions()
	m := make(map[int64]int32, len(ids))
	for _, id := range ids {
		if info, ok := sessions.Get(id); ok {
			m[id] = info.Timeout
		}
	}
	up.Touch(m)
}

// Freeze holds every new Submit (they wait for Unfreeze; none fails),
// waits until those in flight have their outcome, and syncs with the
// ZooKeeper leader; it returns the zxid the state is then at. If it
// fails (ctx ends, the sync fails) the Replica is unfrozen again. Call
// Unfreeze to let the held transactions go.
func (r *Replica) Freeze(ctx context.Context) (lastZxid int64, err error) {
	r.sendMu.Lock()
	r.mu.Lock()
	r.frozen = true
	r.mu.Unlock()
	r.sendMu.Unlock()
	defer func() {
		if err != nil {
			r.Unfreeze()
		}
	}()
	if err := r.drain(ctx); err != nil {
		return 0, err
	}
	if err := r.Sync(ctx); err != nil {
		return 0, err
	}
	zxid := r.st.LastZxid()
	r.log.Info("mirror: frozen", "zxid", zxidString(zxid))
	return zxid, nil
}

// drain waits until no submit is in flight.
func (r *Replica) drain(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		busy := r.busy
		r.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mirror: freeze: %d requests still in flight: %w", busy, ctx.Err())
		case <-tick.C:
		}
	}
}

// Unfreeze sends the held transactions, in the order they came, and lets
// later ones go at once.
func (r *Replica) Unfreeze() {
	r.sendMu.Lock()
	defer r.sendMu.Unlock()
	r.mu.Lock()
	held := r.held
	r.held, r.frozen = nil, false
	r.mu.Unlock()
	for _, w := range held {
		r.send(w)
	}
	if len(held) > 0 {
		r.log.Info("mirror: unfrozen", "held", len(held))
	}
}

// Frozen reports whether Submits are held.
func (r *Replica) Frozen() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frozen
}

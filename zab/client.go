package zab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zkserverd/zkserverd/jute"
)

// Touch records sessions (id → timeout in ms) that clients used since the
// last call; the next PING answer reports them to the leader, which keeps
// them alive (ZooKeeper's touch table, Learner.ping). Later calls for the
// same id replace its timeout.
func (o *Observer) Touch(sessions map[int64]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, to := range sessions {
		o.touches[id] = to
	}
}

// takeTouches returns the touch table in a PING's layout (long id, int
// timeout, repeated) and empties it.
func (o *Observer) takeTouches() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := make([]byte, 0, 12*len(o.touches))
	for id, to := range o.touches {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint32(b, uint32(to))
		delete(o.touches, id)
	}
	return b
}

// serving returns the synced link, or ErrNotServing.
func (o *Observer) serving() (*link, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ctx.Err() != nil {
		return nil, ErrClosed
	}
	if o.link == nil || !o.link.serving {
		return nil, ErrNotServing
	}
	return o.link, nil
}

// Request forwards a client request to the leader as Learner.request
// does: a REQUEST packet (zxid -1) whose data is the session id, cxid,
// op code and the request's body, with auth as the packet's authinfo (nil
// is sent as the null vector, as ZooKeeper does for createSession; pass
// the connection's ids, non-nil, for requests whose ACLs the leader
// checks). The leader orders it and the outcome comes back as a
// transaction (Handler.Txn) whose header (ParseTxnHeader) carries
// sessionID and cxid: the result of the operation for a good request, an
// error txn for a failed one. Requests that write nothing (reads) do not
// come back. For sync use Sync.
func (o *Observer) Request(sessionID int64, cxid int32, op int32, body []byte, auth []jute.ID) error {
	if op == int32(jute.OpSync) {
		return errors.New("zab: send sync through Sync")
	}
	l, err := o.serving()
	if err != nil {
		return err
	}
	return o.writeTo(l, &Packet{Type: Request, Zxid: -1, Data: requestData(sessionID, cxid, op, body), AuthInfo: auth})
}

func requestData(sessionID int64, cxid int32, op int32, body []byte) []byte {
	data := make([]byte, 0, 16+len(body))
	data = binary.BigEndian.AppendUint64(data, uint64(sessionID))
	data = binary.BigEndian.AppendUint32(data, uint32(cxid))
	data = binary.BigEndian.AppendUint32(data, uint32(op))
	return append(data, body...)
}

// Sync forwards a client's sync (path) to the leader and returns once the
// leader's SYNC answer has arrived: every transaction the leader had
// committed when it took the sync has then reached the Handler.
func (o *Observer) Sync(ctx context.Context, sessionID int64, cxid int32, path string, auth []jute.ID) error {
	l, err := o.serving()
	if err != nil {
		return err
	}
	var e jute.Encoder
	e.String(path)
	ch := make(chan error, 1)
	// The answers come in the order of the requests: queue and send under
	// the write lock so that the order of the queue is the order sent.
	p := &Packet{Type: Request, Zxid: -1, Data: requestData(sessionID, cxid, int32(jute.OpSync), e.Bytes()), AuthInfo: auth}
	if err := o.send(l, p, func() {
		o.mu.Lock()
		l.pendingSyncs = append(l.pendingSyncs, ch)
		o.mu.Unlock()
	}); err != nil {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// syncDone answers the oldest pending Sync.
func (o *Observer) syncDone() {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.link
	if l == nil || len(l.pendingSyncs) == 0 {
		o.log.Warn("zab: SYNC answer with no sync pending")
		return
	}
	l.pendingSyncs[0] <- nil
	l.pendingSyncs = l.pendingSyncs[1:]
}

// Revalidate asks the leader whether session sessionID (timeout in ms) is
// still alive, as a learner does when a client reconnects with that
// session (Learner.validateSession). A valid session is then owned by this
// observer's connection, so the leader accepts its requests from it.
func (o *Observer) Revalidate(ctx context.Context, sessionID int64, timeoutMs int32) (bool, error) {
	l, err := o.serving()
	if err != nil {
		return false, err
	}
	ch := make(chan bool, 1)
	o.mu.Lock()
	l.revalidates[sessionID] = append(l.revalidates[sessionID], ch)
	o.mu.Unlock()
	data := binary.BigEndian.AppendUint64(nil, uint64(sessionID))
	data = binary.BigEndian.AppendUint32(data, uint32(timeoutMs))
	if err := o.writeTo(l, &Packet{Type: Revalidate, Zxid: -1, Data: data}); err != nil {
		return false, err
	}
	select {
	case valid, ok := <-ch:
		if !ok {
			return false, ErrDisconnected
		}
		return valid, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// revalidated delivers a REVALIDATE answer (long session id, boolean
// valid) to the oldest Revalidate of that session.
func (o *Observer) revalidated(l *link, data []byte) error {
	if len(data) < 9 {
		return fmt.Errorf("zab: REVALIDATE answer of %d bytes", len(data))
	}
	id := int64(binary.BigEndian.Uint64(data))
	valid := data[8] != 0
	o.mu.Lock()
	defer o.mu.Unlock()
	chs := l.revalidates[id]
	if len(chs) == 0 {
		o.log.Warn("zab: REVALIDATE answer for no pending session", "session", fmt.Sprintf("0x%x", id))
		return nil
	}
	chs[0] <- valid
	if len(chs) == 1 {
		delete(l.revalidates, id)
	} else {
		l.revalidates[id] = chs[1:]
	}
	return nil
}

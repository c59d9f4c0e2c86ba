package server

import (
	"sync"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/watch"
)

var _ watch.Watcher = (*conn)(nil)

// ID implements watch.Watcher: the connection's session id.
func (c *conn) ID() int64 { return c.sessionID.Load() }

// notificationZxid is the zxid written in a notification's header. ZooKeeper
// 3.8 always writes -1 (3.9 writes the triggering zxid); the captured 3.8
// frames are the reference, and clients ignore the field.
const notificationZxid = -1

// Notify implements watch.Watcher. It runs on the FSM goroutine under the
// tree's write lock and never blocks: it queues the notification on the
// connection's pipeline (pipeline_out.go), whose writer sends it, and a
// client that lets notifications pile up is dropped.
func (c *conn) Notify(ev jute.WatcherEvent, _ int64) {
	if c.pl.out.pushEvent(c.s.notifications.encode(ev)) {
		return
	}
	// Closing the outbox at once turns every later push into a no-op, so
	// the rest of this transaction's events (and later ones) neither queue
	// nor count the client again; the socket is closed from another
	// goroutine, as Notify must not block.
	c.pl.out.close()
	c.s.stats.slowDisconnects.Add(1)
	go c.abort("too many undelivered notifications (slow client)")
}

// notificationFrames encodes a notification once for all the connections
// it goes to: an event's frame is the same for every watcher, and fan-out
// to many watchers calls Notify for one event many times in a row. Frames
// are shared and never modified. mu guards the last event and its frame.
type notificationFrames struct {
	mu    sync.Mutex
	ev    jute.WatcherEvent
	frame []byte
}

// encode returns ev's notification frame, the last one's when ev is the
// same event.
func (n *notificationFrames) encode(ev jute.WatcherEvent) []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.frame == nil || n.ev != ev {
		h := jute.ReplyHeader{Xid: jute.XidNotification, Zxid: notificationZxid, Err: jute.OK}
		n.ev, n.frame = ev, jute.AppendFrame(nil, &h, &ev)
	}
	return n.frame
}

// toWatchEvents converts a transaction's events for the watch registry.
func toWatchEvents(evs []datatree.Event) []watch.Event {
	out := make([]watch.Event, len(evs))
	for i, e := range evs {
		out[i] = watch.Event{Type: e.Type, Path: e.Path}
	}
	return out
}

// maxWatchedReadTries bounds how often a watched read is redone because a
// write changed the node between the read and the registration.
const maxWatchedReadTries = 100

// execWatching answers the requests that register watches: exists, getData
// and getChildren[2] with watch=true, addWatch and setWatches[2]. A client
// registers its watcher when the reply arrives, so the reply must be queued
// before any notification the new watch can produce (ZooKeeper never
// applies a write while a read is being answered). Here the watch is
// registered and the reply queued together under the tree's read lock,
// which holds writes, and so their notifications, off; frame is then nil.
// handled is false for every other request.
func (c *conn) execWatching(p *pending) (frame []byte, handled bool) {
	switch r := p.req.(type) {
	case *jute.PathWatchRequest:
		if !r.Watch {
			return nil, false
		}
		return c.watchedRead(p, r), true
	case *jute.AddWatchRequest:
		kind, ok := watch.KindForMode(r.Mode)
		if !ok {
			return replyFrame(p.xid, c.s.node.LastZxid(), jute.MarshallingError, nil), true
		}
		c.s.node.Tree().View(func(func(string) (jute.Stat, bool)) {
			c.s.watches.Add(c, r.Path, kind)
			c.queueReply(p, jute.OK, &jute.IntResponse{Value: 0})
		})
		return nil, true
	case *jute.SetWatches:
		c.setWatches(p, &jute.SetWatches2{RelativeZxid: r.RelativeZxid, DataWatches: r.DataWatches,
			ExistWatches: r.ExistWatches, ChildWatches: r.ChildWatches})
		return nil, true
	case *jute.SetWatches2:
		c.setWatches(p, r)
		return nil, true
	}
	return nil, false
}

// watchedRead answers exists/getData/getChildren[2] with watch=true. It
// reads without a watch, then, under the tree's read lock, checks that the
// node's Stat is still the one read (every change to the node's data,
// children or ACL moves it); if so it registers the watch and queues the
// reply there and returns nil, else it reads again. A result that sets no
// watch (NoNode other than exists', NoAuth, BadArguments) is returned as a
// frame.
func (c *conn) watchedRead(p *pending, r *jute.PathWatchRequest) []byte {
	for range maxWatchedReadTries {
		code, body, st := c.readPath(p.op, r.Path, p.ids, nil)
		if code != jute.OK && (code != jute.NoNode || p.op != jute.OpExists) {
			return replyFrame(p.xid, c.s.node.LastZxid(), code, nil)
		}
		queued := false
		c.s.node.Tree().View(func(lookup func(string) (jute.Stat, bool)) {
			now, exists := lookup(r.Path)
			if exists != (code == jute.OK) || now != st {
				return // a write came in between
			}
			c.s.watches.Add(c, r.Path, readWatchKind(p.op, exists))
			c.queueReply(p, code, body)
			queued = true
		})
		if queued {
			return nil
		}
	}
	// The node keeps changing: register during the read instead (the reply
	// may then follow the new watch's first event).
	code, body := c.read(p)
	return replyFrame(p.xid, c.s.node.LastZxid(), code, body)
}

// readWatchKind is the kind of watch a read op registers.
func readWatchKind(op jute.OpCode, exists bool) watch.Kind {
	switch {
	case op == jute.OpGetData:
		return watch.Data
	case op == jute.OpExists && exists:
		return watch.Data
	case op == jute.OpExists:
		return watch.Exist
	}
	return watch.Child
}

// queueReply builds p's reply and queues it, or keeps it in p for the
// completer when p runs early (pipeline_early.go). Called under the
// tree's read lock, so the header zxid is that of the state the reply
// shows.
func (c *conn) queueReply(p *pending, code jute.Code, body jute.Record) {
	frame := replyFrame(p.xid, c.s.node.LastZxid(), code, body)
	if p.early {
		p.frame = frame
		return
	}
	c.reply(p, frame)
}

// watchCallback returns the registration callback of a read op with its
// watch flag, for the tree to call under its read lock (nil: no watch).
func (c *conn) watchCallback(op jute.OpCode, r *jute.PathWatchRequest) func(bool) {
	switch op {
	case jute.OpExists:
		return c.watchOnExists(r)
	case jute.OpGetData:
		return c.watchIfExists(r, watch.Data)
	}
	return c.watchIfExists(r, watch.Child)
}

// watchOnExists returns the registration callback of exists: a data watch
// when the node exists, an exist watch when it does not.
func (c *conn) watchOnExists(r *jute.PathWatchRequest) func(bool) {
	if !r.Watch {
		return nil
	}
	return func(exists bool) {
		if exists {
			c.s.watches.Add(c, r.Path, watch.Data)
		} else {
			c.s.watches.Add(c, r.Path, watch.Exist)
		}
	}
}

// watchIfExists returns a callback registering a watch of kind when the
// node exists (getData, getChildren).
func (c *conn) watchIfExists(r *jute.PathWatchRequest, kind watch.Kind) func(bool) {
	if !r.Watch {
		return nil
	}
	return func(exists bool) {
		if exists {
			c.s.watches.Add(c, r.Path, kind)
		}
	}
}

// watchOp handles removeWatches and checkWatches (addWatch and setWatches
// go through execWatching).
func (c *conn) watchOp(op jute.OpCode, req jute.Record) (jute.Code, jute.Record) {
	switch op {
	case jute.OpRemoveWatches, jute.OpCheckWatches:
		r := req.(*jute.WatchesRequest)
		if r.Type < jute.WatcherChildren || r.Type > jute.WatcherPersistentRecursive {
			return jute.MarshallingError, nil
		}
		if op == jute.OpRemoveWatches {
			return c.s.watches.Remove(c, r.Path, r.Type), nil
		}
		return c.s.watches.Check(c, r.Path, r.Type), nil
	}
	return jute.Unimplemented, nil
}

// setWatches re-arms a reconnected client's watches, firing those whose
// event it missed, and queues p's reply, atomically with respect to writes:
// the missed events come before the reply, new ones after it.
func (c *conn) setWatches(p *pending, r *jute.SetWatches2) {
	c.s.node.Tree().View(func(lookup func(string) (jute.Stat, bool)) {
		c.s.watches.SetWatches(c, r, func(path string) (bool, int64, int64) {
			st, ok := lookup(path)
			return ok, st.Mzxid, st.Pzxid
		})
		c.queueReply(p, jute.OK, nil)
	})
}
